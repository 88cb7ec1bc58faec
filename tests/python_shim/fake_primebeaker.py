#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""A stand-in `primebeaker` for the shim's protocol tests: `environments describe|resolve|list`
and `environments serve --stdio` with one toy tool environment, so the tests exercise the
shim's mechanics (multiplexing, ordering, amend/final, scoring bundle, crashes) without the real
environment logic. Every request it receives is appended to $FAKE_PB_LOG as one JSON line.

Toy rules: a tool call named `sleep` waits `arguments.seconds`; `crash` kills the child; calls
beyond args.max_tool_calls make `respond` amend the previous tool message with a warning and
end the rollout (`final`); an assistant message without tool calls stops the loop."""

import asyncio
import json
import os
import sys

MULTI = {"name": "toy", "module": "toy_env", "kind": "multi_turn", "max_turns": 8,
         "tool_defs": [{"name": "echo", "description": "Echo the text.",
                        "parameters": {"type": "object", "properties": {
                            "text": {"type": "string"}}, "required": ["text"]}}],
         "rewards": [{"name": "valid_final", "weight": 1.0}, {"name": "tool_use", "weight": 0.5}],
         "metrics": ["tool_calls"],
         "stops": [{"name": "route_stop", "priority": 50, "kind": "observe"},
                   {"name": "budget_exhausted", "priority": 75, "kind": "state",
                    "key": "toy_budget_exhausted"}],
         "cleanups": [{"name": "close_toy_session", "priority": 50}],
         "needs_setup": True,
         "dataset": {"sources": ["jsonl"], "split_column": "add"}}


def log(entry):
    path = os.environ.get("FAKE_PB_LOG")
    if path:
        with open(path, "a", encoding="utf-8") as handle:
            handle.write(json.dumps(entry) + "\n")


def describe(name, args):
    log({"argv": sys.argv[1:]})
    if name == "unknown-env":
        print("primebeaker: error: unknown environment 'unknown-env'", file=sys.stderr)
        return 3
    if "bogus" in args:
        print("primebeaker: error: --args: unknown argument 'bogus' for " + name, file=sys.stderr)
        return 3
    shape = dict(MULTI)
    if name in ("label", "reward-model", "multiple-choice-accuracy", "rubrichub-judge"):
        shape = {**MULTI, "kind": "single_turn", "tool_defs": [], "stops": [], "cleanups": [],
                 "needs_setup": False, "rewards": [{"name": "correct_label", "weight": 1.0}],
                 "metrics": []}
    shape["name"] = name
    shape["args"] = {"split": "train", "max_tool_calls": 2, **args}
    print(json.dumps(shape))
    return 0


class Server:
    def __init__(self):
        self.sessions = {}
        self.out = sys.stdout.buffer

    def reply(self, request_id, **fields):
        self.out.write(json.dumps({"id": request_id, **fields}).encode() + b"\n")
        self.out.flush()

    async def handle(self, request):
        log(request)
        rid, op = request["id"], request["op"]
        try:
            result = await getattr(self, "op_" + op)(request)
            self.reply(rid, ok=True, **result)
        except KeyError as error:
            self.reply(rid, ok=False, error={"kind": "unknown_session", "message": str(error)})

    async def op_hello(self, request):
        return {"protocol": int(os.environ.get("FAKE_PB_PROTOCOL", "1")), "server": "fake"}

    async def op_open(self, request):
        self.sessions[request["session"]] = {"args": request["args"], "calls": 0, "route": None,
                                             "pending": [], "row": request["row"]}
        return {"state": {"toy_opened": True}}

    async def op_observe(self, request):
        if "env" in request:
            await self.op_open(request)
        session = self.sessions[request["session"]]
        calls = request["message"].get("tool_calls") or []
        session["pending"] = calls
        session["route"] = "tool" if calls else "final"
        return {"stop": not calls, "route": session["route"], "state": {"toy_route": session["route"]}}

    async def op_respond(self, request):
        session = self.sessions[request["session"]]
        calls = session["pending"]
        for call in calls:
            if call["name"] == "crash":
                os._exit(3)
            if call["name"] == "sleep":
                await asyncio.sleep(json.loads(call["arguments"]).get("seconds", 0))
        budget = session["args"]["max_tool_calls"]
        if session["calls"] + len(calls) > budget:
            return {"messages": [], "amend_last_tool": "You are out of tool calls.", "final": True,
                    "state": {"toy_budget_exhausted": True}}
        session["calls"] += len(calls)
        messages = [{"role": "tool", "tool_call_id": c["id"], "name": c["name"],
                     "content": "ran " + c["name"] + " " + c["arguments"]} for c in calls]
        return {"messages": messages, "amend_last_tool": None, "final": False,
                "state": {"toy_calls": session["calls"]}}

    async def op_close(self, request):
        self.sessions[request["session"]]["closed"] = True
        return {"state": {"toy_closed": True}}

    async def op_release(self, request):
        self.sessions.pop(request["session"], None)
        return {}

    async def op_score(self, request):
        session = self.sessions.get(request["session"], {"calls": 0, "route": None})
        completion = request["completion"] or []
        last = completion[-1].get("content") if completion else None
        valid = 1.0 if session.get("route") == "final" or request.get("row") and last == \
            request.get("answer") else 0.0
        return {"values": {"valid_final": valid, "tool_use": float(session["calls"]),
                           "tool_calls": float(session["calls"]),
                           "correct_label": 1.0 if last == request.get("answer") else 0.0},
                "metrics": {"toy_extra": 7.0}, "info_update": {"toy_scored": True}}


async def serve():
    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader(limit=1 << 28)
    await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), sys.stdin)
    server = Server()
    tasks = set()
    while True:
        line = await reader.readline()
        if not line:
            break
        task = asyncio.ensure_future(server.handle(json.loads(line)))
        tasks.add(task)
        task.add_done_callback(tasks.discard)
    log({"eof": True})


def main():
    args = sys.argv[1:]
    if args[:2] == ["environments", "describe"]:
        return describe(args[2], json.loads(args[args.index("--args") + 1]))
    if args[:2] == ["environments", "resolve"]:
        print(f"primebeaker.environments.{args[2].replace('-', '_')}_env:load_environment")
        return 0
    if args[:3] == ["environments", "serve", "--stdio"]:
        asyncio.run(serve())
        return 0
    print("fake primebeaker: unexpected " + " ".join(args), file=sys.stderr)
    return 97


if __name__ == "__main__":
    sys.exit(main())
