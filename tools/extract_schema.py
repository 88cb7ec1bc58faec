#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Extract Prime-RL's pydantic config classes into primebeaker's compiled-in schema.

Reads the config classes of a Prime-RL release with `ast` (Python 3 standard library only:
pydantic is never imported, nothing is executed) and writes the C++ tables of
include/primebeaker/primerl/schema.hpp: every class reachable from the entrypoint roots, with
its fields (type, default as written, Field bounds, Literal values, aliases, nested class), its
unknown-key policy, and the Prime-RL input rewrites the checker models. docs/primerl-schema.md
says what is checked and how to regenerate:

  python3 tools/extract_schema.py \\
      --git-dir <prime-rl clone>/.git --tag v0.8.0 \\
      --verifiers-git-dir <verifiers clone>/.git \\
      -o src/primerl/generated/schema_v0_8_0.cpp

and for Prime-RL v0.9 (main at 559b4477; verifiers' v1 env classes typed):

  python3 tools/extract_schema.py \\
      --git-dir <prime-rl clone>/.git --tag 559b4477 \\
      --verifiers-git-dir <verifiers clone>/.git --type-narrowed \\
      --label 'Prime-RL v0.9 (559b4477)' --symbol prime_rl_v0_9 \\
      -o src/primerl/generated/schema_v0_9.cpp

and for the cataloged image (v0.7.1.dev83 plus the goncalorafaria/prime-rl fork's changed config
files, put in a directory with the repository's layout):

  python3 tools/extract_schema.py \\
      --git-dir <prime-rl clone>/.git --tag 2ffe374e0 --overlay-dir <fork files> \\
      --verifiers-git-dir <verifiers clone>/.git \\
      --label 'Prime-RL v0.7.1.dev83 (fork 227e38ee)' --symbol prime_rl_v0_7_1_dev83 \\
      -o src/primerl/generated/schema_v0_7_1_dev83.cpp

An entrypoint of OPTIONAL_ROOTS (v0.9's `evals`) is a root when the revision's pyproject.toml
[project.scripts] lists it.

or, for a plain source tree (tests use this with a synthetic package):

  python3 tools/extract_schema.py --source-dir DIR --root demo=pkg.mod:DemoConfig -o out.cpp

`--validators` prints the model validators found (the cross-field rules that stay in the
container) as a Markdown list instead of writing C++.
"""

from __future__ import annotations

import argparse
import ast
import hashlib
import os
import re
import shlex
import subprocess
import sys
from dataclasses import dataclass, field
from typing import Optional

# The entrypoints of a Prime-RL release (pyproject.toml [project.scripts] -> cli(<Config>)).
DEFAULT_ROOTS = [
    ("rl", "prime_rl.configs.rl", "RLConfig"),
    ("sft", "prime_rl.configs.sft", "SFTConfig"),
    ("trainer", "prime_rl.configs.trainer", "TrainerConfig"),
    ("orchestrator", "prime_rl.configs.orchestrator", "OrchestratorConfig"),
    ("inference", "prime_rl.configs.inference", "InferenceConfig"),
    ("env_server", "prime_rl.configs.env_server", "EnvServerConfig"),
]

# Entrypoints only some revisions have, by their [project.scripts] name: a root (after the
# default ones) when the revision's pyproject.toml lists the script and no --root is given.
OPTIONAL_ROOTS = {
    "evals": ("evals", "prime_rl.configs.evals", "EvalsConfig"),  # from v0.8.1.dev (v0.9)
}

# Bases that end the walk up a class hierarchy, with what they do with unknown keys.
ROOT_BASES = {
    "pydantic_config.BaseConfig": "forbid",  # ConfigDict(extra="forbid") + the "None" rewrite
    "pydantic_config.cli.BaseConfig": "forbid",
    "pydantic.BaseModel": "ignore",  # pydantic's default: unknown keys are dropped
    "pydantic.main.BaseModel": "ignore",
}

# Classes whose input is replaced at validation time by something this script cannot see: the
# value is accepted as is (docs/primerl-schema.md, "What is not typed").
OPAQUE_CLASSES = {
    # EnvConfig._resolve_env (vf.resolve_env_field) narrows `env` to the config class the env
    # id or taskset id names, loaded from the environment's own package.
    "verifiers.v1.configs.env.EnvConfig": "narrowed to the environment's own config class",
}

# Every mode="before" model validator changes the input before pydantic checks it, so each one
# must be known here, with the effect the checker models, and its source must be the one that
# was reviewed (sha256 of ast.unparse of the function, first 12 hex digits; one entry per
# reviewed version). An unknown or changed one stops the extraction: read it, then add its entry.
#   ("none", why)                    no effect on which keys and types are accepted
#   ("opaque_field", field, why)     that field's value is accepted as is
#   ("drop_keys", field, tag, keys)  keys removed from that table when its `type` is `tag`
#   ("narrowed", field, base, cls, why)  the field is validated as a subclass of class `base`
#                                    picked at run time by an id (a plugin's config): with
#                                    --type-narrowed, typed as `cls` (or `base` when "") that
#                                    also accepts keys it does not declare; else accepted as is
ENV_NARROWED = "narrowed by its env id (vf.resolve_env_field)"
KNOWN_BEFORE_VALIDATORS = {
    ("prime_rl.configs.rl.RLConfig", "auto_setup_shared_configs"): {
        "7d211099db87": (
            "none",
            "copies shared keys into trainer/orchestrator/inference fields that exist",
        ),
    },
    ("prime_rl.configs.sft.SFTConfig", "normalize_deployment"): {
        "e03b96ae9d28": ("drop_keys", "deployment", "multi_node", ["num_gpus"]),
        "4385f759ed66": (
            "drop_keys",
            "deployment",
            "multi_node",
            ["num_train_gpus", "num_infer_gpus"],
        ),
    },
    ("prime_rl.configs.sft.SFTConfig", "propagate_model_to_inference"): {
        "d0e5370176cf": ("none", "fills inference.vllm.model from model.name"),
    },
    ("prime_rl.configs.inference.VllmConfig", "parse_extra_values"): {
        "6f8ac4591173": (
            "none",
            "extra=allow: renames kebab-case pass-through keys and JSON-parses their strings",
        ),
    },
    # Verifiers v1 (a Prime-RL commit's deps/verifiers), reached with --type-narrowed.
    ("verifiers.v1.configs.env.EnvConfig", "_refuse_env_level_harness"): {
        "25a93efe937f": (
            "none",
            "refuses an env-level `harness` key unless the env declares a role of that name "
            "(the checker cannot know the env's roles and accepts it)",
        ),
    },
    ("verifiers.v1.configs.env.EnvConfig", "_resolve_taskset"): {
        "0b6280141b4c": (
            "narrowed",
            "taskset",
            "verifiers.v1.configs.taskset.TasksetConfig",
            "",
            "narrowed by its taskset id (taskset_config_type)",
        ),
    },
    ("verifiers.v1.configs.env.EnvConfig", "_merge_role_defaults"): {
        "fb48fd77962e": ("none", "deep-merges a role's table over the role's default"),
    },
    ("verifiers.v1.configs.agent.AgentConfig", "_resolve_harness"): {
        "6805911085cf": (
            "narrowed",
            "harness",
            "verifiers.v1.configs.harness.HarnessConfig",
            "",
            "narrowed by its harness id (harness_config_type)",
        ),
    },
    ("verifiers.v1.configs.task.TaskConfig", "_resolve_judges"): {
        "42cb8f4bf49a": (
            "narrowed",
            "judges",
            "verifiers.v1.configs.judge.JudgeConfig",
            "",
            "each entry narrowed by its judge id (resolve_judges)",
        ),
    },
    # The single-agent env is what a plain taskset resolves to; other envs add their roles.
    ("prime_rl.configs.orchestrator.EnvConfig", "_resolve_env"): {
        "a554f875996b": (
            "narrowed",
            "env",
            "verifiers.v1.configs.env.EnvConfig",
            "verifiers.v1.envs.single_agent.env.SingleAgentEnvConfig",
            ENV_NARROWED,
        ),
    },
    ("prime_rl.configs.env_server.EnvServerConfig", "_resolve_env"): {
        "a554f875996b": (
            "narrowed",
            "env",
            "verifiers.v1.configs.env.EnvConfig",
            "verifiers.v1.envs.single_agent.env.SingleAgentEnvConfig",
            ENV_NARROWED,
        ),
    },
}

BUILTIN_NAMES = {
    "int": "integer",
    "float": "floating",
    "str": "string",
    "bool": "boolean",
    "bytes": "any",
    "object": "any",
    "dict": "dict",
    "list": "list",
    "tuple": "list",
    "set": "list",
    "frozenset": "list",
}

# Names from modules this script never reads, by what they mean for a TOML value.
EXTERNAL_NAMES = {
    "typing.Any": "any",
    "typing.Optional": "Optional",
    "typing.Union": "Union",
    "typing.Literal": "Literal",
    "typing_extensions.Literal": "Literal",
    "typing.Annotated": "Annotated",
    "typing_extensions.Annotated": "Annotated",
    "typing.List": "list",
    "typing.Sequence": "list",
    "typing.Tuple": "list",
    "typing.Set": "list",
    "typing.Dict": "dict",
    "typing.Mapping": "dict",
    "typing.ClassVar": "ClassVar",
    "typing.TypeAlias": "TypeAlias",
    "typing_extensions.TypeAlias": "TypeAlias",
    "pathlib.Path": "path",
    "pydantic.SerializeAsAny": "SerializeAsAny",
    "pydantic.FiniteFloat": "FiniteFloat",
    "pydantic.Field": "Field",
    "pydantic.fields.Field": "Field",
    "pydantic.AfterValidator": "AfterValidator",
    "pydantic.functional_validators.AfterValidator": "AfterValidator",
    "pydantic.BeforeValidator": "BeforeValidator",
    "pydantic.functional_validators.BeforeValidator": "BeforeValidator",
    "pydantic.WrapValidator": "WrapValidator",
    "pydantic.PlainValidator": "PlainValidator",
    "pydantic.ConfigDict": "ConfigDict",
    "pydantic.AliasChoices": "AliasChoices",
    "pydantic.model_validator": "model_validator",
    "pydantic.field_validator": "field_validator",
}


class ExtractError(Exception):
    pass


# --------------------------------------------------------------------------------------------
# Sources: a git revision or a directory, each a set of .py files found by module name.


class Source:
    def __init__(self, label: str):
        self.label = label
        self._paths: list[str] = []

    def paths(self) -> list[str]:
        return self._paths

    def read(self, path: str) -> str:
        raise NotImplementedError

    def find_module(self, module: str) -> Optional[str]:
        """The file of `module`: a path ending in a/b/c.py or a/b/c/__init__.py, preferring
        paths outside tests, then the shortest."""
        rel = module.replace(".", "/")
        hits = [
            p
            for p in self._paths
            if p == rel + ".py"
            or p.endswith("/" + rel + ".py")
            or p == rel + "/__init__.py"
            or p.endswith("/" + rel + "/__init__.py")
        ]
        if not hits:
            return None
        hits.sort(key=lambda p: ("/tests/" in "/" + p, len(p), p))
        return hits[0]


class GitSource(Source):
    def __init__(self, git_dir: str, rev: str, label: str):
        super().__init__(label)
        self.git_dir = git_dir
        self.rev = rev
        self.commit = self._git("rev-parse", rev + "^{commit}").strip()
        listing = self._git("ls-tree", "-r", "--name-only", self.commit)
        self._paths = [p for p in listing.splitlines() if p.endswith(".py")]

    def _git(self, *args: str) -> str:
        try:
            return subprocess.run(
                ["git", "--git-dir", self.git_dir, *args],
                check=True,
                capture_output=True,
                text=True,
            ).stdout
        except subprocess.CalledProcessError as e:
            raise ExtractError(f"git {' '.join(args)}: {e.stderr.strip()}") from None

    def read(self, path: str) -> str:
        return self._git("show", f"{self.commit}:{path}")

    def submodule_commit(self, path: str) -> Optional[str]:
        out = self._git("ls-tree", self.commit, path).split()
        return out[2] if len(out) >= 3 and out[1] == "commit" else None

    def scripts(self) -> list[str]:
        """The names of pyproject.toml's [project.scripts] at this revision."""
        if "pyproject.toml" not in self._git("ls-tree", "--name-only", self.commit).split("\n"):
            return []
        import tomllib  # Python 3.11+, needed only here

        data = tomllib.loads(self.read("pyproject.toml"))
        return list(data.get("project", {}).get("scripts", {}))


class DirSource(Source):
    def __init__(self, root: str):
        super().__init__(root)
        self.root = root
        self.commit = ""
        for base, dirs, files in os.walk(root):
            dirs.sort()
            for name in sorted(files):
                if name.endswith(".py"):
                    self._paths.append(os.path.relpath(os.path.join(base, name), root))

    def read(self, path: str) -> str:
        with open(os.path.join(self.root, path), encoding="utf-8") as f:
            return f.read()


# --------------------------------------------------------------------------------------------
# Modules and name resolution.


@dataclass
class Module:
    name: str
    source: Source
    path: str
    tree: ast.Module
    classes: dict = field(default_factory=dict)  # name -> ast.ClassDef
    aliases: dict = field(default_factory=dict)  # name -> ast.expr (module-level assignment)
    imports: dict = field(default_factory=dict)  # name -> ("from", module, name) | ("module", m)
    is_package: bool = False
    functions: dict = field(default_factory=dict)  # name -> ast.FunctionDef (module level)


@dataclass(frozen=True)
class Ref:
    kind: str  # "class", "alias", "function", "module", "external", "builtin"
    module: str = ""
    name: str = ""


class Resolver:
    def __init__(self, sources: list[Source]):
        self.sources = sources
        self.modules: dict[str, Optional[Module]] = {}

    def module(self, name: str) -> Optional[Module]:
        if name in self.modules:
            return self.modules[name]
        found = None
        for source in self.sources:
            path = source.find_module(name)
            if path is not None:
                found = self._parse(name, source, path)
                break
        self.modules[name] = found
        return found

    def _parse(self, name: str, source: Source, path: str) -> Module:
        tree = ast.parse(source.read(path), filename=f"{source.label}:{path}")
        mod = Module(name, source, path, tree, is_package=path.endswith("__init__.py"))
        package = name if mod.is_package else name.rpartition(".")[0]
        for node in tree.body:
            if isinstance(node, ast.ClassDef):
                mod.classes[node.name] = node
            elif isinstance(node, ast.FunctionDef):
                mod.functions[node.name] = node
            elif isinstance(node, ast.Assign) and len(node.targets) == 1:
                target = node.targets[0]
                if isinstance(target, ast.Name):
                    mod.aliases[target.id] = node.value
            elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
                if node.value is not None:
                    mod.aliases[node.target.id] = node.value
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    parts = package.split(".")
                    parts = parts[: len(parts) - (node.level - 1)]
                    base = ".".join(parts + ([node.module] if node.module else []))
                for alias in node.names:
                    mod.imports[alias.asname or alias.name] = ("from", base, alias.name)
            elif isinstance(node, ast.Import):
                for alias in node.names:
                    if alias.asname:
                        mod.imports[alias.asname] = ("module", alias.name)
                    else:
                        top = alias.name.split(".")[0]
                        mod.imports[top] = ("module", top)
        return mod

    def resolve_name(self, module: str, name: str, depth: int = 0) -> Ref:
        if depth > 50:
            raise ExtractError(f"import cycle resolving {module}.{name}")
        mod = self.module(module)
        if mod is None:
            return Ref("external", module, name)
        if name in mod.classes:
            return Ref("class", module, name)
        if name in mod.aliases:
            return Ref("alias", module, name)
        if name in mod.functions:
            return Ref("function", module, name)
        if name in mod.imports:
            entry = mod.imports[name]
            if entry[0] == "module":
                return Ref("module", entry[1])
            target_module, target_name = entry[1], entry[2]
            submodule = f"{target_module}.{target_name}"
            if self.module(target_module) is not None:
                inner = self.resolve_name(target_module, target_name, depth + 1)
                if inner.kind != "external" or self.module(submodule) is None:
                    return inner
            if self.module(submodule) is not None:  # `from package import submodule`
                return Ref("module", submodule)
            return Ref("external", target_module, target_name)
        if name in BUILTIN_NAMES or name in ("None", "Ellipsis"):
            return Ref("builtin", "", name)
        return Ref("external", module, name)

    def resolve_expr(self, module: str, expr: ast.expr) -> Ref:
        if isinstance(expr, ast.Name):
            return self.resolve_name(module, expr.id)
        if isinstance(expr, ast.Attribute):
            base = self.resolve_expr(module, expr.value)
            if base.kind == "module":
                if self.module(base.module) is None:
                    return Ref("external", base.module, expr.attr)
                return self.resolve_name(base.module, expr.attr)
            if base.kind == "external":
                return Ref("external", f"{base.module}.{base.name}", expr.attr)
        return Ref("external", module, ast.unparse(expr))


def external_meaning(ref: Ref) -> Optional[str]:
    return EXTERNAL_NAMES.get(f"{ref.module}.{ref.name}")


# --------------------------------------------------------------------------------------------
# Types.


@dataclass
class TypeDesc:
    kind: str  # any none boolean integer floating string path list dict model union literal
    item: Optional["TypeDesc"] = None  # list element / dict value
    model: str = ""  # class key
    alternatives: list = field(default_factory=list)
    discriminator: str = ""
    literals: list = field(default_factory=list)  # (kind, text)
    why: str = ""  # for `any`: why it is not typed
    note: str = ""  # a before-validator's normalisation, for the generated header (not in key)

    def key(self) -> tuple:
        return (
            self.kind,
            self.item.key() if self.item else None,
            self.model,
            tuple(a.key() for a in self.alternatives),
            self.discriminator,
            tuple(self.literals),
        )


@dataclass
class Meta:
    """What Field(...) / Annotated metadata says about a field."""

    constraints: dict = field(default_factory=dict)  # ge gt le lt min_length max_length
    finite: bool = False
    discriminator: str = ""
    aliases: list = field(default_factory=list)
    after_validators: list = field(default_factory=list)
    # (kind, argument) of each BeforeValidator / WrapValidator / PlainValidator read
    input_validators: list = field(default_factory=list)


def literal_of(value: ast.expr) -> tuple[str, str]:
    if isinstance(value, ast.UnaryOp) and isinstance(value.op, ast.USub):
        kind, text = literal_of(value.operand)
        return kind, "-" + text
    if isinstance(value, ast.Constant):
        v = value.value
        if isinstance(v, bool):
            return "boolean", "true" if v else "false"
        if isinstance(v, int):
            return "integer", str(v)
        if isinstance(v, float):
            return "floating", repr(v)
        if isinstance(v, str):
            return "string", v
        if v is None:
            return "none", ""
    raise ExtractError(f"unsupported Literal value {ast.unparse(value)}")


NORMALISED_RESULTS = {"none": "None", "table": "{}", "identity": "itself", "refuse": "refused"}


def read_normaliser(fn) -> "tuple[list, str] | str":
    """The literal cases of a BeforeValidator's function (a def or a lambda): ([(input,
    result)], rest), inputs "true" / "false" (tests `v is True`, `v is False`), results "none"
    (`return None`), "table" (`return {}` or `dict()`), "identity" (`return v`), "refuse"
    (`raise`); rest, what every other value gets ("identity" or "refuse"). A string says
    what could not be read."""
    args = fn.args
    params = [a.arg for a in args.posonlyargs + args.args]
    if not params:
        return "it takes no value"
    param = params[0]

    def test_of(test: ast.expr) -> Optional[str]:
        if (isinstance(test, ast.Compare) and len(test.ops) == 1
                and isinstance(test.ops[0], ast.Is) and isinstance(test.left, ast.Name)
                and test.left.id == param and isinstance(test.comparators[0], ast.Constant)
                and test.comparators[0].value in (True, False)
                and isinstance(test.comparators[0].value, bool)):
            return "true" if test.comparators[0].value else "false"
        return None

    def result_of(value: Optional[ast.expr]) -> Optional[str]:
        if value is None or isinstance(value, ast.Constant) and value.value is None:
            return "none"
        if isinstance(value, ast.Dict) and not value.keys:
            return "table"
        if (isinstance(value, ast.Call) and isinstance(value.func, ast.Name)
                and value.func.id == "dict" and not value.args and not value.keywords):
            return "table"
        if isinstance(value, ast.Name) and value.id == param:
            return "identity"
        return None

    cases: list = []

    def add(test: ast.expr, result: Optional[str], node: ast.AST) -> Optional[str]:
        value = test_of(test)
        if value is None:
            return f"the test `{ast.unparse(test)}` is not `v is True` or `v is False`"
        if result is None:
            return f"the result `{ast.unparse(node)}` is not None, {{}} or the value"
        if all(v != value for v, _ in cases):  # the first test of a value wins
            cases.append((value, result))
        return None

    if isinstance(fn, ast.Lambda):
        body = fn.body
        while isinstance(body, ast.IfExp):
            why = add(body.test, result_of(body.body), body.body)
            if why:
                return why
            body = body.orelse
        rest = result_of(body)
        if rest != "identity":
            return f"the other values get `{ast.unparse(body)}`, not themselves"
        return cases, rest

    todo = list(fn.body)
    if todo and isinstance(todo[0], ast.Expr) and isinstance(todo[0].value, ast.Constant):
        todo.pop(0)  # the docstring
    while todo:
        node = todo.pop(0)
        if isinstance(node, ast.If):
            if len(node.body) != 1:
                return f"the branch `{ast.unparse(node.test)}` does more than return"
            branch = node.body[0]
            if isinstance(branch, ast.Raise):
                result = "refuse"
            elif isinstance(branch, ast.Return):
                result = result_of(branch.value)
            else:
                return f"the branch `{ast.unparse(node.test)}` does more than return"
            why = add(node.test, result, branch)
            if why:
                return why
            todo = list(node.orelse) + todo  # the branch always leaves: else == after
            continue
        if isinstance(node, ast.Raise):
            return cases, "refuse"
        if isinstance(node, ast.Return):
            rest = result_of(node.value)
            if rest != "identity":
                return f"the other values get `{ast.unparse(node)}`, not themselves"
            return cases, rest
        return f"the statement `{ast.unparse(node).splitlines()[0]}` is not a literal case"
    return "the other values get None, not themselves"


def admits_none(t: TypeDesc) -> bool:
    if t.kind in ("none", "any"):
        return True
    if t.kind == "literal":
        return any(kind == "none" for kind, _ in t.literals)
    return t.kind == "union" and any(admits_none(a) for a in t.alternatives)


def accepts_booleans(t: TypeDesc) -> bool:
    if t.kind in ("boolean", "any"):
        return True
    if t.kind == "literal":
        return any(kind == "boolean" for kind, _ in t.literals)
    return t.kind == "union" and any(accepts_booleans(a) for a in t.alternatives)


def number_of(value: ast.expr) -> Optional[float]:
    try:
        return float(ast.literal_eval(value))
    except (ValueError, TypeError, SyntaxError):
        return None


class Extractor:
    def __init__(self, resolver: Resolver):
        self.resolver = resolver
        self.classes: dict[str, dict] = {}  # key -> class record, for classes reachable by keys
        self.built: dict[str, dict] = {}  # key -> class record, bases included
        self.order: list[str] = []
        self.pending: list[str] = []
        self.validators: list[tuple[str, str, str, str]] = []  # class, method, mode, doc
        self.rewrites: list[tuple] = []
        self.type_narrowed = False  # --type-narrowed
        self.narrowed: dict[str, tuple[str, str]] = {}  # class -> (declared base, why)
        self.all_classes: Optional[list] = None
        self.context = ""  # Class.field being read, for warnings
        self.warned: set = set()
        self.building: set = set()  # classes being read for a normalisation (against cycles)

    # -- annotations ----------------------------------------------------------------------

    def convert(self, module: str, expr: Optional[ast.expr], meta: Meta) -> TypeDesc:
        if expr is None:
            return TypeDesc("any", why="no annotation")
        if isinstance(expr, ast.Constant):
            if expr.value is None:
                return TypeDesc("none")
            if isinstance(expr.value, str):  # a forward reference
                return self.convert(module, ast.parse(expr.value, mode="eval").body, meta)
            raise ExtractError(f"unsupported annotation {ast.unparse(expr)} in {module}")
        if isinstance(expr, ast.BinOp) and isinstance(expr.op, ast.BitOr):
            return self.union(
                [self.convert(module, expr.left, meta), self.convert(module, expr.right, meta)]
            )
        if isinstance(expr, ast.Subscript):
            return self.subscript(module, expr, meta)
        ref = self.resolver.resolve_expr(module, expr)
        return self.named(module, ref, expr, meta)

    def named(self, module: str, ref: Ref, expr: ast.expr, meta: Meta) -> TypeDesc:
        if ref.kind == "builtin":
            kind = BUILTIN_NAMES.get(ref.name, "any")
            if kind == "list":
                return TypeDesc("list", item=TypeDesc("any", why="unparameterised"))
            if kind == "dict":
                return TypeDesc("dict", item=TypeDesc("any", why="unparameterised"))
            if ref.name == "None":
                return TypeDesc("none")
            return TypeDesc(kind)
        if ref.kind == "alias":
            # An alias's Annotated metadata (Field bounds, validators) applies where it is used.
            mod = self.resolver.module(ref.module)
            return self.convert(ref.module, mod.aliases[ref.name], meta)
        if ref.kind == "class":
            key = f"{ref.module}.{ref.name}"
            if key in OPAQUE_CLASSES:
                return TypeDesc("any", why=f"{ref.name}: {OPAQUE_CLASSES[key]}")
            if self.is_model(ref):
                self.want(key)
                return TypeDesc("model", model=key)
            enum = self.enum_values(ref)
            if enum is not None:
                return TypeDesc("literal", literals=enum)
            return TypeDesc("any", why=f"{ref.name} is not a config class")
        meaning = external_meaning(ref)
        if meaning == "any":
            return TypeDesc("any", why="Any")
        if meaning == "path":
            return TypeDesc("path")
        if meaning == "FiniteFloat":
            meta.finite = True  # allow_inf_nan=False
            return TypeDesc("floating")
        if meaning == "list":
            return TypeDesc("list", item=TypeDesc("any", why="unparameterised"))
        if meaning == "dict":
            return TypeDesc("dict", item=TypeDesc("any", why="unparameterised"))
        return TypeDesc("any", why=f"{ast.unparse(expr)} is not read ({ref.module})")

    def subscript(self, module: str, expr: ast.Subscript, meta: Meta) -> TypeDesc:
        ref = self.resolver.resolve_expr(module, expr.value)
        head = external_meaning(ref) if ref.kind == "external" else None
        if ref.kind == "builtin":
            head = BUILTIN_NAMES.get(ref.name)
        args = list(expr.slice.elts) if isinstance(expr.slice, ast.Tuple) else [expr.slice]
        if head == "Annotated":
            inner = self.convert(module, args[0], meta)
            start = len(meta.input_validators)
            for extra in args[1:]:
                self.read_metadata(module, extra, meta)
            validators = meta.input_validators[start:]
            del meta.input_validators[start:]
            if meta.discriminator and inner.kind == "union":
                inner.discriminator = meta.discriminator
                meta.discriminator = ""
            if validators:
                return self.normalised(module, inner, validators)
            return inner
        if head == "Optional":
            return self.union([self.convert(module, args[0], meta), TypeDesc("none")])
        if head == "Union":
            return self.union([self.convert(module, a, meta) for a in args])
        if head == "Literal":
            values = []
            for a in args:
                values.extend(self.literal_values(module, a))
            lits = [v for v in values if v[0] != "none"]
            out = TypeDesc("literal", literals=lits)
            if len(lits) != len(values):
                return self.union([out, TypeDesc("none")])
            return out
        if head in ("SerializeAsAny", "ClassVar"):
            return self.convert(module, args[0], meta)
        if head == "list":
            if ref.name in ("tuple", "Tuple"):
                if len(args) == 2 and isinstance(args[1], ast.Constant) and args[1].value is ...:
                    return TypeDesc("list", item=self.convert(module, args[0], Meta()))
                return TypeDesc("list", item=TypeDesc("any", why="tuple"))
            return TypeDesc("list", item=self.convert(module, args[0], Meta()))
        if head == "dict":
            return TypeDesc("dict", item=self.convert(module, args[-1], Meta()))
        return TypeDesc("any", why=f"{ast.unparse(expr)} is not read")

    def literal_values(self, module: str, expr: ast.expr) -> list:
        # Literal[...] may nest another Literal alias.
        if isinstance(expr, (ast.Name, ast.Attribute)):
            ref = self.resolver.resolve_expr(module, expr)
            if ref.kind == "alias":
                aliased = self.resolver.module(ref.module).aliases[ref.name]
                t = self.convert(ref.module, aliased, Meta())
                if t.kind == "literal":
                    return list(t.literals)
            raise ExtractError(f"unsupported Literal value {ast.unparse(expr)} in {module}")
        return [literal_of(expr)]

    def union(self, parts: list) -> TypeDesc:
        alts: list[TypeDesc] = []
        for p in parts:
            if p.kind == "union" and not p.discriminator:
                alts.extend(p.alternatives)
            else:
                alts.append(p)
        if any(a.kind == "any" for a in alts):
            return next(a for a in alts if a.kind == "any")
        # Literal | Literal -> one Literal
        lits = [a for a in alts if a.kind == "literal"]
        if len(lits) > 1:
            merged = TypeDesc("literal", literals=[v for a in lits for v in a.literals],
                              note="; ".join(a.note for a in lits if a.note))
            alts = [a for a in alts if a.kind != "literal"] + [merged]
        unique = []
        for a in alts:
            if all(a.key() != u.key() for u in unique):
                unique.append(a)
        if len(unique) == 1:
            return unique[0]
        return TypeDesc("union", alternatives=unique)

    # -- before-validator normalisations (docs/primerl-schema.md, "Before-validators") ------

    def warn(self, text: str) -> None:
        line = f"extract_schema.py: warning: {self.context or '?'}: {text}; accepted untyped"
        if line not in self.warned:
            self.warned.add(line)
            print(line, file=sys.stderr)

    def normalised(self, module: str, inner: TypeDesc, validators: list) -> TypeDesc:
        """`inner` behind a BeforeValidator: each `if v is True/False: return ...` case of its
        function whose result `inner` accepts adds that TOML boolean as an exact literal; other
        values reach `inner` as written. A validator not read this way leaves the value
        untyped, with a warning: never a guess."""
        fallback = TypeDesc("any", why="a before-validator rewrites it")
        if len(validators) != 1 or validators[0][0] != "BeforeValidator":
            kinds = ", ".join(k for k, _ in validators)
            self.warn(f"{kinds} is not read: only one BeforeValidator's literal cases are")
            return fallback
        arg = validators[0][1]
        shown = "a lambda" if isinstance(arg, ast.Lambda) else ast.unparse(arg) if arg else "?"
        fn = None
        if isinstance(arg, ast.Lambda):
            fn = arg
        elif isinstance(arg, (ast.Name, ast.Attribute)):
            ref = self.resolver.resolve_expr(module, arg)
            if ref.kind == "function":
                fn = self.resolver.module(ref.module).functions[ref.name]
        if fn is None:
            self.warn(f"BeforeValidator({shown}): its function is not in the sources read")
            return fallback
        read = read_normaliser(fn)
        if isinstance(read, str):
            self.warn(f"BeforeValidator({shown}) is not understood: {read}")
            return fallback
        cases, rest = read
        accepted = []
        shown_cases = []
        for value, result in cases:
            if result == "identity":
                if rest != "identity":
                    self.warn(f"BeforeValidator({shown}) is not understood: "
                              f"{value} is passed on but other values are refused")
                    return fallback
                continue
            ok: Optional[bool] = False
            if result == "none":
                ok = admits_none(inner)
            elif result == "table":
                ok = self.accepts_empty_table(inner)
            if ok is None:
                self.warn(f"BeforeValidator({shown}): whether {result} is valid is not known")
                return fallback
            if not ok and accepts_booleans(inner):
                self.warn(f"BeforeValidator({shown}) is not understood: {value} is refused "
                          "but the declared type takes booleans")
                return fallback
            if ok:
                accepted.append(("boolean", value))
            shown_cases.append(f"{value} -> {NORMALISED_RESULTS[result]}"
                               + ("" if ok else " (refused)"))
        if rest == "refuse" and not accepted:
            self.warn(f"BeforeValidator({shown}) is not understood: it refuses every value")
            return fallback
        shown_cases.append("the rest as declared" if rest == "identity" else "the rest refused")
        literal = TypeDesc("literal", literals=accepted,
                           note=f"{shown}: " + ", ".join(shown_cases))
        if rest == "refuse":
            return literal
        if not accepted:
            return inner
        return self.union([literal, inner])

    def accepts_empty_table(self, t: TypeDesc) -> Optional[bool]:
        """Whether `t` takes `{}` (a class with no required field); None when not known."""
        if t.kind in ("any", "dict"):
            return True
        if t.kind == "model":
            if t.model in self.building:
                return None
            # Read the class on the side: what reading it records is recorded again, in
            # order, when the walk reaches it.
            saved = (list(self.validators), list(self.rewrites), list(self.pending),
                     dict(self.narrowed), dict(self.built), self.context)
            self.building.add(t.model)
            try:
                record = self._build_class(t.model)
            finally:
                self.building.discard(t.model)
                (self.validators, self.rewrites, self.pending, self.narrowed, self.built,
                 self.context) = saved
            return not any(f["required"] for f in record["fields"])
        if t.kind == "union":
            if t.discriminator:
                return None
            verdicts = [self.accepts_empty_table(a) for a in t.alternatives]
            if True in verdicts:
                return True
            return None if None in verdicts else False
        return False

    def read_metadata(self, module: str, expr: ast.expr, meta: Meta) -> None:
        if not isinstance(expr, ast.Call):
            return
        ref = self.resolver.resolve_expr(module, expr.func)
        what = external_meaning(ref)
        if what == "Field":
            self.field_call(module, expr, meta)
        elif what == "AfterValidator":
            meta.after_validators.append(ast.unparse(expr.args[0]) if expr.args else "?")
        elif what in ("BeforeValidator", "WrapValidator", "PlainValidator"):
            meta.input_validators.append((what, expr.args[0] if expr.args else None))

    def field_call(self, module: str, call: ast.Call, meta: Meta) -> dict:
        """Reads Field(...) into `meta`; returns the default: {"default": expr | None,
        "factory": expr | None, "required": bool}."""
        out = {"default": None, "factory": None, "required": False, "given": False}
        if call.args:
            first = call.args[0]
            out["given"] = True
            if isinstance(first, ast.Constant) and first.value is ...:
                out["required"] = True
            else:
                out["default"] = first
        for kw in call.keywords:
            if kw.arg == "default":
                out["given"] = True
                if isinstance(kw.value, ast.Constant) and kw.value.value is ...:
                    out["required"] = True
                else:
                    out["default"] = kw.value
            elif kw.arg == "default_factory":
                out["given"] = True
                out["factory"] = kw.value
            elif kw.arg in ("ge", "gt", "le", "lt"):
                n = number_of(kw.value)
                if n is not None:
                    meta.constraints[kw.arg] = n
            elif kw.arg in ("min_length", "max_length"):
                n = number_of(kw.value)
                if n is not None:
                    meta.constraints[kw.arg] = int(n)
            elif kw.arg == "allow_inf_nan":
                if isinstance(kw.value, ast.Constant) and kw.value.value is False:
                    meta.finite = True
            elif kw.arg == "discriminator":
                if isinstance(kw.value, ast.Constant) and isinstance(kw.value.value, str):
                    meta.discriminator = kw.value.value
            elif kw.arg in ("alias", "validation_alias"):
                meta.aliases.extend(self.alias_names(module, kw.value))
        if not out["given"]:
            out["required"] = True
        return out

    def alias_names(self, module: str, expr: ast.expr) -> list:
        if isinstance(expr, ast.Constant) and isinstance(expr.value, str):
            return [expr.value]
        if isinstance(expr, ast.Call):
            ref = self.resolver.resolve_expr(module, expr.func)
            if external_meaning(ref) == "AliasChoices":
                names = []
                for a in expr.args:
                    if isinstance(a, ast.Constant) and isinstance(a.value, str):
                        names.append(a.value)
                return names
        return []  # AliasPath and the like: not a key of this table

    # -- classes --------------------------------------------------------------------------

    def is_model(self, ref: Ref, depth: int = 0) -> bool:
        if depth > 30:
            return False
        if ref.kind != "class":
            return f"{ref.module}.{ref.name}" in ROOT_BASES
        cls = self.resolver.module(ref.module).classes[ref.name]
        for base in cls.bases:
            b = self.resolver.resolve_expr(ref.module, base)
            if b.kind == "external" and f"{b.module}.{b.name}" in ROOT_BASES:
                return True
            if b.kind == "class" and self.is_model(b, depth + 1):
                return True
        return False

    def enum_values(self, ref: Ref) -> Optional[list]:
        cls = self.resolver.module(ref.module).classes[ref.name]
        bases = [self.resolver.resolve_expr(ref.module, b) for b in cls.bases]
        if not any(b.kind == "external" and b.module == "enum" for b in bases):
            return None
        values = []
        for node in cls.body:
            if isinstance(node, ast.Assign) and isinstance(node.value, ast.Constant):
                values.append(literal_of(node.value))
        return values

    def want(self, key: str) -> None:
        if key not in self.classes and key not in self.pending:
            self.pending.append(key)

    def run(self, roots: list[tuple[str, str, str]]) -> list[tuple[str, str]]:
        out_roots = []
        for name, module, cls in roots:
            ref = self.resolver.resolve_name(module, cls)
            if ref.kind != "class":
                raise ExtractError(f"root {name}: {module}.{cls} not found")
            key = f"{ref.module}.{ref.name}"
            out_roots.append((name, key))
            self.want(key)
        while self.pending:
            key = self.pending.pop(0)
            if key not in self.classes:
                self.order.append(key)
                self.classes[key] = None  # placeholder against cycles
                self.classes[key] = self.build_class(key)
        self.open_narrowed()
        return out_roots

    def build_class(self, key: str) -> dict:
        if key not in self.built:
            self.built[key] = self._build_class(key)
        return self.built[key]

    def _build_class(self, key: str) -> dict:
        module, _, name = key.rpartition(".")
        cls = self.resolver.module(module).classes[name]
        fields: dict[str, dict] = {}
        extra = None
        # Bases first, later ones overridden by earlier ones (left-to-right MRO for the simple
        # hierarchies configs use), then the class body.
        for base in reversed(cls.bases):
            b = self.resolver.resolve_expr(module, base)
            full = f"{b.module}.{b.name}"
            if b.kind == "external" and full in ROOT_BASES:
                extra = extra or ROOT_BASES[full]
                continue
            if b.kind == "class" and self.is_model(b):
                base_key = f"{b.module}.{b.name}"
                record = self.build_class(base_key)
                for f in record["fields"]:
                    fields[f["name"]] = f
                extra = record["extra"] if extra is None or extra == "forbid" else extra
                continue
            if b.kind == "external" and external_meaning(b) is None and b.module != "typing":
                extra = "unknown"  # a base this script does not read may add fields
        for node in cls.body:
            if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
                self.context = f"{name}.{node.target.id}"
                f = self.build_field(module, node)
                if f is not None:
                    fields[f["name"]] = f  # an override keeps the base's position
            elif isinstance(node, ast.Assign):
                for target in node.targets:
                    if isinstance(target, ast.Name) and target.id == "model_config":
                        extra = self.config_extra(node.value) or extra
            elif isinstance(node, ast.ClassDef) and node.name == "Config":
                for sub in node.body:
                    if isinstance(sub, ast.Assign) and any(
                        isinstance(t, ast.Name) and t.id == "extra" for t in sub.targets
                    ):
                        extra = self.extra_word(sub.value) or extra
            elif isinstance(node, ast.FunctionDef):
                self.read_validator(key, node, fields)
            self.context = ""
        record = {
            "key": key,
            "name": name,
            "module": module,
            "extra": extra or "unknown",
            "fields": list(fields.values()),
        }
        return record

    def config_extra(self, value: ast.expr) -> Optional[str]:
        if isinstance(value, ast.Call):
            for kw in value.keywords:
                if kw.arg == "extra":
                    return self.extra_word(kw.value)
        if isinstance(value, ast.Dict):
            for k, v in zip(value.keys, value.values):
                if isinstance(k, ast.Constant) and k.value == "extra":
                    return self.extra_word(v)
        return None

    @staticmethod
    def extra_word(value: ast.expr) -> Optional[str]:
        if isinstance(value, ast.Constant) and value.value in ("forbid", "ignore", "allow"):
            return value.value
        if isinstance(value, ast.Attribute) and value.attr in ("forbid", "ignore", "allow"):
            return value.attr
        return None

    def read_validator(self, key: str, fn: ast.FunctionDef, fields: dict) -> None:
        for deco in fn.decorator_list:
            call = deco if isinstance(deco, ast.Call) else None
            func = call.func if call else deco
            what = external_meaning(self.resolver.resolve_expr(key.rpartition(".")[0], func))
            if what not in ("model_validator", "field_validator"):
                continue
            mode = "after"
            if call:
                for kw in call.keywords:
                    if kw.arg == "mode" and isinstance(kw.value, ast.Constant):
                        mode = kw.value.value
            refuses = any(isinstance(n, (ast.Raise, ast.Assert)) for n in ast.walk(fn))
            self.validators.append((key, fn.name, f"{what}:{mode}", refuses))
            if what == "field_validator" and mode in ("before", "wrap", "plain"):
                for a in call.args if call else []:
                    if isinstance(a, ast.Constant) and a.value in fields:
                        f = dict(fields[a.value])
                        f["type"] = TypeDesc("any", why="a before-validator rewrites it")
                        fields[a.value] = f
            if what == "model_validator" and mode in ("before", "wrap"):
                self.before_validator(key, fn, fields)

    def before_validator(self, key: str, fn: ast.FunctionDef, fields: dict) -> None:
        digest = hashlib.sha256(ast.unparse(fn).encode()).hexdigest()[:12]
        known = KNOWN_BEFORE_VALIDATORS.get((key, fn.name))
        if known is None or digest not in known:
            raise ExtractError(
                f"{key}.{fn.name} is a mode=\"before\" model validator "
                f"{'this script does not know' if known is None else 'that changed'} "
                f"(sha256 {digest}): read it and record its effect in KNOWN_BEFORE_VALIDATORS"
            )
        effect = known[digest]
        if effect[0] == "opaque_field":
            if effect[1] in fields:
                f = dict(fields[effect[1]])
                f["type"] = TypeDesc("any", why=effect[2])
                fields[effect[1]] = f
        elif effect[0] == "drop_keys":
            for k in effect[3]:
                self.rewrites.append((key, effect[1], effect[2], k))
        elif effect[0] == "narrowed" and effect[1] in fields:
            _, name, base, target, why = effect
            f = dict(fields[name])
            if self.type_narrowed:
                target = target or base
                self.want(target)
                self.narrowed.setdefault(target, (base, why))
                f["type"] = self.narrow_type(f["type"], base, target)
            else:
                f["type"] = TypeDesc("any", why=why)
            fields[name] = f

    def narrow_type(self, t: TypeDesc, base: str, target: str) -> TypeDesc:
        """`t` with `base` (or the untyped stand-in an opaque class leaves) read as `target`."""
        if t.kind == "model" and t.model == base or t.kind == "any":
            return TypeDesc("model", model=target)
        if t.kind == "union":
            alts = [self.narrow_type(a, base, target) if a.kind != "none" else a
                    for a in t.alternatives]
            return TypeDesc("union", alternatives=alts, discriminator=t.discriminator)
        if t.kind in ("list", "dict"):
            return TypeDesc(t.kind, item=self.narrow_type(t.item, base, target))
        return t

    # -- classes picked at run time by an id ----------------------------------------------

    def open_narrowed(self) -> None:
        """Marks each class a field is narrowed to as `narrowed` (keys it does not declare are
        a subclass's), and reads the subclasses the sources hold: a field they re-declare
        with another class makes that class narrowed too (a taskset's own `task` config), with
        another type accepts anything."""
        done: set[str] = set()
        while True:
            todo = [k for k in self.narrowed if k not in done and k in self.classes]
            if not todo:
                return
            for target in todo:
                done.add(target)
                base, why = self.narrowed[target]
                # a copy: classes built from this one keep what its source says
                rec = self.classes[target] = dict(self.classes[target], extra="narrowed")
                base_fields = {f["name"]: f for f in self.build_class(base)["fields"]}
                for sub_module, sub in self.subclasses_of(base):
                    for node in sub.body:
                        if not (isinstance(node, ast.AnnAssign)
                                and isinstance(node.target, ast.Name)
                                and node.target.id in base_fields):
                            continue
                        name = node.target.id
                        declared = base_fields[name]["type"]
                        saved = list(self.pending)
                        self.context = f"{sub.name}.{name}"
                        redeclared = self.convert(sub_module, node.annotation, Meta())
                        self.pending = saved
                        if redeclared.key() == declared.key():
                            continue
                        models = [t.model for t in [declared, *declared.alternatives]
                                  if t.kind == "model"]
                        if models and all(t.kind in ("model", "none") for t in
                                          [redeclared, *redeclared.alternatives]
                                          if t.kind != "union"):
                            for m in models:
                                self.narrowed.setdefault(
                                    m, (m, f"{sub.name}.{name} re-declares it with a subclass"))
                            continue
                        rec["fields"] = [
                            dict(f, type=TypeDesc("any", why=f"{sub.name} re-declares it"))
                            if f["name"] == name else f for f in rec["fields"]
                        ]
                # the classes just marked may need building before they are opened
                while self.pending:
                    key = self.pending.pop(0)
                    if key not in self.classes:
                        self.order.append(key)
                        self.classes[key] = None
                        self.classes[key] = self.build_class(key)

    def subclasses_of(self, base: str) -> list:
        """(module, ast.ClassDef) of every class in the sources that derives from `base`."""
        if self.all_classes is None:
            self.all_classes = []
            for source in self.resolver.sources:
                for path in source.paths():
                    if "/tests/" in "/" + path or "/test_" in "/" + path:
                        continue
                    parts = path[:-3].split("/")
                    if parts[0] == "environments" and len(parts) > 2:
                        parts = parts[2:]  # a workspace package: environments/<dir>/<pkg>/...
                    if parts[-1] == "__init__":
                        parts = parts[:-1]
                    name = ".".join(parts)
                    if not name:
                        continue
                    try:
                        mod = self.resolver.module(name)
                    except SyntaxError:
                        continue
                    if mod is not None and mod.source is source and mod.path == path:
                        self.all_classes.extend((name, c) for c in mod.classes.values())
        out = []
        for module, cls in self.all_classes:
            if f"{module}.{cls.name}" != base and self.derives_from(module, cls, base, 0):
                out.append((module, cls))
        return out

    def derives_from(self, module: str, cls: ast.ClassDef, base: str, depth: int) -> bool:
        if depth > 30:
            return False
        for b in cls.bases:
            ref = self.resolver.resolve_expr(module, b)
            if ref.kind != "class":
                continue
            if f"{ref.module}.{ref.name}" == base:
                return True
            parent = self.resolver.module(ref.module).classes[ref.name]
            if self.derives_from(ref.module, parent, base, depth + 1):
                return True
        return False

    def build_field(self, module: str, node: ast.AnnAssign) -> Optional[dict]:
        name = node.target.id
        if name.startswith("_") or name == "model_config":
            return None
        ann = node.annotation
        # ClassVar[...] is not a field.
        if isinstance(ann, ast.Subscript):
            head = self.resolver.resolve_expr(module, ann.value)
            if external_meaning(head) == "ClassVar":
                return None
        elif external_meaning(self.resolver.resolve_expr(module, ann)) == "ClassVar":
            return None
        meta = Meta()
        ftype = self.convert(module, ann, meta)
        required = node.value is None
        default_text = ""
        default_model = ""
        value = node.value
        if isinstance(value, ast.Call) and external_meaning(
            self.resolver.resolve_expr(module, value.func)
        ) == "Field":
            info = self.field_call(module, value, meta)
            required = info["required"]
            if info["factory"] is not None:
                default_text = "default_factory=" + ast.unparse(info["factory"])
                default_model = self.model_of(module, info["factory"])
            elif info["default"] is not None:
                default_text = ast.unparse(info["default"])
                default_model = self.model_of_call(module, info["default"])
        elif value is not None:
            default_text = ast.unparse(value)
            default_model = self.model_of_call(module, value)
        if meta.discriminator and ftype.kind == "union":
            ftype.discriminator = meta.discriminator
        return {
            "name": name,
            "type": ftype,
            "required": required,
            "default": default_text,
            "default_model": default_model,
            "constraints": dict(meta.constraints),
            "finite": meta.finite,
            "aliases": list(meta.aliases),
            "after_validators": list(meta.after_validators),
        }

    def model_of_call(self, module: str, value: ast.expr) -> str:
        if isinstance(value, ast.Call):
            return self.model_of(module, value.func)
        return ""

    def model_of(self, module: str, expr: ast.expr) -> str:
        ref = self.resolver.resolve_expr(module, expr)
        if ref.kind == "class" and self.is_model(ref):
            return f"{ref.module}.{ref.name}"
        return ""


# --------------------------------------------------------------------------------------------
# C++ output.


def cpp_string(text: str) -> str:
    out = []
    for ch in text:
        if ch in '"\\':
            out.append("\\" + ch)
        elif ch == "\n":
            out.append("\\n")
        elif ch == "\t":
            out.append("\\t")
        elif ord(ch) < 0x20:
            out.append(f"\\{ord(ch):03o}")
        else:
            out.append(ch)
    # Split after a hex-looking escape is not needed: only octal escapes of 3 digits are used.
    return '"' + "".join(out) + '"'


def cpp_double(value: float) -> str:
    text = repr(float(value))
    if text in ("inf", "-inf", "nan"):
        raise ExtractError(f"unsupported bound {value}")
    return text


KIND_NAMES = {
    "any": "any",
    "none": "none",
    "boolean": "boolean",
    "integer": "integer",
    "floating": "floating",
    "string": "string",
    "path": "path",
    "list": "list",
    "dict": "dict",
    "model": "model",
    "union": "union_of",
    "literal": "literal",
}


class Emitter:
    def __init__(self, extractor: Extractor, roots: list[tuple[str, str]]):
        self.x = extractor
        self.roots = roots
        self.class_index = {key: i for i, key in enumerate(extractor.order)}
        self.types: list[tuple] = []  # (kind, item, first, count, discriminator)
        self.type_ids: dict[tuple, int] = {}
        self.alternatives: list[int] = []
        self.literals: list[tuple[str, str]] = []
        self.bounds: list[tuple] = [(0, 0.0, 0.0, 0.0, 0.0, 0, 0)]
        self.bounds_ids: dict[tuple, int] = {self.bounds[0]: 0}

    def type_id(self, t: TypeDesc) -> int:
        key = t.key()
        if key in self.type_ids:
            return self.type_ids[key]
        item = 0
        first = 0
        count = 0
        if t.kind in ("list", "dict"):
            item = self.type_id(t.item)
        elif t.kind == "model":
            item = self.class_index[t.model]
        elif t.kind == "union":
            ids = [self.type_id(a) for a in t.alternatives]
            first = len(self.alternatives)
            count = len(ids)
            self.alternatives.extend(ids)
        elif t.kind == "literal":
            first = len(self.literals)
            count = len(t.literals)
            self.literals.extend(t.literals)
        entry = (KIND_NAMES[t.kind], item, first, count, t.discriminator)
        self.type_ids[key] = len(self.types)
        self.types.append(entry)
        return self.type_ids[key]

    def bounds_id(self, f: dict) -> int:
        c = f["constraints"]
        flags = 0
        for bit, name in enumerate(("ge", "gt", "le", "lt", "min_length", "max_length")):
            if name in c:
                flags |= 1 << bit
        if f["finite"]:
            flags |= 1 << 6
        entry = (
            flags,
            c.get("ge", 0.0),
            c.get("gt", 0.0),
            c.get("le", 0.0),
            c.get("lt", 0.0),
            c.get("min_length", 0),
            c.get("max_length", 0),
        )
        if entry not in self.bounds_ids:
            self.bounds_ids[entry] = len(self.bounds)
            self.bounds.append(entry)
        return self.bounds_ids[entry]

    def text(self, value: str) -> int:
        """The offset of `value` in the string pool (each string once, NUL-terminated)."""
        if value not in self.pool:
            self.pool[value] = self.pool_size
            self.pool_size += len(value.encode()) + 1
        return self.pool[value]

    def emit(self, header: list[str], symbol: str, label: str) -> str:
        # Every string lives in one pool and the tables hold offsets: the tables are constant
        # data without relocations, paged in only when a check runs.
        self.pool: dict[str, int] = {}
        self.pool_size = 0
        self.text("")
        field_rows = []
        class_rows = []
        for key in self.x.order:
            rec = self.x.classes[key]
            first = len(field_rows)
            for f in rec["fields"]:
                tid = self.type_id(f["type"])
                dm = self.class_index.get(f["default_model"], -1) if f["default_model"] else -1
                field_rows.append(
                    (
                        self.text(f["name"]),
                        self.text("|".join(f["aliases"])),
                        self.text(f["default"]),
                        tid,
                        self.bounds_id(f),
                        f["required"],
                        dm,
                        f"{rec['name']}.{f['name']}",
                    )
                )
            class_rows.append(
                (
                    self.text(rec["name"]),
                    self.text(rec["module"]),
                    first,
                    len(rec["fields"]),
                    rec["extra"],
                    f"{rec['module']}.{rec['name']}",
                )
            )
        type_rows = [
            (kind, item, first, count, self.text(disc), disc)
            for kind, item, first, count, disc in self.types
        ]
        literal_rows = [(kind, self.text(text), text) for kind, text in self.literals]
        rewrite_rows = [
            (self.class_index[c], self.text(f), self.text(tag), self.text(k), f"{f}.{k} ({tag})")
            for (c, f, tag, k) in self.x.rewrites
        ]
        root_rows = [(self.text(name), self.class_index[key], name) for name, key in self.roots]

        out = []
        out.append("// SPDX-License-Identifier: MIT")
        out.append("// clang-format off")
        for line in header:
            out.append(f"// {line}".rstrip())
        out.append("#include <primebeaker/primerl/schema.hpp>")
        out.append("")
        out.append("namespace pb::primerl::schema {")
        out.append("")
        out.append("namespace {")
        out.append("")
        out.append("// Every string once; the tables below hold offsets into it.")
        out.append("const char k_text[] =")
        entries = list(self.pool.items())
        for i, (value, offset) in enumerate(entries):
            end = ";" if i + 1 == len(entries) else ""
            out.append(f"    {cpp_string(value)[:-1]}\\0\"{end} // {offset}")
        out.append("")
        out.append(
            f"// {len(class_rows)} classes, {len(field_rows)} fields, {len(self.types)} types."
        )
        out.append("// name, module, first field, field count, unknown keys")
        out.append("const Class k_classes[] = {")
        for i, (name, module, first, count, extra, what) in enumerate(class_rows):
            out.append(f"    {{{name}, {module}, {first}, {count}, Extra::{extra}}}, // {i} {what}")
        out.append("};")
        out.append("")
        out.append("// name, aliases ('|'-separated), default as written, type, bounds, required,")
        out.append("// class used when a discriminated union's key is omitted (-1: none)")
        out.append("const Field k_fields[] = {")
        for i, (name, aliases, default, tid, bid, required, dm, what) in enumerate(field_rows):
            out.append(
                f"    {{{name}, {aliases}, {default}, {tid}, {bid}, "
                f"{'true' if required else 'false'}, {dm}}}, // {i} {what}"
            )
        out.append("};")
        out.append("")
        out.append("// kind, item (list/dict value type, model class), first, count, discriminator")
        out.append("const Type k_types[] = {")
        for i, (kind, item, first, count, disc, shown) in enumerate(type_rows):
            note = f" {shown}" if shown else ""
            out.append(f"    {{Kind::{kind}, {item}, {first}, {count}, {disc}}}, // {i}{note}")
        out.append("};")
        out.append("")
        out.append("const std::uint16_t k_alternatives[] = {")
        out.extend(self.wrap([str(a) for a in self.alternatives] or ["0"]))
        out.append("};")
        out.append("")
        out.append("const Literal k_literals[] = {")
        for kind, offset, shown in literal_rows or [("string", 0, "")]:
            out.append(f"    {{LiteralKind::{kind}, {offset}}}, // {shown}".rstrip())
        out.append("};")
        out.append("")
        out.append("// flags (ge gt le lt min_length max_length finite), ge, gt, le, lt, min, max")
        out.append("const Bounds k_bounds[] = {")
        for flags, ge, gt, le, lt, mn, mx in self.bounds:
            out.append(
                f"    {{{flags}, {cpp_double(ge)}, {cpp_double(gt)}, {cpp_double(le)}, "
                f"{cpp_double(lt)}, {mn}, {mx}}},"
            )
        out.append("};")
        out.append("")
        out.append("// class, field, discriminator value, key: Prime-RL drops the key first")
        out.append("const Rewrite k_rewrites[] = {")
        for c, fld, tag, k, shown in rewrite_rows or [(0, 0, 0, 0, "")]:
            out.append(f"    {{{c}, {fld}, {tag}, {k}}}, // {shown}".rstrip())
        out.append("};")
        out.append("")
        out.append("const Root k_roots[] = {")
        for name, model, shown in root_rows:
            out.append(f"    {{{name}, {model}}}, // {shown}")
        out.append("};")
        out.append("")
        out.append("} // namespace")
        out.append("")
        out.append(f"const Schema &{symbol}() {{")
        out.append("  static constexpr Schema schema{")
        out.append(f"      {cpp_string(label)},")
        out.append("      k_text,")
        out.append("      k_classes,")
        out.append("      k_fields,")
        out.append("      k_types,")
        out.append("      k_alternatives,")
        out.append("      k_literals,")
        out.append("      k_bounds,")
        out.append(f"      {{k_rewrites, {len(rewrite_rows)}}},")
        out.append("      k_roots,")
        out.append("  };")
        out.append("  return schema;")
        out.append("}")
        out.append("")
        out.append("} // namespace pb::primerl::schema")
        return "\n".join(out) + "\n"

    @staticmethod
    def wrap(items: list[str], width: int = 96) -> list[str]:
        lines, line = [], "   "
        for item in items:
            piece = f" {item},"
            if len(line) + len(piece) > width:
                lines.append(line)
                line = "   "
            line += piece
        if line.strip():
            lines.append(line)
        return lines


# --------------------------------------------------------------------------------------------


def untyped_fields(extractor: Extractor) -> list[str]:
    """Class.field: why, for every value accepted untyped for a reason other than `Any`."""

    def whys(t: TypeDesc) -> list[str]:
        if t.kind == "any":
            return [t.why] if t.why and t.why != "Any" and t.why != "unparameterised" else []
        out = whys(t.item) if t.item else []
        for a in t.alternatives:
            out.extend(whys(a))
        return out

    lines = []
    for key in extractor.order:
        rec = extractor.classes[key]
        for f in rec["fields"]:
            for why in dict.fromkeys(whys(f["type"])):
                lines.append(f"{rec['name']}.{f['name']}: {why}")
    return lines


def normalised_fields(extractor: Extractor) -> list[str]:
    """Class.field: what its BeforeValidator maps, for every field read with one."""

    def notes(t: TypeDesc) -> list[str]:
        out = [t.note] if t.note else []
        if t.item:
            out.extend(notes(t.item))
        for a in t.alternatives:
            out.extend(notes(a))
        return out

    lines = []
    for key in extractor.order:
        rec = extractor.classes[key]
        for f in rec["fields"]:
            for note in dict.fromkeys(notes(f["type"])):
                lines.append(f"{rec['name']}.{f['name']}: {note}")
    return lines


def symbol_for(tag: str) -> str:
    return "prime_rl_" + re.sub(r"[^0-9A-Za-z]+", "_", tag).strip("_")


def shown_arguments(argv: list[str]) -> list[str]:
    """argv for the generated header, without this machine's paths."""
    placeholders = {"--git-dir": "<prime-rl git dir>", "--verifiers-git-dir": "<verifiers git dir>"}
    shown = []
    previous = ""
    for a in argv:
        name, eq, value = a.partition("=")
        if eq and name in placeholders:
            shown.append(f"{name}={placeholders[name]}")
        elif previous in placeholders:
            shown.append(placeholders[previous])
        elif os.path.isabs(a):
            shown.append(os.path.basename(a.rstrip("/")))
        else:
            shown.append(shlex.quote(a))
        previous = a
    return shown


def parse_root(text: str) -> tuple[str, str, str]:
    m = re.fullmatch(r"([A-Za-z_][A-Za-z0-9_]*)=([A-Za-z0-9_.]+):([A-Za-z_][A-Za-z0-9_]*)", text)
    if not m:
        raise argparse.ArgumentTypeError(f"--root wants NAME=module:Class, got {text!r}")
    return m.group(1), m.group(2), m.group(3)


def main(argv: list[str]) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--git-dir", help="a Prime-RL clone's git directory")
    p.add_argument("--tag", help="the release to read (with --git-dir)")
    p.add_argument(
        "--verifiers-git-dir",
        help="a verifiers clone's git directory: its classes are read at the commit the Prime-RL "
        "tag pins as deps/verifiers (without it they are accepted untyped)",
    )
    p.add_argument("--source-dir", action="append", default=[], help="a source tree (repeatable)")
    p.add_argument(
        "--overlay-dir",
        action="append",
        default=[],
        help="a tree of files (paths as in the --git-dir repository) read instead of the "
        "revision's own (repeatable): a fork's changed files on the release it is based on",
    )
    p.add_argument("--root", action="append", type=parse_root, default=[], help="NAME=module:Class")
    p.add_argument("--label", help="what the schema says it is (default: the tag or the dir)")
    p.add_argument("--symbol", help="C++ function name (default: prime_rl_<tag>)")
    p.add_argument("-o", "--output", help="output file (default: stdout)")
    p.add_argument("--validators", action="store_true", help="list model validators instead")
    p.add_argument(
        "--type-narrowed",
        action="store_true",
        help="type the configs verifiers narrows by an id at run time (env, taskset, harness) "
        "by their declared classes, accepting keys a subclass may add (without it they are "
        "accepted untyped)",
    )
    args = p.parse_args(argv)

    sources: list[Source] = []
    provenance: list[str] = []
    if args.git_dir:
        if not args.tag:
            p.error("--git-dir needs --tag")
        prime = GitSource(args.git_dir, args.tag, "prime-rl")
        sources.append(prime)
        provenance.append(f"PrimeIntellect-ai/prime-rl {args.tag} ({prime.commit})")
        pinned = prime.submodule_commit("deps/verifiers")
        if args.verifiers_git_dir:
            if pinned is None:
                raise ExtractError(f"{args.tag} pins no deps/verifiers commit")
            ver = GitSource(args.verifiers_git_dir, pinned, "verifiers")
            sources.append(ver)
            provenance.append(
                f"PrimeIntellect-ai/verifiers {pinned} (deps/verifiers of {args.tag})"
            )
        else:
            provenance.append("verifiers not read: its classes are accepted untyped")
    for d in args.overlay_dir:
        if not args.git_dir:
            p.error("--overlay-dir needs --git-dir")
        overlay = DirSource(d)
        sources.insert(0, overlay)
        provenance.append(
            f"overlaid with directory {os.path.basename(os.path.normpath(d))}: "
            + ", ".join(overlay.paths())
        )
    for d in args.source_dir:
        sources.append(DirSource(d))
        provenance.append(f"directory {os.path.basename(os.path.normpath(d))}")
    if not sources:
        p.error("give --git-dir and --tag, or --source-dir")
    roots = args.root or DEFAULT_ROOTS
    if not args.root and args.git_dir:
        scripts = prime.scripts()
        roots = roots + [OPTIONAL_ROOTS[s] for s in OPTIONAL_ROOTS if s in scripts]
    label = args.label or (f"Prime-RL {args.tag}" if args.tag else "source tree")
    symbol = args.symbol or symbol_for(args.tag or "source")

    extractor = Extractor(Resolver(sources))
    extractor.type_narrowed = args.type_narrowed
    out_roots = extractor.run(roots)

    if args.validators:
        lines = []
        for cls, name, mode, refuses in extractor.validators:
            module, _, short = cls.rpartition(".")
            where = module.rpartition(".")[2]
            what = "refuses" if refuses else "fills in"
            lines.append(f"- `{where}.{short}.{name}` ({mode.replace(':', ', ')}; {what})")
        seen = {}
        for key in extractor.order:
            rec = extractor.classes[key]
            for f in rec["fields"]:
                for v in f["after_validators"]:
                    seen.setdefault(v, []).append(f"{rec['name']}.{f['name']}")
        for v, where in seen.items():
            lines.append(f"- `AfterValidator({v})` on {len(where)} fields: " + ", ".join(
                f"`{w}`" for w in where[:4]) + (", ..." if len(where) > 4 else ""))
        text = "\n".join(lines) + "\n"
    else:
        emitter = Emitter(extractor, out_roots)
        fields = sum(len(extractor.classes[k]["fields"]) for k in extractor.order)
        command = "python3 tools/extract_schema.py " + " ".join(shown_arguments(argv))
        header = [
            "Generated by tools/extract_schema.py -- do not edit; regenerate instead",
            "(docs/primerl-schema.md):",
            f"  {command}",
            "Read from:",
            *[f"  {line}" for line in provenance],
            f"{len(extractor.order)} classes, {fields} fields, roots "
            + ", ".join(name for name, _ in out_roots)
            + ".",
        ]
        text = emitter.emit(header, symbol, label)
        untyped = untyped_fields(extractor)
        normalised = normalised_fields(extractor)
        insert = []
        if untyped:
            insert = ["// Accepted untyped:"] + [f"//   {w}" for w in untyped]
        if normalised:
            insert += ["// Normalised by a BeforeValidator (the booleans it maps take exactly "
                       "those):"] + [f"//   {w}" for w in normalised]
        if insert:
            lines = text.split("\n")
            at = lines.index("#include <primebeaker/primerl/schema.hpp>")
            text = "\n".join(lines[:at] + insert + lines[at:])

    if args.output:
        with open(args.output, "w", encoding="utf-8") as f:
            f.write(text)
    else:
        sys.stdout.write(text)
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main(sys.argv[1:]))
    except ExtractError as e:
        print(f"extract_schema.py: error: {e}", file=sys.stderr)
        sys.exit(1)
