# SPDX-License-Identifier: MIT
"""A Verifiers v1 rollout for the tests, in the order verifiers' `Rollout` runs one (a60a606e):
task setup, the harness against an interception endpoint, task finalize, scoring (skipped when
the run failed, kept when it stopped), harness cleanup. The interception is a small HTTP server
on the test's loop: it checks the bearer secret, refuses a turn once a limit or a task `@stop`
fires (400, `rollout stopped: NAME`, the stop recorded on the trace), records each request's
messages and the scripted answer as trace nodes, and answers `/v1/chat/completions`."""

import asyncio
import json
import secrets

from shim_paths import vf_v1 as vf  # noqa: F401 (sets sys.path first)


class FakeInterception:
    def __init__(self):
        self.sessions = {}
        self.requests = []
        self.server = None

    async def __aenter__(self):
        self.server = await asyncio.start_server(self._serve, "127.0.0.1", 0)
        port = self.server.sockets[0].getsockname()[1]
        self.endpoint = f"http://127.0.0.1:{port}/v1"
        return self

    async def __aexit__(self, *exc):
        self.server.close()
        await self.server.wait_closed()

    def register(self, trace, task, replies, max_turns=None):
        secret = secrets.token_hex(8)
        self.sessions[secret] = {"trace": trace, "task": task, "replies": list(replies),
                                 "max_turns": max_turns}
        return secret

    async def _serve(self, reader, writer):
        try:
            head = await reader.readuntil(b"\r\n\r\n")
            lines = head.decode("latin-1").split("\r\n")
            method, path, _ = lines[0].split(" ", 2)
            headers = {k.strip().lower(): v.strip() for k, v in
                       (line.split(":", 1) for line in lines[1:] if ":" in line)}
            body = await reader.readexactly(int(headers.get("content-length", "0")))
            status, answer = await self._handle(method, path, headers, body)
            payload = json.dumps(answer).encode()
            writer.write(f"HTTP/1.1 {status} X\r\nContent-Type: application/json\r\n"
                         f"Content-Length: {len(payload)}\r\nConnection: close\r\n\r\n"
                         .encode() + payload)
            await writer.drain()
        finally:
            writer.close()

    async def _handle(self, method, path, headers, body):
        session = self.sessions.get(headers.get("authorization", "").removeprefix("Bearer "))
        if session is None:
            return 401, {"error": {"message": "unauthorized"}}
        if method != "POST" or path != "/v1/chat/completions":
            return 404, {"error": {"message": f"no route {path}"}}
        request = json.loads(body)
        self.requests.append(request)
        trace, task = session["trace"], session["task"]
        refused = trace.stop_condition
        if refused is None and session["max_turns"] and trace.num_turns >= session["max_turns"]:
            refused = "max_turns"
        if refused is None:
            for stop in task.hooks("stop"):
                # Stops get their arguments by annotation there (Request, Response, Trace).
                if await vf.invoke(stop, {vf.Trace: trace}):
                    refused = stop.__name__
                    break
        if refused is not None:
            trace.stop(refused)
            return 400, {"error": {"message": f"rollout stopped: {refused}"}}
        if not session["replies"]:
            return 500, {"error": {"message": "the script has no more replies"}}
        reply = session["replies"].pop(0)
        parent = self._record(trace, request["messages"])
        trace.nodes.append(vf.MessageNode(vf.parse_message(reply), parent, sampled=True))
        trace.calls.append({"finish_reason": "stop", "error": None})
        message = dict(reply)
        if message.get("tool_calls"):
            message["tool_calls"] = [{"id": c["id"], "type": "function", "function": {
                "name": c["name"], "arguments": c["arguments"]}} for c in reply["tool_calls"]]
        return 200, {"id": "c", "object": "chat.completion", "model": request["model"],
                     "choices": [{"index": 0, "message": message, "finish_reason": "stop"}],
                     "usage": {"prompt_tokens": 10, "completion_tokens": 5}}

    @staticmethod
    def _record(trace, messages):
        """Reuses the nodes of a known prefix; a changed message starts a new branch."""
        parent = None
        for raw in messages:
            message = vf.parse_message(raw)
            child = next((i for i, node in enumerate(trace.nodes) if node.parent == parent
                          and node.message.model_dump() == message.model_dump()), None)
            if child is None:
                trace.nodes.append(vf.MessageNode(message, parent, sampled=False))
                child = len(trace.nodes) - 1
            parent = child
        return parent


async def run_rollout(interception, task, harness, replies, model="m", max_turns=None,
                      max_output_tokens=None):
    agent = vf.AgentConfig(model=model, harness=harness.config, max_turns=max_turns,
                           max_output_tokens=max_output_tokens, sampling=vf.SamplingConfig())
    trace = vf.Trace(task=vf.TraceTask(type=type(task).__name__, data=task.data),
                     agent=vf.AgentInfo(config=agent))
    trace.ok = True
    secret = interception.register(trace, task, replies, max_turns)
    ctx = vf.ModelContext(model=model, sampling=agent.sampling)
    try:
        async with vf.boundary(vf.TaskError, f"task {type(task).__name__} setup"):
            await vf.invoke(task.setup, {"trace": trace, "runtime": None})
        await harness.setup(None)
        await harness.run(ctx, trace, None, interception.endpoint, secret, {}, task.data)
        if trace.ok:
            trace.stop("agent_completed")
    except Exception as error:  # noqa: BLE001 - the rollout records every failure
        trace.record_error(error)
    try:
        async with vf.boundary(vf.TaskError, f"task {type(task).__name__} finalize"):
            await task.finalize(trace, None)
        if trace.ok:
            await task.score(trace, None)
    except Exception as error:  # noqa: BLE001
        trace.record_error(error)
    finally:
        await harness.cleanup(trace, None)
    return trace
