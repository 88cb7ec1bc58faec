# SPDX-License-Identifier: MIT
"""Builds Verifiers v0 environments whose hooks and rewards delegate to the primebeaker child.

Which hooks make a round trip, and what each carries: docs/environments-runtime.md."""

import asyncio
import logging

from . import _binary, _rows, _wire
from ._child import ChildError
from ._wire import get as _get, jsonable as _jsonable

log = logging.getLogger("primebeaker.environments")

# Keys the shim keeps in the Verifiers state for itself; never sent to the child.
_OPENED = "_primebeaker_opened"
_OBSERVED = "_primebeaker_observed"
_SCORE = "_primebeaker_score"


def make_loader(name):
    """The `load_environment` of one catalog entry, with Verifiers' calling convention."""

    def load_environment(**kwargs):
        import verifiers as vf

        shape = _binary.describe(name, kwargs)
        dataset = load_dataset(shape["dataset"], shape["args"])
        return build_environment(vf, name, shape, dataset)

    load_environment.__doc__ = (f"Build the `{name}` environment. Arguments, defaults and "
                                f"rules: `primebeaker environments show {name}`.")
    return load_environment


# ----------------------------------------------------------------------------------- datasets

def load_dataset(rules, args):
    """The dataset as Verifiers wants it, loaded in Python the way the environment allows."""
    import datasets

    kind = _rows.source_kind(rules, args)
    split, split_rule = args.get("split", "train"), rules.get("split_column", "add")
    if kind == "jsonl":
        loaded = datasets.Dataset.from_list(_rows.read_jsonl(args["dataset"], split, split_rule))
    else:
        loaded = _rows.load_datasets_object(kind, args)
    if split_rule != "none" and "split" not in loaded.column_names:
        loaded = loaded.add_column("split", [split] * len(loaded))
    return loaded


# ------------------------------------------------------------------------------- environments

def build_environment(vf, name, shape, dataset):
    rubric = _make_rubric(vf, name, shape)
    class_name = "".join(part.capitalize() for part in name.split("-")) + "Env"
    if shape["kind"] == "single_turn":
        cls = type(class_name, (vf.SingleTurnEnv,), {"__module__": __name__})
        env = cls(dataset=dataset, rubric=rubric)
    else:
        methods = {"__module__": __name__}
        for stop in shape.get("stops", []):
            methods[stop["name"]] = _make_stop(vf, stop)
        for cleanup in shape.get("cleanups", []):
            methods[cleanup["name"]] = _make_cleanup(vf, cleanup)
        cls = type(class_name, (_MultiTurnShim, vf.MultiTurnEnv), methods)
        env = cls(dataset=dataset, rubric=rubric, tool_defs=shape.get("tool_defs") or None,
                  max_turns=shape.get("max_turns", -1))
        if not shape.get("keep_num_turns", True):
            env.rubric = rubric  # Python PrimeBeaker's Podman env drops the num_turns monitor this way
    env.primebeaker_name = name
    env.primebeaker_shape = shape
    return env


class _MultiTurnShim:
    """Hooks shared by every multi-turn environment; stops and cleanups are added per shape."""

    async def setup_state(self, state, **kwargs):
        result = await super().setup_state(state, **kwargs)
        state = result if result is not None else state
        if self.primebeaker_shape.get("needs_setup"):
            reply = await _call(state, "open", **_open_fields(self, state))
            state[_OPENED] = True
            _merge(state, reply)
        return state

    async def env_response(self, messages, state, **kwargs):
        import verifiers as vf

        trajectory = state.get("trajectory") or []
        reply = await _call(state, "respond", **_implicit_open(self, state),
                            turn=len(trajectory), trajectory_len=len(trajectory),
                            max_turns=getattr(self, "max_turns", -1),
                            completion_tokens=_completion_tokens(state),
                            max_total_completion_tokens=getattr(
                                self, "max_total_completion_tokens", None))
        amend = reply.get("amend_last_tool")
        if amend:
            # That message object is shared with the stored trajectory, so the change shows
            # there too.
            _wire.amend_last_tool(messages, amend)
        out = []
        for message in reply.get("messages", []):
            fields = {k: v for k, v in message.items() if v is not None}
            if fields.get("role") == "tool":
                out.append(vf.ToolMessage(**fields))
            else:
                out.append(vf.UserMessage(**fields))
        _merge(state, reply)
        if reply.get("final"):
            state["final_env_response"] = out
        return out


def _make_stop(vf, spec):
    if spec.get("kind") == "state":
        key = spec["key"]

        async def state_stop(self, state, **kwargs):
            return bool(state.get(key))

        method = state_stop
    else:
        async def observe_stop(self, state, **kwargs):
            trajectory = state.get("trajectory") or []
            if not trajectory:
                return False
            turn = len(trajectory)
            cached = state.get(_OBSERVED)
            if cached is not None and cached[0] == turn:
                return cached[1]
            message = _last_assistant(trajectory[-1])
            reply = await _call(state, "observe", **_implicit_open(self, state), turn=turn,
                                message=_jsonable(message))
            _merge(state, reply)
            stop = bool(reply.get("stop"))
            state[_OBSERVED] = (turn, stop)
            return stop

        method = observe_stop
    method.__name__ = method.__qualname__ = spec["name"]
    return vf.stop(priority=spec.get("priority", 0))(method)


def _make_cleanup(vf, spec):
    async def close_session(self, state, **kwargs):
        if not state.get(_OPENED):
            return
        import verifiers as vf

        try:
            _merge(state, await _call(state, "close", locked=False))
        except vf.Error as error:
            # Cleanup must not fail the rollout; a lost child already closed its sessions.
            log.warning("primebeaker: closing session %s failed: %s",
                        state.get("trajectory_id"), error)

    close_session.__name__ = close_session.__qualname__ = spec["name"]
    return vf.cleanup(priority=spec.get("priority", 0))(close_session)


# ------------------------------------------------------------------------------------ scoring

def _make_rubric(vf, name, shape):
    class PrimebeakerRubric(vf.Rubric):
        async def score_rollout(self, state, *args, **kwargs):
            # Fetch the bundle first: the reward functions Verifiers calls next only read it.
            bundle = await _score_bundle(self, state)
            await super().score_rollout(state, *args, **kwargs)
            if bundle:
                metrics = state.get("metrics")
                if isinstance(metrics, dict):
                    metrics.update(bundle.get("metrics") or {})
                info_update = bundle.get("info_update") or {}
                info = state.get("info")
                if isinstance(info, dict):
                    info.update(info_update)
                elif info is None and info_update:
                    state["info"] = dict(info_update)

        @vf.cleanup
        async def release_session(self, state, **kwargs):
            if state.get(_OPENED):
                try:
                    await _call(state, "release", locked=False)
                except vf.Error as error:
                    log.warning("primebeaker: releasing session failed: %s", error)

    rewards = shape.get("rewards", [])
    rubric = PrimebeakerRubric(funcs=[_reward_function(r["name"]) for r in rewards],
                               weights=[float(r["weight"]) for r in rewards])
    for metric in shape.get("metrics", []):
        rubric.add_metric(_reward_function(metric))
    rubric.primebeaker_name = name
    rubric.primebeaker_args = shape.get("args", {})
    return rubric


def _reward_function(name):
    # One function per reward name: the first to run fetches the whole bundle (one round trip),
    # the others read it, and Verifiers still does the weighting and the metric names.
    async def reward(prompt, completion, answer, state, **kwargs):
        bundle = await _score_bundle(None, state)
        if bundle is None:
            return 0.0
        return float(bundle["values"].get(name, 0.0))

    reward.__name__ = reward.__qualname__ = name
    return reward


async def _score_bundle(rubric, state):
    task = state.get(_SCORE)
    if task is None:
        if rubric is None:
            return None
        task = asyncio.ensure_future(_request_score(rubric, state))
        state[_SCORE] = task
    try:
        return await asyncio.shield(task)
    except Exception as error:  # noqa: BLE001 - a failed trip scores 0, as Verifiers would
        log.warning("primebeaker: scoring %s failed: %s", state.get("trajectory_id"), error)
        return None


async def _request_score(rubric, state):
    error = state.get("error")
    return await _call(
        state, "score", env=rubric.primebeaker_name, args=rubric.primebeaker_args,
        row=_jsonable(state.get("input")), prompt=_jsonable(state.get("prompt")),
        completion=_jsonable(state.get("completion")), answer=state.get("answer"),
        info=_jsonable(state.get("info")), is_truncated=bool(state.get("is_truncated")),
        stop_condition=state.get("stop_condition"),
        error=None if error is None else {"type": type(error).__name__, "message": str(error)},
        trajectory_id=state.get("trajectory_id"), example_id=state.get("example_id"),
        cache_salt=_cache_salt(state))


# ------------------------------------------------------------------------------------ helpers

async def _call(state, op, locked=True, **fields):
    import verifiers as vf

    try:
        return await _wire.call(state.get("trajectory_id"), op, locked=locked, **fields)
    except ChildError as error:
        # InfraError is a vf.Error: inside the loop it becomes state["error"] and `has_error`
        # stops the rollout, instead of failing the whole request.
        raise vf.InfraError(f"primebeaker environments {op}: {error.message}") from None


def _open_fields(env, state):
    return {"env": env.primebeaker_name, "args": env.primebeaker_shape.get("args", {}),
            "row": _jsonable(state.get("input")), "sampling_args": _jsonable(
                state.get("sampling_args"))}


def _implicit_open(env, state):
    """The first request of a session that was not opened in setup carries what `open` would."""
    if state.get(_OPENED):
        return {}
    state[_OPENED] = True
    return _open_fields(env, state)


def _merge(state, reply):
    for key, value in (reply.get("state") or {}).items():
        state[key] = value


def _last_assistant(step):
    completion = _get(step, "completion") or []
    for message in reversed(completion):
        if _get(message, "role") == "assistant":
            return message
    return completion[-1] if completion else {}


def _completion_tokens(state):
    usage = state.get("usage") or state.get("token_usage")
    if isinstance(usage, dict):
        return usage.get("completion_tokens") or usage.get("output_tokens")
    return None


def _cache_salt(state):
    sampling = state.get("sampling_args") or {}
    extra = sampling.get("extra_body") if isinstance(sampling, dict) else None
    return extra.get("cache_salt") if isinstance(extra, dict) else None
