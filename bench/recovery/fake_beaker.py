#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""A fake `beaker` CLI over a shared world file, for the recovery chaos harness (chaos.py).

The world (FAKE_BEAKER_WORLD, a JSON file guarded by a lock file beside it) holds experiments
created with `experiment create`; the harness changes their state (preempts, finishes them).
Experiment names are unique per author, as on Beaker: a second create under a taken name is
refused, which is what makes a taken-over resubmission safe. Every call is appended to the log.
Answers have the shape of docs/runs.md's `beaker experiment get` output.
"""
import fcntl
import json
import os
import sys
import time

WORLD = os.environ["FAKE_BEAKER_WORLD"]
AUTHOR = "jdoe"


def stamp(t):
    if t is None:
        return "0001-01-01T00:00:00Z"
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(t)) + ".%03dZ" % int((t % 1) * 1000)


class World:
    def __enter__(self):
        self.lock = open(WORLD + ".lock", "a")
        fcntl.flock(self.lock, fcntl.LOCK_EX)
        try:
            with open(WORLD) as f:
                self.data = json.load(f)
        except FileNotFoundError:
            self.data = {"experiments": {}, "log": [], "next": 0}
        return self

    def __exit__(self, *exc):
        tmp = WORLD + ".tmp"
        with open(tmp, "w") as f:
            json.dump(self.data, f)
        os.replace(tmp, WORLD)
        fcntl.flock(self.lock, fcntl.LOCK_UN)
        self.lock.close()


def jobs_of(e):
    jobs = []
    task = e["spec"]["tasks"][0]
    replicas = task.get("replicas", 1)
    for rank in range(replicas):
        state = e["state"]
        status = {"created": stamp(e["created"]), "scheduled": stamp(e["created"]),
                  "started": stamp(e["created"]), "exited": stamp(None), "failed": stamp(None),
                  "finalized": stamp(None), "canceled": stamp(None), "canceledCode": 0}
        if state != "running":
            status["exited"] = stamp(e["ended"])
            status["finalized"] = stamp(e["ended"])
            status["exitCode"] = 1 if state == "failed" else 0
        if state == "preempted":
            status["canceled"] = stamp(e["ended"])
            status["canceledCode"] = 1
            status["canceledFor"] = "preempted by a higher priority job"
        if state == "canceled":
            status["canceled"] = stamp(e["ended"])
            status["canceledCode"] = 4
            status["canceledFor"] = "stopped by user"
        jobs.append({"id": "%sJ%d" % (e["id"], rank), "kind": "execution",
                     "name": "%s-replica-%d" % (task["name"], rank), "node": "node-%d" % rank,
                     "status": status,
                     "execution": {"task": e["id"] + "T", "experiment": e["id"],
                                   "replicaRank": rank,
                                   "spec": task if rank == 0 else {"name": task["name"]}}})
    return jobs


def view(e):
    return {"id": e["id"], "name": e["name"], "fullName": AUTHOR + "/" + e["name"],
            "description": e["spec"].get("description", ""), "author": {"name": AUTHOR},
            "created": stamp(e["created"]), "workspaceRef": {"fullName": e["workspace"]},
            "jobs": jobs_of(e)}


def find(world, ref):
    if ref in world.data["experiments"]:
        return world.data["experiments"][ref]
    name = ref.split("/", 1)[1] if "/" in ref else ref
    for e in world.data["experiments"].values():
        if e["name"] == name:
            return e
    return None


def main(argv):
    words = [a for a in argv if a not in ("--format", "json")]
    with World() as world:
        world.data["log"].append({"t": time.time(), "argv": argv,
                                  "caller": os.environ.get("FAKE_BEAKER_CALLER", "")})
        if words[:2] == ["account", "whoami"]:
            print(json.dumps([{"name": AUTHOR}]))
            return 0
        if words[:2] == ["secret", "list"]:
            print(json.dumps([{"name": n} for n in ("BEAKER_TOKEN", "WANDB_API_KEY", "HF_TOKEN")]))
            return 0
        if words[:2] == ["image", "get"]:
            print(json.dumps([{"id": "01IMAGE", "fullName": words[2], "committed": stamp(1e9),
                               "workspaceRef": {"fullName": "ai2/oe-agents"}}]))
            return 0
        if words[:2] == ["experiment", "create"]:
            name = words[words.index("--name") + 1]
            workspace = words[words.index("--workspace") + 1]
            spec_path = words[-1]
            if find(world, AUTHOR + "/" + name) is not None:
                world.data["log"][-1]["refused"] = "name taken"
                sys.stderr.write("experiment name %r is already in use\n" % name)
                return 1
            with open(spec_path) as f:
                spec = json.load(f)
            world.data["next"] += 1
            eid = "01CHAOS%019d" % world.data["next"]
            env = {v["name"]: v.get("value") for v in spec["tasks"][0].get("envVars", [])}
            world.data["experiments"][eid] = {
                "id": eid, "name": name, "workspace": workspace, "spec": spec,
                "created": time.time(), "ended": None, "state": "running",
                "parent": env.get("PRIMEBEAKER_RESUME_PARENT_EXPERIMENT_ID"),
                "controller": spec["tasks"][0]["name"] == "recovery-controller"}
            world.data["log"][-1]["created"] = eid
            print(json.dumps([{"id": eid, "name": name}]))
            return 0
        if words[:2] == ["experiment", "get"]:
            e = find(world, words[2])
            if e is None:
                sys.stderr.write("experiment %s not found\n" % words[2])
                return 1
            print(json.dumps([view(e)]))
            return 0
        if words[:2] == ["experiment", "stop"]:
            for ref in words[2:]:
                e = find(world, ref)
                if e is not None and e["state"] == "running":
                    e["state"], e["ended"] = "canceled", time.time()
                print(ref)
            return 0
        if words[:2] == ["job", "get"]:
            out = []
            for e in world.data["experiments"].values():
                for job in jobs_of(e):
                    if job["id"] in words[2:]:
                        out.append(job)
            print(json.dumps(out))
            return 0
        if words[:2] == ["job", "logs"]:
            return 0
    sys.stderr.write("fake beaker: unexpected call: %s\n" % " ".join(argv))
    return 97


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
