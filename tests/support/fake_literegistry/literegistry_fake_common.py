# SPDX-License-Identifier: MIT
"""A fake LiteRegistry for the tests (tests/services/fake_literegistry.hpp) and bench/evaluation:
what the two launcher packages share. Every config the launchers are given is recorded (field ->
type and value) to $FAKE_LITEREGISTRY_RECORD when it is set; submit and stop run the `beaker`
found on PATH, like the real launchers."""
import dataclasses, json, os, subprocess, tempfile
from typing import Optional, Tuple, Union

def record(call, **payload):
    path = os.environ.get("FAKE_LITEREGISTRY_RECORD")
    if path:
        with open(path, "a", encoding="utf-8") as out:
            out.write(json.dumps(dict(call=call, **payload)) + "\n")

def track(cls):
    """Remembers exactly the keyword arguments a config was constructed with."""
    original = cls.__init__
    def __init__(self, **kwargs):
        original(self, **kwargs)
        object.__setattr__(self, "_given", {k: {"type": type(v).__name__, "value": v}
                                            for k, v in kwargs.items()})
    cls.__init__ = __init__
    return cls

def describe(config):
    return config._given

def run_beaker(argv, what):
    result = subprocess.run(argv, capture_output=True, text=True)
    if result.returncode != 0:
        raise RuntimeError(f"Beaker could not create {what}: {result.stderr.strip()}")
    return result.stdout

class Launcher:
    kind = "base deployment"
    def __init__(self, config):
        config.validate()
        self.config = config
    def name(self):
        return f"{self.config.name_prefix}-fake"
    def spec(self):
        return {"version": "v2", "description": f"fake {self.kind}: {self.name()}",
                "budget": self.config.budget, "tasks": [{"name": "gateway"}]}
    def preview(self):
        print("upstream chatter on stdout")
        record("preview", config=describe(self.config))
        return {"experiment_name": self.name(), "config": dataclasses.asdict(self.config),
                "spec": self.spec()}
    def submit(self):
        record("submit", config=describe(self.config))
        with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as spec:
            json.dump(self.spec(), spec)
        try:
            out = run_beaker(["beaker", "--format", "json", "experiment", "create", "-n",
                              self.name(), "-w", self.config.workspace, spec.name],
                             f"{self.kind} {self.name()}")
        finally:
            os.unlink(spec.name)
        return {"experiment_name": self.name(), "beaker": json.loads(out)}
    @staticmethod
    def stop(experiment_id, dry_run=False):
        command = ["beaker", "experiment", "stop", experiment_id]
        record("stop", experiment_id=experiment_id, dry_run=dry_run)
        if not dry_run:
            result = subprocess.run(command, capture_output=True, text=True)
            if result.returncode != 0:
                raise RuntimeError(f"beaker experiment stop failed: {result.stderr.strip()}")
        return {"command": command, "dry_run": dry_run}
