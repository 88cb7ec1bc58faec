# SPDX-License-Identifier: MIT
# primebeaker's bridge to LiteRegistry's own Python launchers (docs/services.md).
# Run as `python3 -c <this file>`; reads one JSON request on stdin, writes one JSON answer on
# stdout. Everything else that is printed (by upstream code or its children) goes to stderr.
import dataclasses
import importlib
import inspect
import json
import os
import sys
import traceback
import typing

if sys.path and sys.path[0] == "":
    del sys.path[0]  # -c puts the current directory first; never import from it

STACKS = {
    "base": ("literegistry_base_deployment", "BaseDeploymentConfig",
             "BaseDeploymentLauncher", "literegistry-base-deployment"),
    "podman": ("literegistry_podman_beaker", "PodmanStackConfig",
               "PodmanStackLauncher", "literegistry-podman-beaker"),
}
TRUE_WORDS = {"true", "yes", "on", "1"}
FALSE_WORDS = {"false", "no", "off", "0"}
NONE_WORDS = {"none", "null"}


class Failure(Exception):
    def __init__(self, **payload):
        super().__init__(payload.get("message", ""))
        self.payload = dict(ok=False, **payload)


def describe(error):
    return f"{type(error).__name__}: {error}"


def load_stack(name):
    module_name, config_name, launcher_name, distribution = STACKS[name]
    try:
        module = importlib.import_module(module_name)
    except ImportError as error:
        raise Failure(error="missing_package", module=module_name, requirement=distribution,
                      message=describe(error))
    try:
        return getattr(module, config_name), getattr(module, launcher_name)
    except AttributeError as error:
        raise Failure(error="missing_package", module=module_name, requirement=distribution,
                      message=describe(error))


def field_types(config_class):
    try:
        hints = typing.get_type_hints(config_class)
    except Exception:
        hints = {}
    if dataclasses.is_dataclass(config_class):
        return {f.name: hints.get(f.name, f.type) for f in dataclasses.fields(config_class)
                if f.init}
    parameters = inspect.signature(config_class).parameters
    return {n: hints.get(n, p.annotation) for n, p in parameters.items()
            if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)}


def is_union(hint):
    origin = typing.get_origin(hint)
    return origin is typing.Union or type(hint).__name__ == "UnionType"


def sequence_kind(hint):
    origin = typing.get_origin(hint) or hint
    if origin in (tuple, list):
        return origin
    return None


def split_list(texts):
    items = []
    for text in texts:
        stripped = text.strip()
        if stripped.startswith("["):
            parsed = json.loads(stripped)
            if not isinstance(parsed, list):
                raise ValueError("expected a JSON list")
            items.extend(parsed)
        else:
            items.extend(piece.strip() for piece in text.split(",") if piece.strip())
    return items


def convert_text(texts, hint):
    """Turns command-line text into the field's declared type (Fire would guess instead)."""
    if hint is None or hint is inspect.Parameter.empty or hint is typing.Any:
        if len(texts) != 1:
            raise ValueError("given more than once")
        return texts[0]
    if is_union(hint):
        options = [a for a in typing.get_args(hint) if a is not type(None)]
        if type(None) in typing.get_args(hint) and len(texts) == 1 \
                and texts[0].strip().lower() in NONE_WORDS:
            return None
        # Most specific first: a number or list before falling back to plain text.
        options.sort(key=lambda a: 1 if a is str else 0)
        errors = []
        for option in options:
            try:
                return convert_text(texts, option)
            except (ValueError, TypeError) as error:
                errors.append(str(error))
        raise ValueError("; ".join(errors) or "unsupported type")
    kind = sequence_kind(hint)
    if kind is not None:
        items = split_list(texts)
        return tuple(items) if kind is tuple else items
    if len(texts) != 1:
        raise ValueError("given more than once")
    text = texts[0]
    if hint is bool:
        word = text.strip().lower()
        if word in TRUE_WORDS:
            return True
        if word in FALSE_WORDS:
            return False
        raise ValueError(f"expected true or false, got {text!r}")
    if hint is int:
        try:
            return int(text.strip(), 10)
        except ValueError:
            raise ValueError(f"expected an integer, got {text!r}")
    if hint is float:
        try:
            return float(text.strip())
        except ValueError:
            raise ValueError(f"expected a number, got {text!r}")
    if hint is str:
        return text
    raise ValueError(f"cannot convert command-line text to {hint!r}")


def build_kwargs(config_class, fields):
    types = field_types(config_class)
    unknown = []
    kwargs = {}
    for field in fields:
        name = field["name"]
        value = field["value"]
        if name not in types and name.startswith("no_") and types.get(name[3:]) is bool \
                and value is True and field.get("from_text"):
            name, value, field = name[3:], False, dict(field, from_text=False)
        if name not in types:
            unknown.append(field["name"])
            continue
        if field.get("from_text"):
            texts = value if isinstance(value, list) else [value]
            if any(t is True for t in texts):  # a bare flag
                if types[name] is bool or (is_union(types[name]) and bool in typing.get_args(types[name])):
                    value = True
                else:
                    raise Failure(error="bad_value", field=field["name"],
                                  message="needs a value")
            else:
                try:
                    value = convert_text([str(t) for t in texts], types[name])
                except (ValueError, TypeError) as error:
                    raise Failure(error="bad_value", field=field["name"], message=str(error))
        elif field.get("as_tuple") and isinstance(value, list):
            value = tuple(value)
        kwargs[name] = value
    if unknown:
        raise Failure(error="unknown_fields", fields=unknown, known=sorted(types),
                      config_class=config_class.__name__)
    return kwargs


def make_launcher(request):
    config_class, launcher_class = load_stack(request["stack"])
    kwargs = build_kwargs(config_class, request.get("fields", []))
    try:
        config = config_class(**kwargs)
        launcher = launcher_class(config)
    except Exception as error:
        raise Failure(error="invalid_config", config_class=config_class.__name__,
                      message=describe(error))
    return config_class, launcher


def handle(request):
    action = request["action"]
    if action == "preview":
        config_class, launcher = make_launcher(request)
        try:
            return launcher.preview()
        except Exception as error:
            raise Failure(error="invalid_config", config_class=config_class.__name__,
                          message=describe(error))
    if action == "submit":
        _, launcher = make_launcher(request)
        try:
            return launcher.submit()
        except Exception as error:
            raise Failure(error="launcher_failed", message=describe(error))
    if action == "stop":
        _, launcher_class = load_stack(request["stack"])
        try:
            return launcher_class.stop(request["experiment_id"], dry_run=request["dry_run"])
        except Exception as error:
            raise Failure(error="launcher_failed", message=describe(error))
    if action == "version":
        from importlib import metadata
        try:
            return {"version": metadata.version(request["distribution"])}
        except metadata.PackageNotFoundError:
            return {"version": None}
    if action == "unpack":
        return unpack(request["archive"], request["destination"])
    raise Failure(error="internal", message=f"unknown action {action!r}")


def unpack(archive, destination):
    """Extracts a source archive, refusing anything that could escape `destination`."""
    import tarfile
    destination = os.path.realpath(destination)
    os.makedirs(destination, exist_ok=True)
    with tarfile.open(archive, "r:*") as tar:
        members = tar.getmembers()
        for member in members:
            target = os.path.realpath(os.path.join(destination, member.name))
            inside = target == destination or target.startswith(destination + os.sep)
            if os.path.isabs(member.name) or not inside:
                raise Failure(error="unsafe_archive",
                              message=f"unsafe path in {archive}: {member.name}")
            if not (member.isfile() or member.isdir()):
                raise Failure(error="unsafe_archive",
                              message=f"unsafe member in {archive}: {member.name} "
                                      "(links and devices are refused)")
        # Python's own "data" filter (3.12, backported to 3.11.4) re-checks the same rules.
        extra = {"filter": "data"} if hasattr(tarfile, "data_filter") else {}
        for member in members:
            tar.extract(member, destination, **extra)
    roots = sorted(os.listdir(destination))
    if len(roots) != 1 or not os.path.isdir(os.path.join(destination, roots[0])):
        raise Failure(error="unsafe_archive",
                      message=f"expected one source root in {archive}, found {len(roots)}")
    return {"root": os.path.join(destination, roots[0])}


def main():
    answer_fd = os.dup(1)
    os.dup2(2, 1)  # upstream prints and child processes must not corrupt the answer
    sys.stdout = sys.stderr
    try:
        answer = {"ok": True, "result": handle(json.load(sys.stdin))}
    except Failure as failure:
        answer = failure.payload
    except BaseException as error:  # noqa: B902 - report everything as JSON
        answer = {"ok": False, "error": "internal", "message": describe(error),
                  "traceback": traceback.format_exc()}
    with os.fdopen(answer_fd, "w", encoding="utf-8") as out:
        out.write(json.dumps(answer, default=str))
        out.write("\n")


if __name__ == "__main__":  # as `python3 -c`; other helpers may exec this source
    main()
