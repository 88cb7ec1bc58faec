# SPDX-License-Identifier: MIT
"""A stand-in for Verifiers' v0 API, written from docs/environments-runtime.md's description of
verifiers v0.2.1 (commit ab65b6e8) and loaded only when the real package is missing.

It keeps just what the primebeaker shim touches: messages, State, the stop/cleanup/teardown
decorators, the error classes, Rubric and RubricGroup, Environment / MultiTurnEnv /
SingleTurnEnv with the v0 rollout order, load_environment, and a scripted model client.
The shim's tests import `verifiers` normally, so they run unchanged against the real package."""

import asyncio
import copy
import importlib
import inspect
import json
import logging
import uuid

BACKEND = "stand-in"
log = logging.getLogger("verifiers")


# ---------------------------------------------------------------------------------- messages

class _Message:
    """Pydantic-like: declared and extra fields, attribute and item access, model_dump."""

    _required = ()
    _defaults = {}

    def __init__(self, **fields):
        for name in self._required:
            if name not in fields:
                raise TypeError(f"{type(self).__name__} requires {name}")
        values = dict(self._defaults)
        values.update(fields)
        object.__setattr__(self, "_fields", values)

    def __getattr__(self, name):
        fields = object.__getattribute__(self, "_fields")
        if name in fields:
            return fields[name]
        raise AttributeError(name)

    def __setattr__(self, name, value):
        self._fields[name] = value

    def __getitem__(self, key):
        return self._fields[key]

    def __setitem__(self, key, value):
        self._fields[key] = value

    def __contains__(self, key):
        return key in self._fields

    def get(self, key, default=None):
        return self._fields.get(key, default)

    def model_dump(self):
        def dump(value):
            if isinstance(value, _Message):
                return value.model_dump()
            if isinstance(value, list):
                return [dump(v) for v in value]
            return value
        return {k: dump(v) for k, v in self._fields.items()}

    def __eq__(self, other):
        if isinstance(other, _Message):
            return self.model_dump() == other.model_dump()
        if isinstance(other, dict):
            return self.model_dump() == other
        return NotImplemented

    def __repr__(self):
        return f"{type(self).__name__}({self._fields!r})"


class SystemMessage(_Message):
    _defaults = {"role": "system"}


class UserMessage(_Message):
    _defaults = {"role": "user"}


class AssistantMessage(_Message):
    _defaults = {"role": "assistant", "content": None, "reasoning_content": None,
                 "tool_calls": None}


class ToolMessage(_Message):
    _required = ("tool_call_id",)
    _defaults = {"role": "tool"}


class TextMessage(_Message):
    _defaults = {"role": "text"}


class ToolCall(_Message):
    _required = ("id", "name", "arguments")


class Tool(_Message):
    _required = ("name", "description", "parameters")
    _defaults = {"strict": None}


_ROLE_CLASSES = {"system": SystemMessage, "user": UserMessage, "assistant": AssistantMessage,
                 "tool": ToolMessage}


def normalize_message(message):
    if isinstance(message, _Message):
        return message
    fields = dict(message)
    if fields.get("role") == "assistant" and fields.get("tool_calls"):
        fields["tool_calls"] = [c if isinstance(c, ToolCall) else ToolCall(**c)
                                for c in fields["tool_calls"]]
    return _ROLE_CLASSES.get(fields.get("role"), TextMessage)(**fields)


class State(dict):
    """A dict whose prompt, answer, info and example_id live in state["input"]."""

    _FORWARDED = ("prompt", "answer", "info", "example_id")

    def __getitem__(self, key):
        if key in self._FORWARDED and "input" in self and key in dict.__getitem__(self, "input"):
            return dict.__getitem__(self, "input")[key]
        return dict.__getitem__(self, key)

    def __setitem__(self, key, value):
        if key in self._FORWARDED and "input" in self:
            dict.__getitem__(self, "input")[key] = value
        else:
            dict.__setitem__(self, key, value)

    def get(self, key, default=None):
        try:
            return self[key]
        except KeyError:
            return default

    def __contains__(self, key):
        if key in self._FORWARDED and "input" in self and key in dict.__getitem__(self, "input"):
            return True
        return dict.__contains__(self, key)


# ------------------------------------------------------------------------- decorators, errors

def _marker(kind):
    def decorator(func=None, *, priority=0):
        def mark(f):
            setattr(f, f"_vf_{kind}", True)
            setattr(f, f"_vf_{kind}_priority", priority)
            return f
        return mark(func) if func is not None else mark
    return decorator


stop = _marker("stop")
cleanup = _marker("cleanup")
teardown = _marker("teardown")


def _marked_methods(obj, kind):
    found = []
    for name in dir(obj):
        member = getattr(obj, name, None)
        if inspect.ismethod(member) and getattr(member, f"_vf_{kind}", False):
            found.append((-getattr(member, f"_vf_{kind}_priority", 0), name, member))
    return [(name, member) for _, name, member in sorted(found, key=lambda t: (t[0], t[1]))]


async def _call_with_named(func, available):
    parameters = inspect.signature(func).parameters
    if any(p.kind == p.VAR_KEYWORD for p in parameters.values()):
        kwargs = dict(available)
    else:
        kwargs = {k: v for k, v in available.items() if k in parameters}
    result = func(**kwargs)
    if inspect.isawaitable(result):
        result = await result
    return result


class Error(Exception):
    pass


class ModelError(Error):
    pass


class OverlongPromptError(Error):
    pass


class ToolError(Error):
    pass


class ToolParseError(ToolError):
    pass


class ToolCallError(ToolError):
    pass


class InfraError(Error):
    pass


class Parser:
    def parse(self, text):
        return text


# ---------------------------------------------------------------------------------- rubrics

_GROUP_PARAMETERS = {"states", "prompts", "completions", "answers", "tasks", "infos"}


class Rubric:
    def __init__(self, funcs=None, weights=None, parser=None):
        self.funcs = list(funcs or [])
        self.weights = list(weights) if weights is not None else [1.0] * len(self.funcs)
        if len(self.weights) != len(self.funcs):
            raise ValueError("funcs and weights differ in length")
        self.parser = parser or Parser()
        self.class_objects = {}

    def add_reward_func(self, func, weight=1.0):
        self.funcs.append(func)
        self.weights.append(weight)

    def add_metric(self, func, weight=0.0):
        self.add_reward_func(func, weight)

    def add_class_object(self, name, obj):
        self.class_objects[name] = obj

    def _get_reward_funcs(self):
        return list(self.funcs)

    def _get_reward_weights(self):
        return list(self.weights)

    def _get_reward_func_names(self):
        return [f.__name__ for f in self.funcs]

    def _is_group_func(self, func):
        return bool(_GROUP_PARAMETERS & set(inspect.signature(func).parameters))

    async def score_rollout(self, state):
        assert self.funcs, "a rubric needs at least one reward function"
        assert not any(self._is_group_func(f) for f in self.funcs)
        available = {"prompt": state.get("prompt"), "completion": state.get("completion"),
                     "answer": state.get("answer"), "state": state, "info": state.get("info"),
                     "task": state.get("task"), "parser": self.parser, **self.class_objects}
        metrics, reward = {}, 0.0
        for func, weight in zip(self.funcs, self.weights):
            try:
                value = float(await _call_with_named(func, available))
            except Exception as error:  # noqa: BLE001 - Verifiers logs and scores 0.0
                log.warning("reward function %s failed: %s", func.__name__, error)
                value = 0.0
            metrics[func.__name__] = value
            reward += weight * value
        state["metrics"] = metrics
        state["reward"] = reward

    async def cleanup(self, state):
        for _, method in _marked_methods(self, "cleanup"):
            await _call_with_named(method, {"state": state})

    async def teardown(self):
        for _, method in _marked_methods(self, "teardown"):
            await _call_with_named(method, {})


class RubricGroup(Rubric):
    def __init__(self, rubrics):
        super().__init__()
        self.rubrics = list(rubrics)

    def add_reward_func(self, func, weight=1.0):
        log.warning("RubricGroup.add_reward_func goes to the first rubric")
        self.rubrics[0].add_reward_func(func, weight)

    def _get_reward_func_names(self):
        return [n for r in self.rubrics for n in r._get_reward_func_names()]

    async def score_rollout(self, state):
        total, metrics = 0.0, {}
        for rubric in self.rubrics:
            await rubric.score_rollout(state)
            total += state.get("reward") or 0.0
            for name, value in (state.get("metrics") or {}).items():
                metrics[name] = metrics.get(name, 0.0) + value
        state["reward"] = total
        state["metrics"] = metrics

    async def cleanup(self, state):
        for rubric in self.rubrics:
            await rubric.cleanup(state)


# ----------------------------------------------------------------------------- environments

class Environment:
    def __init__(self, dataset=None, eval_dataset=None, system_prompt=None, few_shot=None,
                 parser=None, rubric=None, sampling_args=None, tool_defs=None, max_workers=512,
                 env_id=None, env_args=None, map_kwargs=None, max_seq_len=None,
                 score_rollouts=True, pass_threshold=None, **kwargs):
        if dataset is None and eval_dataset is None:
            raise ValueError("Either dataset or eval_dataset must be provided")
        self.system_prompt = system_prompt
        self.dataset = self._format_dataset(dataset) if dataset is not None else None
        self.eval_dataset = self._format_dataset(eval_dataset) if eval_dataset is not None \
            else None
        self.parser = parser or Parser()
        self.rubric = rubric or Rubric()
        self.sampling_args = sampling_args or {}
        self.tool_defs = [self._normalize_tool(t) for t in tool_defs] if tool_defs else None
        self.max_seq_len = max_seq_len
        self.score_rollouts = score_rollouts
        for key, value in kwargs.items():  # every other keyword becomes an attribute
            setattr(self, key, value)

    @staticmethod
    def _normalize_tool(tool):
        if isinstance(tool, Tool):
            return tool
        if "type" in tool and tool.get("type") == "function":
            raise ValueError("legacy {'type': 'function'} tool shape; pass {name, description, "
                             "parameters}")
        return Tool(**tool)

    def _format_dataset(self, dataset):
        columns = dataset.column_names
        if "example_id" not in columns:
            dataset = dataset.add_column("example_id", list(range(len(dataset))))
        if "prompt" not in columns and "question" in columns:
            system = self.system_prompt
            dataset = dataset.map(lambda row: {"prompt": (
                [{"role": "system", "content": system}] if system else []) + [
                {"role": "user", "content": row["question"]}]})
        return dataset

    def get_dataset(self, n=-1, seed=None):
        dataset = self.dataset
        if seed is not None:
            dataset = dataset.shuffle(seed=seed)
        if n > 0:
            dataset = dataset.select(range(min(n, len(dataset))))
        return dataset

    def add_rubric(self, rubric):
        self.rubric = RubricGroup([self.rubric, rubric])

    def set_kwargs(self, **kwargs):
        for key, value in kwargs.items():
            setter = getattr(self, f"set_{key}", None)
            if callable(setter):
                setter(value)
            else:
                setattr(self, key, value)

    @property
    def requires_group_rollouts(self):
        return False

    async def init_state(self, input, client, model, sampling_args=None):
        row = copy.deepcopy(dict(input))
        if isinstance(row.get("info"), str):
            row["info"] = json.loads(row["info"])
        row["prompt"] = [normalize_message(m) for m in row.get("prompt") or []]
        state = State()
        dict.__setitem__(state, "input", row)
        info = row.get("info") if isinstance(row.get("info"), dict) else {}
        state["task"] = info.get("task") or row.get("task") or row
        state["client"] = client
        state["model"] = model
        state["sampling_args"] = sampling_args or {}
        state["tool_defs"] = info.get("tool_defs") or self.tool_defs
        state["trajectory"] = []
        state["completion"] = None
        state["trajectory_id"] = uuid.uuid4().hex
        for key in ("reward", "metrics", "error", "final_env_response"):
            state[key] = None
        state["is_completed"] = False
        state["is_truncated"] = False
        state["stop_condition"] = None
        state["timing"] = {}
        return state

    async def is_completed(self, state):
        for name, method in _marked_methods(self, "stop"):
            if await _call_with_named(method, {"state": state}):
                state["is_completed"] = True
                state["stop_condition"] = name
                return True
        return False

    async def cleanup(self, state):
        for _, method in _marked_methods(self, "cleanup"):
            await _call_with_named(method, {"state": state, "env": self,
                                            "task": state.get("task")})

    async def run_rollout(self, input, client, model, sampling_args=None, state_columns=None):
        state = await self.rollout(input, client, model, sampling_args)
        if self.score_rollouts:
            await self.rubric.score_rollout(state)
        else:
            state["reward"], state["metrics"] = 0.0, {}
        await self.rubric.cleanup(state)
        return state


class MultiTurnMonitorRubric(Rubric):
    def __init__(self):
        super().__init__()
        self.add_metric(self.num_turns)

    async def num_turns(self, state):
        return float(len(state.get("trajectory") or []))


class MultiTurnEnv(Environment):
    def __init__(self, max_turns=-1, timeout_seconds=None, **kwargs):
        super().__init__(**kwargs)
        self.max_turns = max_turns
        self.timeout_seconds = timeout_seconds
        self.max_total_completion_tokens = None
        self.add_rubric(MultiTurnMonitorRubric())

    def set_max_total_completion_tokens(self, value):
        self.max_total_completion_tokens = value

    async def env_response(self, messages, state, **kwargs):
        raise NotImplementedError

    async def setup_state(self, state, **kwargs):
        return state

    @stop(priority=100)
    async def has_error(self, state):
        return state.get("error") is not None

    @stop
    async def prompt_too_long(self, state):
        return bool(state.get("prompt_too_long"))

    @stop
    async def max_turns_reached(self, state):
        return self.max_turns > 0 and len(state["trajectory"]) >= self.max_turns

    @stop
    async def max_total_completion_tokens_reached(self, state):
        return False

    @stop
    async def has_final_env_response(self, state):
        return state.get("final_env_response") is not None

    async def get_prompt_messages(self, state):
        trajectory = state["trajectory"]
        if not trajectory:
            return list(state["prompt"])
        last = trajectory[-1]
        history = list(last["prompt"]) + list(last["completion"])
        return history + list(await self.env_response(history, state))

    async def add_trajectory_step(self, state, step):
        state["trajectory"].append(step)

    @cleanup(priority=100)
    async def render_state(self, state):
        trajectory = state["trajectory"]
        prompt_length = len(state["prompt"])
        completion = []
        if trajectory:
            last = trajectory[-1]
            completion = (list(last["prompt"]) + list(last["completion"]))[prompt_length:]
        if state.get("final_env_response"):
            completion += list(state["final_env_response"])
        state["completion"] = completion

    async def rollout(self, input, client, model, sampling_args=None):
        state = await self.init_state(input, client, model, sampling_args)
        try:
            try:
                state = await self.setup_state(state) or state
            except Error as error:
                state["error"] = error

            async def loop():
                while not await self.is_completed(state):
                    try:
                        messages = await self.get_prompt_messages(state)
                    except Error as error:
                        state["error"] = error
                        continue
                    if state.get("final_env_response") is not None:
                        continue
                    response = await client.get_model_response(messages, model,
                                                               state["sampling_args"])
                    await self.add_trajectory_step(state, {
                        "prompt": messages, "completion": [response], "response": None,
                        "tokens": None, "is_truncated": False,
                        "trajectory_id": state["trajectory_id"], "extras": {}})

            try:
                await asyncio.wait_for(loop(), self.timeout_seconds)
            except asyncio.TimeoutError:
                state["timed_out"] = True
                state["stop_condition"] = "timeout_reached"
        finally:
            await self.cleanup(state)
        return state


class SingleTurnEnv(MultiTurnEnv):
    def __init__(self, **kwargs):
        kwargs["max_turns"] = 1
        super().__init__(**kwargs)

    async def env_response(self, messages, state, **kwargs):
        raise NotImplementedError("a single-turn environment never responds")


class ScriptedClient:
    """A model that answers with queued assistant messages (dicts or AssistantMessage)."""

    def __init__(self, responses):
        self.responses = list(responses)
        self.prompts = []

    async def get_model_response(self, messages, model, sampling_args):
        self.prompts.append(messages)
        if not self.responses:
            raise ModelError("the scripted client ran out of responses")
        return normalize_message(self.responses.pop(0))


def load_environment(env_id, **args):
    module_name = env_id.replace("-", "_").split("/")[-1]
    try:
        module = importlib.import_module(module_name)
    except ImportError as error:
        raise ValueError(f"could not import {module_name}: {error}") from error
    try:
        return module.load_environment(**args)
    except Exception as error:
        raise RuntimeError(f"failed to load {env_id}: {error}") from error
