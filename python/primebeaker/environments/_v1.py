# SPDX-License-Identifier: MIT
"""The Verifiers v1 side (Prime-RL v0.9): a Taskset, its Task and an in-process Harness whose
work is done by the same primebeaker child as the v0 shim. The top-level `primebeaker_*`
modules subclass these per catalog entry; docs/environments-runtime.md says what goes where.

- `Taskset.__init__` asks `describe` once (a bad argument fails there, with the binary's
  message); `load()` turns the rows into tasks whose data carries the catalog name and the
  validated arguments, so an env-server rebuilds the same task from the wire alone.
- `Task.setup` opens the session when the environment needs it (Podman), `finalize` closes it,
  `score` sends one `score` and records every reward with its weight from `describe`.
- The harness runs the model loop in process (model calls go through the interception
  endpoint, as v1 requires): each turn is `observe`d against the stops and answered by
  `respond`, batch by batch, exactly as the v0 shim does. Its `cleanup` releases the session.
"""

import asyncio
import json
import logging
import urllib.error
import urllib.parse
import urllib.request
from typing import Any

import verifiers.v1 as vf

from . import _binary, _rows, _wire
from ._child import ChildError

log = logging.getLogger("primebeaker.environments")

# The info keys the adapter writes on a trace: the engine's mirrored session state (counters,
# routes, podman_*) and the messages of a final env response (sent to no model, but scored).
STATE_KEY = "primebeaker_state"
FINAL_KEY = "primebeaker_final_env_response"

_ROW_FIELDS = ("prompt", "answer", "info", "example_id")
_shapes = {}
_opened = set()
_bundles = {}


class PrimebeakerError(RuntimeError):
    """A request the primebeaker child refused or could not answer. Plain, as v1 wants from
    extension code: its boundaries classify it (HarnessError, TaskError)."""


# -------------------------------------------------------------------------------- describe

def _key(name, args):
    return name, json.dumps(args, sort_keys=True)


def shape_of(name, args):
    """`describe` for (name, args), once per process; also cached under the validated args,
    which are what a task carries."""
    shape = _shapes.get(_key(name, args))
    if shape is None:
        shape = _binary.describe(name, args)
        _shapes[_key(name, args)] = shape
        _shapes[_key(name, shape["args"])] = shape
    return shape


def _data_shape(data):
    return shape_of(data.env, data.args)


# ------------------------------------------------------------------------------- task data

class PrimebeakerData(vf.TaskData):
    env: str = ""
    """Catalog name (`primebeaker environments list`)."""
    args: dict[str, Any] = {}
    """The arguments as `describe` validated them, defaults filled in."""
    answer: Any = None
    info: dict[str, Any] = {}
    example_id: int | None = None
    columns: dict[str, Any] = {}
    """The row's other columns (split, src_id, ...), sent back to the engine with the row."""


def row_of(data):
    """The row as the engine's `open`/`score` expect it (the v0 shim sends Verifiers' input)."""
    return {**data.columns, "prompt": _wire.jsonable(data.prompt), "answer": data.answer,
            "info": data.info, "example_id": data.example_id}


def task_data(name, shape, index, row):
    """One row as task data, formatted as Verifiers v0 formats a dataset row."""
    row = dict(row)
    prompt = row.pop("prompt", None)
    question = row.pop("question", None)
    if prompt is None and question is not None:
        prompt = [{"role": "user", "content": str(question)}]
    info = row.pop("info", None)
    if isinstance(info, str):
        info = json.loads(info) if info.strip() else {}
    example_id = row.pop("example_id", None)
    if example_id is not None and not isinstance(example_id, int):
        row["src_id"], example_id = example_id, None
    return PrimebeakerData(idx=index, prompt=prompt, env=name, args=shape["args"],
                           answer=row.pop("answer", ""), info=info or {},
                           example_id=index if example_id is None else example_id,
                           columns=_wire.jsonable(row))


# -------------------------------------------------------------------------------- requests

async def _call(session, op, locked=True, **fields):
    try:
        return await _wire.call(session, op, locked=locked, **fields)
    except ChildError as error:
        raise PrimebeakerError(f"primebeaker environments {op}: {error.message}") from None


def _sampling(trace):
    agent = getattr(trace, "agent", None)
    return _wire.jsonable(getattr(getattr(agent, "config", None), "sampling", None))


def _open_fields(data, trace):
    return {"env": data.env, "args": data.args, "row": row_of(data),
            "sampling_args": _sampling(trace)}


def _implicit_open(data, trace):
    """The first request of a session not opened in setup carries what `open` would."""
    if trace.id in _opened:
        return {}
    _opened.add(trace.id)
    return _open_fields(data, trace)


def _merge(trace, reply):
    state = reply.get("state") or {}
    if state:
        trace.info.setdefault(STATE_KEY, {}).update(_wire.jsonable(state))


def _split(messages):
    """(prompt, completion): the leading messages before the first assistant message."""
    for index, message in enumerate(messages):
        if message.get("role") == "assistant":
            return messages[:index], messages[index:]
    return messages, []


def _cache_salt(sampling):
    extra = sampling.get("extra_body") if isinstance(sampling, dict) else None
    return extra.get("cache_salt") if isinstance(extra, dict) else None


async def _request_score(data, trace):
    prompt, completion = _split([_wire.jsonable(m) for m in trace.messages])
    completion += trace.info.get(FINAL_KEY) or []
    error = trace.errors[-1] if trace.errors else None
    return await _call(
        trace.id, "score", env=data.env, args=data.args, row=row_of(data),
        prompt=prompt or _wire.jsonable(data.prompt), completion=completion,
        answer=data.answer, info=data.info, is_truncated=bool(trace.is_truncated),
        stop_condition=trace.stop_condition,
        error=None if error is None else {"type": error.type, "message": error.message},
        trajectory_id=trace.id, example_id=data.example_id,
        cache_salt=_cache_salt(_sampling(trace)))


# ------------------------------------------------------------------------------------ task

class PrimebeakerTask(vf.Task[PrimebeakerData, vf.State, vf.TaskConfig]):
    async def setup(self, trace, runtime=None):
        if (await asyncio.to_thread(_data_shape, self.data)).get("needs_setup"):
            reply = await _call(trace.id, "open", **_open_fields(self.data, trace))
            _opened.add(trace.id)
            _merge(trace, reply)

    async def finalize(self, trace, runtime=None):
        if trace.id not in _opened or not _data_shape(self.data).get("cleanups"):
            return
        try:
            _merge(trace, await _call(trace.id, "close", locked=False))
        except PrimebeakerError as error:
            # Closing must not fail the rollout; a lost child already closed its sessions.
            log.warning("primebeaker: closing session %s failed: %s", trace.id, error)

    async def score(self, trace, runtime=None):
        try:
            await super().score(trace, runtime)
        finally:
            _bundles.pop(trace.id, None)

    def hooks(self, attr):
        """The task's own hooks plus, for rewards and metrics, one function per name that
        `describe` lists: all of them read one `score` reply, so one round trip scores the
        rollout and Verifiers still applies the weights."""
        own = super().hooks(attr)
        if attr == "reward":
            shape = _data_shape(self.data)
            return [*(self._reward(r["name"], float(r["weight"])) for r in shape["rewards"]),
                    *own]
        if attr == "metric":
            return [self._metrics(), *own]
        if attr == "stop" and _data_shape(self.data).get("kind") == "single_turn":
            return [vf.stop(single_turn), *own]
        return own

    async def _bundle(self, trace):
        future = _bundles.get(trace.id)
        if future is None:
            future = asyncio.ensure_future(_request_score(self.data, trace))
            _bundles[trace.id] = future
        return await asyncio.shield(future)

    def _reward(self, name, weight):
        async def reward(trace: vf.Trace) -> float:
            return float((await self._bundle(trace))["values"].get(name, 0.0))

        reward.__name__ = reward.__qualname__ = name
        return vf.reward(reward, weight=weight)

    def _metrics(self):
        names = _data_shape(self.data).get("metrics", [])

        async def primebeaker_metrics(trace: vf.Trace) -> dict:
            bundle = await self._bundle(trace)
            trace.info.update(bundle.get("info_update") or {})
            values = {name: float(bundle["values"].get(name, 0.0)) for name in names}
            values.update(bundle.get("metrics") or {})
            return values

        return vf.metric(primebeaker_metrics)


async def single_turn(trace: vf.Trace) -> bool:
    # Verifiers v0's SingleTurnEnv is max_turns=1: refuse a second model call. The annotation
    # is how v1's interception hands a stop its argument.
    return trace.num_turns >= 1


# --------------------------------------------------------------------------------- taskset

class PrimebeakerTasksetConfig(vf.TasksetConfig):
    args: dict[str, Any] = {}
    """The environment's arguments (`primebeaker environments show NAME`), `dataset` too."""


class PrimebeakerTaskset(vf.Taskset[PrimebeakerTask, PrimebeakerTasksetConfig]):
    ENV = ""
    """The catalog name; each top-level module's subclass sets it."""

    def __init__(self, config):
        super().__init__(config)
        # Validates the arguments now, in every process that builds the taskset (orchestrator
        # and env-server workers alike): a bad one is a ValueError with the binary's message.
        self.shape = shape_of(self.ENV, dict(config.args))

    def load(self):
        for index, row in enumerate(_rows.iter_rows(self.shape["dataset"], self.shape["args"])):
            yield PrimebeakerTask(task_data(self.ENV, self.shape, index, row), self.config.task)


# --------------------------------------------------------------------------------- harness

class PrimebeakerHarnessConfig(vf.HarnessConfig):
    request_timeout: float = 600.0
    """Seconds one model call may take."""


class PrimebeakerHarness(vf.Harness[PrimebeakerHarnessConfig]):
    """The model loop in process: tools from `describe`, each turn `observe`d for the stops and
    answered by `respond`. Model calls go through the interception endpoint, so the trace
    records every turn as it would for a program."""

    APPENDS_SYSTEM_PROMPT = True
    EXECUTES_CODE = False  # the engine runs the tools (Podman in its own containers)
    NEEDS_CONTAINER = False

    async def launch(self, ctx, trace, runtime, endpoint, secret, mcp_urls, data):
        await _Loop(self, ctx, trace, endpoint, secret, data).run()
        return vf.ProgramResult(exit_code=0, stdout="", stderr="")

    async def cleanup(self, trace, runtime=None):
        if trace.id not in _opened:
            return
        _opened.discard(trace.id)
        try:
            await _call(trace.id, "release", locked=False)
        except PrimebeakerError as error:
            log.warning("primebeaker: releasing session %s failed: %s", trace.id, error)


class _Loop:
    """One rollout, in Verifiers v0's order (the engine's rules assume it): the stops by
    descending priority, then `respond`, then the model."""

    def __init__(self, harness, ctx, trace, endpoint, secret, data):
        self.harness, self.ctx, self.trace, self.data = harness, ctx, trace, data
        self.url = endpoint.rstrip("/") + "/chat/completions"
        self.secret = secret
        self.messages = []
        self.turn = 0
        self.completion_tokens = None

    async def run(self):
        shape = await asyncio.to_thread(_data_shape, self.data)
        self.shape = shape
        self.stops = sorted(shape.get("stops", []), key=lambda s: (-s.get("priority", 0),
                                                                    s["name"]))
        self.tools = [{"type": "function", "function": t} for t in shape.get("tool_defs") or []]
        system, prompt = self.harness.resolve_prompt(self.data)
        if system:
            self.messages.append({"role": "system", "content": system})
        if isinstance(prompt, str):
            self.messages.append({"role": "user", "content": prompt})
        else:
            self.messages.extend(_wire.jsonable(prompt or []))
        while True:
            stop = await self._stop()
            if stop:
                self.trace.stop(stop)
                return
            if self.turn > 0 and await self._respond():
                self.trace.stop("has_final_env_response")
                return
            if not await self._model_turn():
                return

    async def _stop(self):
        state = self.trace.info.get(STATE_KEY) or {}
        for stop in self.stops:
            if stop.get("kind") == "state":
                if state.get(stop["key"]):
                    return stop["name"]
            elif self.turn > 0 and await self._observe():
                return stop["name"]
        max_turns = self.shape.get("max_turns", -1)
        if max_turns is not None and 0 < max_turns <= self.turn:
            return "max_turns"
        return None

    async def _observe(self):
        message = self.messages[-1]
        calls = [{"id": c.get("id"), "name": c["function"]["name"],
                  "arguments": c["function"].get("arguments") or ""}
                 for c in message.get("tool_calls") or []]
        reply = await _call(self.trace.id, "observe", **_implicit_open(self.data, self.trace),
                            turn=self.turn, message={
                                "content": message.get("content"),
                                "reasoning_content": message.get("reasoning_content"),
                                "tool_calls": calls})
        _merge(self.trace, reply)
        return bool(reply.get("stop"))

    async def _respond(self):
        """Sends the turn's tool calls to the engine; true when its answer is final."""
        agent_config = getattr(getattr(self.trace, "agent", None), "config", None)
        reply = await _call(
            self.trace.id, "respond", **_implicit_open(self.data, self.trace), turn=self.turn,
            trajectory_len=self.turn, max_turns=self.shape.get("max_turns", -1),
            completion_tokens=self.completion_tokens,
            max_total_completion_tokens=getattr(agent_config, "max_output_tokens", None))
        _merge(self.trace, reply)
        if reply.get("amend_last_tool"):
            # The next request carries the amended message, as the v0 shim's shared history
            # does; the trace records it as a branch from the original.
            _wire.amend_last_tool(self.messages, reply["amend_last_tool"])
        out = [{k: v for k, v in m.items() if v is not None} for m in reply.get("messages", [])]
        if reply.get("final"):
            self.trace.info[FINAL_KEY] = out
            return True
        self.messages.extend(out)
        return False

    async def _model_turn(self):
        body = {"model": self.ctx.model, "messages": self.messages}
        if self.tools:
            body["tools"] = self.tools
        status, answer = await asyncio.to_thread(
            _post, self.url, self.secret, body, self.harness.config.request_timeout)
        if status != 200:
            if self.trace.stop_condition is not None:
                return False  # a limit or @stop refused the turn: the rollout ends normally
            raise PrimebeakerError(f"model call failed (HTTP {status}): {_error_text(answer)}")
        choice = (answer.get("choices") or [{}])[0]
        message = {k: v for k, v in (choice.get("message") or {}).items() if v is not None}
        message["role"] = "assistant"
        if not message.get("reasoning_content") and message.get("reasoning"):
            message["reasoning_content"] = message["reasoning"]
        self.messages.append(message)
        self.turn += 1
        usage = answer.get("usage") or {}
        tokens = usage.get("completion_tokens", usage.get("output_tokens"))
        if tokens is not None:
            self.completion_tokens = (self.completion_tokens or 0) + int(tokens)
        return True


def _post(url, secret, body, timeout):
    """(status, parsed body) of one chat completion; the standard library keeps the package
    dependency-free. The interception endpoint is on this host: no proxy."""
    request = urllib.request.Request(
        url, data=json.dumps(body, ensure_ascii=False, allow_nan=False).encode("utf-8"),
        method="POST", headers={"Content-Type": "application/json",
                                "Authorization": f"Bearer {secret}"})
    handlers = []
    if urllib.parse.urlsplit(url).hostname in ("127.0.0.1", "localhost", "::1"):
        handlers.append(urllib.request.ProxyHandler({}))
    try:
        with urllib.request.build_opener(*handlers).open(request, timeout=timeout) as response:
            return response.status, json.loads(response.read() or b"{}")
    except urllib.error.HTTPError as error:
        raw = error.read()
        try:
            return error.code, json.loads(raw)
        except ValueError:
            return error.code, {"error": raw.decode("utf-8", "replace")}
    except (urllib.error.URLError, OSError) as error:
        raise PrimebeakerError(f"model endpoint {url} unreachable: {error}") from None


def _error_text(answer):
    error = answer.get("error") if isinstance(answer, dict) else answer
    if isinstance(error, dict):
        return str(error.get("message") or error)
    return str(error)
