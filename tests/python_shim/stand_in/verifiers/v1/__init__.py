# SPDX-License-Identifier: MIT
"""A stand-in for Verifiers' v1 API (`import verifiers.v1 as vf`) at commit a60a606e, the one
Prime-RL v0.9 pins; loaded only when the real package is missing (tests/python_shim).

It keeps the names and call signatures the primebeaker tasksets and their tests touch:
TaskData / Task / TaskConfig / TasksetConfig / Taskset, Harness / HarnessConfig / ProgramResult,
Trace and its messages, the stop/reward/metric/tool decorators, the boundary errors and the
plugin loaders (`_import_plugin`: strip `owner/` and `@version`, `-` -> `_`, lowercase, try
`verifiers.v1.tasksets.<id>`, else the top-level module). Pydantic is replaced by a small
field-declaring base class; the rollout itself (interception server, Rollout) is the tests'
(v1_rollout.py)."""

import abc
import asyncio
import contextlib
import copy
import dataclasses
import hashlib
import importlib
import importlib.util
import inspect
import json
import logging
import typing
import uuid
from collections.abc import Mapping

BACKEND = "stand-in"
logger = logging.getLogger("verifiers.v1")


# ------------------------------------------------------------------------------ models

_MISSING = object()


class _Model:
    """Pydantic-like: annotated class attributes are fields (defaults deep-copied), extra
    keys ignored or, for configs, refused; nested models and messages validated from dicts."""

    _frozen = False
    _forbid_extra = False
    _fields = {}

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        fields = {}
        for klass in reversed(cls.__mro__):
            for name in vars(klass).get("__annotations__", {}):
                if not name.startswith("_"):
                    fields[name] = vars(klass).get(name, _MISSING)
        cls._fields = fields

    def __init__(self, **values):
        unknown = set(values) - set(self._fields)
        if unknown and self._forbid_extra:
            raise ValueError(f"{type(self).__name__}: extra fields not permitted: "
                             f"{sorted(unknown)}")
        for name, default in self._fields.items():
            if name in values:
                value = values[name]
            elif default is _MISSING:
                raise ValueError(f"{type(self).__name__}: field {name!r} required")
            else:
                value = copy.deepcopy(default)
            object.__setattr__(self, name, self._validate(name, value))

    def _validate(self, name, value):
        return value

    def __setattr__(self, name, value):
        if self._frozen:
            raise TypeError(f"{type(self).__name__} is frozen")
        object.__setattr__(self, name, value)

    def __eq__(self, other):
        return type(self) is type(other) and self.model_dump() == other.model_dump()

    @classmethod
    def model_validate(cls, data):
        if isinstance(data, cls):
            return data
        return cls(**dict(data))

    def model_dump(self, mode="python", exclude_none=False):
        out = {}
        for name in self._fields:
            value = _dump(getattr(self, name), exclude_none)
            if value is None and exclude_none:
                continue
            out[name] = value
        return out

    def model_copy(self, update=None):
        clone = copy.copy(self)
        for name, value in (update or {}).items():
            object.__setattr__(clone, name, clone._validate(name, value))
        return clone


def _dump(value, exclude_none):
    if isinstance(value, _Model):
        return value.model_dump(exclude_none=exclude_none)
    if isinstance(value, dict):
        return {k: _dump(v, exclude_none) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_dump(v, exclude_none) for v in value]
    return value


class BaseConfig(_Model):
    """pydantic_config's BaseConfig: unknown keys are errors."""

    _forbid_extra = True


# ---------------------------------------------------------------------------- messages

class SystemMessage(_Model):
    role: str = "system"
    content: typing.Any = _MISSING


class UserMessage(_Model):
    role: str = "user"
    content: typing.Any = _MISSING


class ToolCall(_Model):
    id: str = _MISSING
    name: str = _MISSING
    arguments: str = _MISSING


class AssistantMessage(_Model):
    role: str = "assistant"
    content: typing.Any = None
    reasoning_content: typing.Any = None
    tool_calls: typing.Any = None

    def _validate(self, name, value):
        if name == "tool_calls" and value is not None:
            return [ToolCall.model_validate(_flat_call(c)) for c in value]
        return value


class ToolMessage(_Model):
    role: str = "tool"
    tool_call_id: str = _MISSING
    content: typing.Any = _MISSING
    name: typing.Any = None


class Tool(_Model):
    name: str = _MISSING
    description: str = _MISSING
    parameters: dict = _MISSING
    strict: typing.Any = None


_ROLES = {"system": SystemMessage, "user": UserMessage, "assistant": AssistantMessage,
          "tool": ToolMessage}


def _flat_call(call):
    """A wire tool call ({id, type, function: {name, arguments}}) or the flat v1 shape."""
    if isinstance(call, ToolCall):
        return call
    if "function" in call:
        return {"id": call.get("id"), "name": call["function"]["name"],
                "arguments": call["function"].get("arguments") or ""}
    return call


def parse_message(raw):
    """A message of its role's type (the chat dialect's `parse_message`)."""
    if isinstance(raw, _Model):
        return raw
    cls = _ROLES.get(raw.get("role"))
    if cls is None:
        raise ValueError(f"unknown message role {raw.get('role')!r}")
    return cls(**{k: v for k, v in raw.items() if k in cls._fields})


class State(_Model):
    artifacts: dict = {}


class SamplingConfig(_Model):
    temperature: typing.Any = None
    top_p: typing.Any = None
    reasoning_effort: typing.Any = None
    max_tokens: typing.Any = None


Sampling = SamplingConfig


# ------------------------------------------------------------------------------ errors

class RolloutError(Exception):
    pass


class ProviderError(RolloutError):
    def __init__(self, message="", *, status_code=502):
        super().__init__(message)
        self.status_code = status_code


class HarnessError(RolloutError):
    pass


class ToolsetError(RolloutError):
    pass


class EnvError(RolloutError):
    pass


class SandboxError(RolloutError):
    pass


class TaskError(RolloutError):
    pass


class InterceptionError(RolloutError):
    pass


@contextlib.asynccontextmanager
async def boundary(error_cls, what):
    """Classifies an escaping error by the boundary it crossed; typed ones pass through."""
    try:
        yield
    except RolloutError:
        raise
    except TimeoutError as error:
        raise error_cls(f"{what} timed out") from error
    except Exception as error:  # noqa: BLE001 - the boundary classifies everything
        raise error_cls(f"{what}: {type(error).__name__}: {error}") from error


# -------------------------------------------------------------------------- decorators

def _mark(attr, **extra):
    def decorator(fn):
        setattr(fn, attr, True)
        for key, value in extra.items():
            setattr(fn, key, value)
        return fn

    return decorator


def tool(func=None, name=None):
    decorator = _mark("tool", tool_name=name)
    return decorator if func is None else decorator(func)


def stop(func=None, priority=0):
    decorator = _mark("stop", stop_priority=priority)
    return decorator if func is None else decorator(func)


def intercept(func=None, priority=0):
    decorator = _mark("intercept", intercept_priority=priority)
    return decorator if func is None else decorator(func)


def metric(func=None, priority=0):
    decorator = _mark("metric", metric_priority=priority)
    return decorator if func is None else decorator(func)


def reward(func=None, weight=1.0, priority=0):
    decorator = _mark("reward", reward_priority=priority, _vf_weight=weight)
    return decorator if func is None else decorator(func)


def discover_decorated(obj, attr):
    names = {name for klass in type(obj).__mro__ for name, fn in vars(klass).items()
             if callable(fn) and hasattr(fn, attr)}
    methods = [m for name in names if hasattr(m := getattr(obj, name), attr)]
    methods.sort(key=lambda m: (-getattr(m, f"{attr}_priority", 0), m.__name__))
    return methods


def invoke(fn, available):
    params = inspect.signature(fn).parameters
    kwargs = {name: available[name] for name in params if name in available}
    if any(isinstance(key, type) for key in available):
        hints = typing.get_type_hints(fn)
        for name in params:
            annotation = typing.get_origin(hints.get(name)) or hints.get(name)
            if name not in kwargs and annotation in available:
                kwargs[name] = available[annotation]
    return fn(**kwargs)


async def invoke_all(fns, available):
    return await asyncio.gather(*(invoke(fn, available) for fn in fns))


def seed(scores, names):
    for name in names:
        scores[name] = None


def unseed(scores, name):
    if scores.get(name) is None:
        scores.pop(name, None)


def concrete_type(cls, bound, *, origin=None):
    for klass in cls.__mro__:
        for base in getattr(klass, "__orig_bases__", ()):
            if origin is not None and typing.get_origin(base) is not origin:
                continue
            for arg in typing.get_args(base):
                if isinstance(arg, type) and issubclass(arg, bound):
                    return arg
    return None


# ------------------------------------------------------------------------ task, taskset

class DecoratedFunctionConfig(BaseConfig):
    fn: typing.Any = None
    priority: typing.Any = None


class RewardFunctionConfig(DecoratedFunctionConfig):
    weight: typing.Any = None


class TaskConfig(BaseConfig):
    judges: list = []
    stops: dict = {}
    metrics: dict = {}
    rewards: dict = {}


class TaskData(_Model):
    _frozen = True
    idx: typing.Any = None
    name: typing.Any = None
    description: typing.Any = None
    prompt: typing.Any = None
    system_prompt: typing.Any = None
    image: typing.Any = None
    workdir: typing.Any = None

    def _validate(self, name, value):
        if name == "prompt" and isinstance(value, list):
            return [parse_message(m) for m in value]
        return value


class TasksetConfig(BaseConfig):
    id: str = ""
    task: TaskConfig = TaskConfig()
    system_prompt: typing.Any = None

    def _validate(self, name, value):
        if name == "task" and isinstance(value, dict):
            return TaskConfig.model_validate(value)
        return value

    @property
    def name(self):
        return self.id


DataT = typing.TypeVar("DataT", bound=TaskData)
StateT = typing.TypeVar("StateT", bound=State)
ConfigT = typing.TypeVar("ConfigT", bound=TaskConfig)


class Task(typing.Generic[DataT, StateT, ConfigT]):
    NEEDS_CONTAINER = False

    def __init__(self, data, config=None):
        self.data = data
        self.config = config if config is not None else self.config_type()()

    @property
    def hash(self):
        raw = json.dumps(self.data.model_dump(mode="json", exclude_none=True), sort_keys=True)
        return hashlib.sha256(raw.encode()).hexdigest()

    @property
    def key(self):
        return self.hash

    def with_system_prompt(self, system_prompt):
        clone = copy.copy(self)
        clone.data = self.data.model_copy(update={"system_prompt": system_prompt})
        return clone

    def runtime_env(self):
        return {}

    async def setup(self, trace, runtime):
        return None

    async def finalize(self, trace, runtime):
        return None

    async def validate(self, runtime):
        return True

    async def score(self, trace, runtime=None):
        def requires_runtime(fn):
            param = inspect.signature(fn).parameters.get("runtime")
            return param is not None and param.default is inspect.Parameter.empty

        available = {"task": self.data, "trace": trace}
        if runtime is not None:
            available["runtime"] = runtime
        async with boundary(TaskError, f"task {type(self).__name__} scoring"):
            metrics = self.hooks("metric")
            rewards = self.hooks("reward")
            if runtime is None:
                metrics = [fn for fn in metrics if not requires_runtime(fn)]
                rewards = [fn for fn in rewards if not requires_runtime(fn)]
            seed(trace.metrics, (fn.__name__ for fn in metrics))
            seed(trace.rewards, (fn.__name__ for fn in rewards))
            for fn, result in zip(metrics, await invoke_all(metrics, available)):
                if isinstance(result, Mapping):
                    unseed(trace.metrics, fn.__name__)
                    trace.record_metrics(result)
                else:
                    trace.record_metric(fn.__name__, result)
            for fn, result in zip(rewards, await invoke_all(rewards, available)):
                weight = getattr(fn, "_vf_weight", 1.0)
                if isinstance(result, Mapping):
                    unseed(trace.rewards, fn.__name__)
                    items = result.items()
                else:
                    items = [(fn.__name__, result)]
                for key, value in items:
                    trace.record_reward(key, value, weight)

    @classmethod
    def data_type(cls):
        return concrete_type(cls, TaskData) or TaskData

    @classmethod
    def config_type(cls):
        return concrete_type(cls, TaskConfig) or TaskConfig

    def hooks(self, attr):
        """Decorated methods only: the stand-in does not plug functions from config."""
        plugged = {"stop": self.config.stops, "metric": self.config.metrics,
                   "reward": self.config.rewards}[attr]
        if plugged:
            raise NotImplementedError("the stand-in does not plug hooks from config")
        fns = list(discover_decorated(self, attr))
        fns.sort(key=lambda fn: (-getattr(fn, f"{attr}_priority", 0), fn.__name__))
        return fns

    @classmethod
    def toolsets(cls, config):
        return []


TaskT = typing.TypeVar("TaskT", bound=Task)
TasksetConfigT = typing.TypeVar("TasksetConfigT", bound=TasksetConfig)


class Taskset(abc.ABC, typing.Generic[TaskT, TasksetConfigT]):
    INFINITE = False

    def __init__(self, config):
        self.config = config
        override = config.system_prompt
        self.system_prompt = override.read_text() if override is not None else None
        self.transform = None

    @abc.abstractmethod
    def load(self):
        """Build and yield the taskset's tasks."""

    def __iter__(self):
        prompt = self.system_prompt
        tasks = (t.with_system_prompt(prompt) if prompt is not None else t for t in self.load())
        yield from self.transform(tasks) if self.transform is not None else tasks

    def head(self, num_tasks):
        import itertools

        clone = copy.copy(self)
        clone.transform = lambda tasks: itertools.islice(tasks, num_tasks)
        return clone

    @classmethod
    def task_type(cls):
        return concrete_type(cls, Task, origin=Taskset) or Task

    @classmethod
    def toolsets(cls, config):
        return []


# ----------------------------------------------------------------------------- harness

@dataclasses.dataclass
class ProgramResult:
    exit_code: int
    stdout: str
    stderr: str


@dataclasses.dataclass
class ModelContext:
    model: str
    client: typing.Any = None
    sampling: typing.Any = None


class HarnessConfig(BaseConfig):
    id: str = "bash"
    env: dict = {}
    forward_env: list = []
    tool_timeout: float = 600.0
    disabled_tools: typing.Any = None
    skills: list = []

    @property
    def name(self):
        return self.id

    @property
    def resolved_env(self):
        return dict(self.env)


HarnessConfigT = typing.TypeVar("HarnessConfigT", bound=HarnessConfig)


class Harness(abc.ABC, typing.Generic[HarnessConfigT]):
    APPENDS_SYSTEM_PROMPT = False
    SUPPORTS_MCP = False
    SUPPORTS_TOOL_INTERCEPTION = False
    SUPPORTS_RESUME = False
    EXECUTES_CODE = True
    SUPPORTS_SKILLS = False
    NEEDS_CONTAINER = True

    def __init__(self, config):
        self.config = config

    def resolve_prompt(self, task):
        prompt, system = task.prompt, task.system_prompt
        if system is None or self.APPENDS_SYSTEM_PROMPT:
            return system if self.APPENDS_SYSTEM_PROMPT else None, prompt
        if not isinstance(prompt, str):
            raise TypeError(f"Harness {self.config.id!r} cannot fold a system prompt into a "
                            "Messages prompt")
        return None, f"{system}\n\n{prompt}"

    async def setup(self, runtime):
        pass

    async def run(self, ctx, trace, runtime, endpoint, secret, mcp_urls, data, messages=None):
        async with boundary(HarnessError, f"harness {self.config.id!r}"):
            result = await self.launch(ctx, trace, runtime, endpoint, secret, mcp_urls, data)
        await self._check_result(trace, runtime, result)

    async def _check_result(self, trace, runtime, result):
        if trace.stop_condition is not None or result.exit_code == 0:
            return
        detail = (result.stderr or result.stdout).strip()[-2000:] or "<no output>"
        raise HarnessError(f"harness {self.config.id!r} exited {result.exit_code}: {detail}")

    async def score(self, trace, runtime):
        pass

    async def cleanup(self, trace, runtime):
        pass

    @abc.abstractmethod
    async def launch(self, ctx, trace, runtime, endpoint, secret, mcp_urls, data):
        """Run the harness program (or an in-process loop) to completion."""


# ------------------------------------------------------------------------------- trace

@dataclasses.dataclass
class Error:
    type: str
    message: str
    status_code: typing.Any = None
    traceback: typing.Any = None


@dataclasses.dataclass
class Reward:
    score: float
    weight: float = 1.0

    @property
    def value(self):
        return self.score * self.weight


@dataclasses.dataclass
class TraceTask:
    type: str
    data: typing.Any
    key: typing.Any = None
    hash: typing.Any = None


@dataclasses.dataclass
class AgentInfo:
    config: typing.Any
    name: str = "agent"
    trainable: bool = True


@dataclasses.dataclass
class MessageNode:
    message: typing.Any
    parent: typing.Any = None
    sampled: bool = False


class AgentConfig(BaseConfig):
    model: typing.Any = None
    harness: typing.Any = None
    max_turns: typing.Any = None
    max_output_tokens: typing.Any = None
    sampling: typing.Any = None


class Trace:
    """The record of one rollout; nodes form a graph whose last leaf's path is `messages`."""

    def __init__(self, task, agent, id=None):
        self.id = id or uuid.uuid4().hex
        self.task = task
        self.agent = agent
        self.tools = []
        self.nodes = []
        self.calls = []
        self.rewards = {}
        self.metrics = {}
        self.info = {}
        self.is_completed = False
        self.ok = False
        self.stop_condition = None
        self.errors = []

    @property
    def reward(self):
        return sum(r.value for r in self.rewards.values() if r is not None)

    @property
    def has_error(self):
        return not self.ok

    @property
    def messages(self):
        if not self.nodes:
            return []
        path, node = [], len(self.nodes) - 1
        while node is not None:
            path.append(self.nodes[node].message)
            node = self.nodes[node].parent
        return path[::-1]

    @property
    def num_branches(self):
        parents = {n.parent for n in self.nodes}
        return sum(1 for i in range(len(self.nodes)) if i not in parents)

    @property
    def num_turns(self):
        return sum(1 for n in self.nodes if n.sampled)

    @property
    def is_truncated(self):
        if self.stop_condition in ("max_turns", "max_input_tokens", "max_output_tokens",
                                   "max_total_tokens", "context_length"):
            return True
        last = next((c for c in reversed(self.calls) if c.get("error") is None), None)
        return bool(last and last.get("finish_reason") == "length")

    @property
    def assistant_messages(self):
        return [n.message for n in self.nodes
                if n.sampled and isinstance(n.message, AssistantMessage)]

    @property
    def tool_messages(self):
        return [n.message for n in self.nodes if isinstance(n.message, ToolMessage)]

    @property
    def last_reply(self):
        messages = self.assistant_messages
        return (messages[-1].content or "").strip() if messages else ""

    @property
    def last_error(self):
        return self.errors[-1] if self.errors else None

    def record_metric(self, name, value):
        self.metrics[name] = float(value)

    def record_metrics(self, values):
        for name, value in values.items():
            self.record_metric(name, value)

    def record_reward(self, name, value, weight=1.0):
        self.rewards[name] = Reward(score=float(value), weight=float(weight))

    def stop(self, condition):
        self.is_completed = True
        if self.stop_condition is None:
            self.stop_condition = condition

    def record_error(self, error):
        self.errors.append(Error(type=type(error).__name__, message=str(error),
                                 status_code=getattr(error, "status_code", None)))
        self.ok = False
        self.stop("error")


# ----------------------------------------------------------------------------- loaders

def _import_plugin(plugin_id, kind, group):
    name = plugin_id.rsplit("/", 1)[-1].split("@", 1)[0]
    module = name.replace("-", "_").lower()
    namespaced = f"{group}.{module}"
    # find_spec imports the parents of a dotted name, so a dotted id fails right here.
    target = namespaced if importlib.util.find_spec(namespaced) else module
    try:
        return importlib.import_module(target)
    except ModuleNotFoundError as error:
        raise ModuleNotFoundError(f"{kind} {plugin_id!r} not found (tried to import "
                                  f"{target!r})") from error


def _plugin_class(module, base, kind):
    names = getattr(module, "__all__", None)
    if names is None:
        raise AttributeError(f"{kind} module {module.__name__!r} defines no `__all__`")
    matches = [obj for name in names
               if isinstance(obj := getattr(module, name, None), type)
               and issubclass(obj, base) and obj is not base]
    if not matches:
        raise TypeError(f"{kind} module {module.__name__!r} exports no {base.__name__} "
                        f"subclass via `__all__` (found {list(names)}); export exactly one.")
    if len(matches) > 1:
        raise ValueError(f"{kind} module {module.__name__!r} exports {len(matches)} "
                         f"{base.__name__} subclasses via `__all__`; export exactly one.")
    return matches[0]


def import_taskset(taskset_id):
    return _import_plugin(taskset_id, "taskset", "verifiers.v1.tasksets")


def import_harness(harness_id):
    return _import_plugin(harness_id, "harness", "verifiers.v1.harnesses")


def taskset_class(taskset_id):
    return _plugin_class(import_taskset(taskset_id), Taskset, "taskset")


def harness_class(harness_id):
    return _plugin_class(import_harness(harness_id), Harness, "harness")


def default_harness_id(taskset_id):
    if not taskset_id:
        return "bash"
    try:
        _plugin_class(import_taskset(taskset_id), Harness, "harness")
    except (ModuleNotFoundError, TypeError, AttributeError):
        return "bash"
    return taskset_id


def taskset_config_type(taskset_id):
    return concrete_type(taskset_class(taskset_id), TasksetConfig, origin=Taskset) or \
        TasksetConfig


def harness_config_type(harness_id):
    return concrete_type(harness_class(harness_id), HarnessConfig) or HarnessConfig


def load_taskset(config):
    return taskset_class(config.id)(config)


def load_harness(config):
    return harness_class(config.id)(config)


def task_type(taskset_id):
    return taskset_class(taskset_id).task_type()


Messages = list
