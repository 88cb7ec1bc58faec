#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Chaos harness of the recovery controller (docs/recovery.md "The controller").

Per seed: the real `primebeaker rl submit` of a multi-node RL run against a fake `beaker`
(fake_beaker.py) whose world preempts the training experiments at random; the controller is run
from the spec rl submit created for it (the staged primebeaker and the staged beaker CLI), killed
outright at random moments (SIGKILL of its process group, `rl resume` child included) and started
again with a new job id, as Beaker's autoResume does; a terminal `follow --recover` sometimes
runs beside it and is killed too. The run ends succeeded after its last preemption, or preempted
past its budget.

About a third of the seeds are preempted before the run's first checkpoint: there is none when
the first experiment ends, and the run is resubmitted from the start; the checkpoints appear once
that new experiment runs.

Checks, per seed: every preemption within the budget is resubmitted exactly once, none past it,
never twice (the world refuses a taken name and counts it), each from the newest complete step
(from the start, said so in the ledger, when there was none), and the controller exits by itself
once the run has ended. Prints one JSON summary; exit 1 when a check failed.

  python3 bench/recovery/chaos.py --binary build/dev/primebeaker --seeds 100

--notify-sink record: the run is launched with `--notify` pointing at a local HTTP sink, and each
seed checks the posts (docs/notify.md): one `preempted` per preemption, one `resubmitted` naming
both experiments per resubmission, one `budget_spent` past the budget, one `succeeded`, never two.
--notify-sink hang: the sink accepts and never answers (a webhook that is down), to measure that
it delays no recovery (compare preempted_to_created_seconds with and without).
"""
import argparse
import json
import math
import os
import random
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

HERE = os.path.dirname(os.path.abspath(__file__))
sink_mode = None  # --notify-sink
POLL = 0.05  # the controller's poll here; on Beaker it is 30 s (k_controller_poll)
# Chaos rates as mean seconds between events (a hazard per second, so a loaded machine that runs
# the loop slowly gets the same chaos per second of wall time, not less).
KILL_CONTROLLER_MEAN = 2.0  # the controller (or, in the anchor, the terminal) killed outright
START_FOLLOWER_MEAN = 2.0   # a terminal `follow --recover` started beside the controller
KILL_FOLLOWER_MEAN = 5.0    # and killed


def toml_text(out):
    return f"""output_dir = "{out}"
max_steps = 100

[deployment]
type = "multi_node"
gpus_per_node = 8
num_train_nodes = 1
num_infer_nodes = 2

[trainer.model]
cp = 2
dp_replicate = 2

[inference]
api_server_count = 6
[inference.parallel]
tp = 2
dp = 6

[wandb]
project = "chaos"

[ckpt]
interval = 10

[orchestrator]
"""


def toml_v0_9(out, run):
    return f"""output_dir = "{out}"
max_steps = 100

[run]
name = "{run}"

[resume]

[model]
name = "Qwen/Qwen3-0.6B"

[deployment]
type = "multi_node"
gpus_per_node = 2
num_train_nodes = 2
num_infer_nodes = 1

[ckpt]
interval = 10

[monitors.wandb]
project = "chaos"

[trainer.optim]
lr = 3e-6

[orchestrator]
batch_size = 64

[[orchestrator.train.source]]
name = "reverse-text"

[orchestrator.train.source.env.taskset]
id = "reverse-text"

[inference.vllm]
tensor_parallel_size = 1
"""


def write(path, text):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        f.write(text)


def checkpoints_v0_9(run_dir):
    for step in (10, 20):
        write(f"{run_dir}/checkpoints/step_{step}/trainer/.metadata", "meta")
        for rank in range(4):
            write(f"{run_dir}/checkpoints/step_{step}/trainer/__{rank}_0.distcp", "shard")
        write(f"{run_dir}/checkpoints/step_{step}/orchestrator/progress.pt", "progress")


def checkpoints(out):
    for step in (10, 20):
        write(f"{out}/checkpoints/step_{step}/trainer/.metadata", "meta")
        for rank in range(4):
            write(f"{out}/checkpoints/step_{step}/trainer/__{rank}_0.distcp", "shard")
        write(f"{out}/run_default/checkpoints/step_{step}/orchestrator/progress.pt", "progress")


class Sink:
    """A local webhook: `record` keeps every POSTed JSON object by URL path; `hang` listens and
    never accepts, as a webhook that is down."""

    def __init__(self, mode):
        import socket
        self.posts = {}
        self.lock = threading.Lock()
        if mode == "hang":
            self.sock = socket.socket()
            self.sock.bind(("127.0.0.1", 0))
            self.sock.listen(1024)
            self.port = self.sock.getsockname()[1]
            return
        sink = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):
                body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
                with sink.lock:
                    sink.posts.setdefault(self.path, []).append(json.loads(body))
                self.send_response(200)
                self.end_headers()

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.port = self.server.server_address[1]
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def url(self, seed):
        return f"http://127.0.0.1:{self.port}/hook/{seed}"

    def of(self, seed):
        with self.lock:
            return list(self.posts.get(f"/hook/{seed}", []))


def check_posts(posts, injected, children, budget, outcome):
    """What the webhook must have been told, exactly once each."""
    problems = []
    seen = {}
    for p in posts:
        key = (p["event"], p["experiment_id"])
        seen[key] = seen.get(key, 0) + 1
    expected = {}
    for k, (eid, _) in enumerate(injected, start=1):
        expected[("preempted", eid)] = None
        kids = children.get(eid, [])
        if k <= budget and len(kids) == 1:
            expected[("resubmitted", kids[0]["id"])] = eid
        elif k > budget:
            expected[("budget_spent", eid)] = None
    for key, count in seen.items():
        if count > 1:
            problems.append(f"{count} posts of {key[0]} for {key[1]}")
    for key, previous in expected.items():
        if seen.get(key, 0) == 0:
            problems.append(f"no {key[0]} post for {key[1]}")
        elif previous is not None:
            got = [p for p in posts if (p["event"], p["experiment_id"]) == key][0]
            if got["previous_experiment_id"] != previous:
                problems.append(f"the {key[0]} post of {key[1]} names {got['previous_experiment_id']}, not {previous}")
    if outcome == "succeeded" and not any(p["event"] == "succeeded" for p in posts):
        problems.append("no succeeded post")
    return problems


class World:
    def __init__(self, path):
        self.path = path

    def edit(self, change):
        import fcntl
        with open(self.path + ".lock", "a") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            with open(self.path) as f:
                data = json.load(f)
            result = change(data)
            tmp = self.path + ".tmp"
            with open(tmp, "w") as f:
                json.dump(data, f)
            os.replace(tmp, self.path)
            return result

    def read(self):
        return self.edit(lambda data: data)


def ledger_dirs(out):
    """Every run's attempt ledger under `out` (v0.8.0: <out>/primebeaker_recovery/ledger/<run>;
    v0.9: the same under the run directory)."""
    found = []
    for root, dirs, _ in os.walk(out):
        if os.path.basename(root) == "ledger" and "primebeaker_recovery" in root:
            found += [os.path.join(root, d) for d in dirs]
            dirs[:] = []
    return found


def kill_group(proc):
    if proc is not None and proc.poll() is None:
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        proc.wait()


def run_seed(seed, binary, root, scratch, env_base, fakebin, timeout, generation, anchor=False,
             sink=None):
    rng = random.Random(seed)
    budget = rng.randint(1, 4)
    preemptions = rng.randint(1, budget + 1)  # one past the budget now and then
    early = rng.random() < 0.35  # preempted before the first checkpoint
    work = os.path.join(root, f"seed-{seed}" + ("-anchor" if anchor else ""))
    out = os.path.join(work, "out")
    if generation == "v0.9":  # Prime-RL v0.9's run directory, no registry
        def save():
            checkpoints_v0_9(f"{out}/chaos-{seed}")
        write(f"{work}/rl.toml", toml_v0_9(out, f"chaos-{seed}"))
        registry = []
    else:
        def save():
            checkpoints(out)
        write(f"{work}/rl.toml", toml_text(out))
        registry = ["--registry", "redis://registry:6379"]
    if not early:
        save()
    world_path = os.path.join(work, "world.json")
    write(world_path, json.dumps({"experiments": {}, "log": [], "next": seed * 1000}))
    env = dict(env_base, FAKE_BEAKER_WORLD=world_path, PATH=fakebin + ":" + env_base["PATH"],
               FAKE_BEAKER_CALLER="submit")
    submitted = subprocess.run(
        [binary, "rl", "submit", "--toml", f"{work}/rl.toml", "--yes", "--name", f"chaos-{seed}",
         *registry, "--max-recoveries", str(budget),
         "--mount-path", root, "--working-dir", work, "--scratch-dir", scratch,
         "--home-dir", work, *(["--notify", sink.url(seed)] if sink else [])],
        env=env, capture_output=True, text=True, timeout=120)
    if submitted.returncode != 0:
        raise SystemExit(f"seed {seed}: rl submit failed: {submitted.stderr}")
    receipt = json.loads(submitted.stdout)
    first = receipt["experiment_id"]
    world = World(world_path)
    data = world.read()
    controller = next(e for e in data["experiments"].values() if e["controller"])
    task = controller["spec"]["tasks"][0]
    command = list(task["command"])
    command[command.index("--poll-interval") + 1] = str(POLL)
    command[command.index("--recover-backoff") + 1] = "0"
    command += ["--claim-lease", "2"]
    controller_env = dict(env, BEAKER_EXPERIMENT_ID=controller["id"], FAKE_BEAKER_CALLER="controller")
    for var in task["envVars"]:
        if "value" in var:
            controller_env[var["name"]] = var["value"]
    controller_env["BEAKER_TOKEN"] = "token"

    jobs = 0
    proc = None
    follower = None
    kills = follower_runs = 0
    started = time.time()
    restart_at = started
    held = {}  # experiment -> when the world may end it
    injected = []  # (experiment, time)
    controller_exit = None
    outcome = None
    log_out = open(os.path.join(work, "controller.log"), "w")
    forced_kill = False

    def current(data):
        running = [e for e in data["experiments"].values()
                   if not e["controller"] and e["state"] == "running"]
        return running[0] if running else None

    last = started

    def chance(mean):  # an event of mean interval `mean` happened since the last iteration
        return rng.random() < 1 - math.exp(-(now - last) / mean)

    while time.time() - started < timeout:
        now = time.time()
        # The controller: started (again) unless it ended by itself.
        if anchor:
            # The anchor: before the controller, recovery ran in the user's terminal, which
            # closes (laptop lid, ssh drop) at the rate the controller is killed here, and
            # nothing brings it back.
            if follower is None and follower_runs == 0:
                follower_runs = 1
                follower = subprocess.Popen(
                    [command[0], "follow", first, "--recover", "--recover-backoff", "0",
                     "--poll-interval", str(POLL)],
                    env=dict(env, FAKE_BEAKER_CALLER="terminal"), stdout=subprocess.DEVNULL,
                    stderr=log_out, start_new_session=True)
            elif follower is not None and (follower.poll() is not None or chance(KILL_CONTROLLER_MEAN)):
                kill_group(follower)
                follower = None
                kills += 1
            stalled = follower is None and current(world.read()) is None
            if outcome is not None or (stalled and now - started > 1):
                outcome = outcome or "stalled: nobody resubmits"
                controller_exit = 0
                break
        elif proc is None and controller_exit is None and now >= restart_at:
            jobs += 1
            controller_env["BEAKER_JOB_ID"] = f"job-{jobs}"
            proc = subprocess.Popen(command, env=controller_env, stdout=log_out, stderr=log_out,
                                    start_new_session=True)
        if not anchor and proc is not None and proc.poll() is not None:
            controller_exit = proc.returncode
            proc = None
            if controller_exit != 0 or outcome is None:
                # Its own failure (Beaker would not restart it either), or it ended before the
                # run did: either way nobody recovers the run any more.
                break
        if not anchor and outcome is not None and controller_exit is not None:
            break
        # With the sink: the controller killed once right after its first post is settled
        # (its `.done` written: killed between the webhook's answer and that record, a post is
        # sent again, docs/notify.md "Exactly one post"), in the middle of the recovery.
        if (not anchor and proc is not None and sink is not None and sink_mode == "record"
                and not forced_kill and sink.of(seed) and any(
                    f.endswith(".done") for d in ledger_dirs(out)
                    for f in (os.listdir(os.path.join(d, "notify"))
                              if os.path.isdir(os.path.join(d, "notify")) else []))):
            forced_kill = True
            kill_group(proc)
            proc = None
            kills += 1
            restart_at = now + 0.1
        # Chaos: the controller killed outright, restarted a moment later.
        if not anchor and proc is not None and chance(KILL_CONTROLLER_MEAN):
            kill_group(proc)
            proc = None
            kills += 1
            restart_at = now + rng.uniform(0.05, 0.4)
        # A terminal follower beside it now and then, killed at random too.
        if anchor:
            pass
        elif follower is None and chance(START_FOLLOWER_MEAN):
            follower_runs += 1
            follower = subprocess.Popen(
                [command[0], "follow", first, "--recover", "--recover-backoff", "0",
                 "--poll-interval", str(POLL), "--claim-lease", "2"],
                env=dict(env, FAKE_BEAKER_CALLER="terminal"), stdout=subprocess.DEVNULL,
                stderr=log_out, start_new_session=True)
        elif follower is not None and (follower.poll() is not None or chance(KILL_FOLLOWER_MEAN)):
            kill_group(follower)
            follower = None

        # The world: the running training experiment is preempted, or finishes after the last.
        def step(data):
            e = current(data)
            if e is None:
                return None
            until = held.setdefault(e["id"], now + rng.uniform(0.2, 0.6))
            if now < until:
                return None
            if len(injected) < preemptions:
                e["state"], e["ended"] = "preempted", now
                return ("preempted", e["id"])
            e["state"], e["ended"] = "succeeded", now
            return ("succeeded", e["id"])
        changed = world.edit(step)
        if early and injected and not os.path.isdir(out + "/checkpoints") and not os.path.isdir(
                f"{out}/chaos-{seed}/checkpoints"):
            # The run resubmitted from the start saves its steps once it runs.
            e = current(world.read())
            if e is not None and e["id"] != first:
                save()
        if changed:
            if changed[0] == "preempted":
                injected.append((changed[1], now))
                if len(injected) > budget:
                    outcome = "preempted past the budget"
            else:
                outcome = "succeeded"
        last = now
        time.sleep(0.02)

    kill_group(proc)
    kill_group(follower)
    log_out.close()
    data = world.read()
    trainings = [e for e in data["experiments"].values() if not e["controller"]]
    children = {}
    for e in trainings:
        if e["parent"]:
            children.setdefault(e["parent"], []).append(e)
    recovered = duplicates = from_start = 0
    latencies = []
    problems = []
    for k, (eid, when) in enumerate(injected, start=1):
        kids = children.get(eid, [])
        if k <= budget:
            if len(kids) == 1:
                recovered += 1
                latencies.append(kids[0]["created"] - when)
            elif not kids:
                problems.append(f"preemption {k} of {eid} was not recovered")
        elif kids:
            problems.append(f"preemption {k} past the budget {budget} was resubmitted")
        duplicates += max(0, len(kids) - 1)
        for kid in kids:  # each resumes from the newest complete step, 20, pinned in its TOML
            env = {v["name"]: v.get("value") for v in kid["spec"]["tasks"][0]["envVars"]}
            with open(env["CONFIG_PATH"]) as f:
                pinned = f.read()
            pins = ("step = 20" if generation == "v0.9" else "resume_step = 20") in pinned
            if early and k == 1:  # no checkpoint yet: from the start, and the ledger says so
                said = [json.load(open(os.path.join(d, "claims", f"{eid}.child.json")))
                        for d in ledger_dirs(out)
                        if os.path.exists(os.path.join(d, "claims", f"{eid}.child.json"))]
                if pins:
                    problems.append(f"{kid['id']} pins step 20, which did not exist yet")
                elif not said or said[0].get("from") != "start":
                    problems.append(f"the ledger does not say {kid['id']} started from the start")
                else:
                    from_start += 1
            elif not pins:
                problems.append(f"{kid['id']} does not resume from step 20")
    if duplicates:
        problems.append(f"{duplicates} duplicate resubmission(s)")
    posts = []
    if sink is not None and sink_mode == "record":
        time.sleep(0.5)  # the last post is in flight when the controller ends
        posts = sink.of(seed)
        problems += check_posts(posts, injected, children, budget, outcome)
    if controller_exit != 0:
        problems.append(f"the controller did not end by itself (exit {controller_exit})")
    elif outcome is None and not anchor:
        problems.append("the controller ended before the run did")
    if outcome is None:
        problems.append("the run did not end within the timeout")
    if problems:  # what the controller and followers last said, to tell why
        with open(os.path.join(work, "controller.log")) as f:
            problems.append("log tail: " + " | ".join(f.read().splitlines()[-25:]))
    refused = sum(1 for c in data["log"] if c.get("refused"))
    polls = sum(1 for c in data["log"] if c["caller"] == "controller" and c["argv"][:2] == ["experiment", "get"])
    return {"seed": seed, "budget": budget, "injected": len(injected),
            "within_budget": min(len(injected), budget), "recovered": recovered,
            "duplicates": duplicates, "name_refusals": refused, "early": early,
            "from_start": from_start, "controller_kills": kills,
            "controller_starts": jobs, "terminal_followers": follower_runs,
            "controller_exit": controller_exit, "outcome": outcome,
            "latencies": latencies, "controller_gets": polls, "problems": problems,
            "posts": [{k: p[k] for k in ("event", "experiment_id", "previous_experiment_id")}
                      for p in posts],
            "seconds": round(time.time() - started, 2)}


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--binary", default="build/dev/primebeaker")
    parser.add_argument("--seeds", type=int, default=100)
    parser.add_argument("--first-seed", type=int, default=1)
    parser.add_argument("--timeout", type=float, default=180,
                        help="seconds a seed may take (a loaded machine is slow)")
    parser.add_argument("--keep", action="store_true", help="keep the temporary directory")
    parser.add_argument("--anchor", action="store_true",
                        help="also run every seed with no controller, only a terminal follower "
                             "that is killed at the same rate and never restarted, and print "
                             "the ratio of recoveries")
    parser.add_argument("--generation", choices=("v0.8.0", "v0.9"), default="v0.8.0",
                        help="the Prime-RL generation of the run's TOML")
    parser.add_argument("--notify-sink", choices=("record", "hang"),
                        help="launch with --notify to a local sink that records and checks the "
                             "posts, or that hangs (a webhook that is down)")
    args = parser.parse_args()
    binary = os.path.abspath(args.binary)
    root = tempfile.mkdtemp(prefix="pb-chaos-")
    fakebin = os.path.join(root, "bin")
    os.makedirs(fakebin)
    with open(os.path.join(HERE, "fake_beaker.py")) as f:
        fake = f.read().split("\n", 1)[1]
    with open(os.path.join(fakebin, "beaker"), "w") as f:  # this interpreter: no shim per call
        f.write(f"#!{sys.executable} -S\n" + fake)
    os.chmod(os.path.join(fakebin, "beaker"), 0o755)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("BEAKER_", "PRIMEBEAKER_"))}
    results = []
    anchors = []
    global sink_mode
    sink_mode = args.notify_sink
    sink = Sink(args.notify_sink) if args.notify_sink else None
    try:
        for seed in range(args.first_seed, args.first_seed + args.seeds):
            results.append(run_seed(seed, binary, root, os.path.join(root, "scratch"), env,
                                    fakebin, args.timeout, args.generation, sink=sink))
            if args.anchor:
                anchors.append(run_seed(seed, binary, root, os.path.join(root, "scratch"), env,
                                        fakebin, args.timeout, args.generation, anchor=True))
    finally:
        if not args.keep:
            shutil.rmtree(root, ignore_errors=True)
    latencies = [x for r in results for x in r["latencies"]]
    summary = {
        "seeds": len(results),
        "generation": args.generation,
        "preemptions_injected": sum(r["injected"] for r in results),
        "within_budget": sum(r["within_budget"] for r in results),
        "recovered": sum(r["recovered"] for r in results),
        "duplicate_resubmissions": sum(r["duplicates"] for r in results),
        "preempted_before_first_checkpoint": sum(r["early"] for r in results),
        "resubmitted_from_the_start": sum(r["from_start"] for r in results),
        "name_refusals": sum(r["name_refusals"] for r in results),
        "controller_kills": sum(r["controller_kills"] for r in results),
        "terminal_followers": sum(r["terminal_followers"] for r in results),
        "controller_ended_by_itself": sum(r["controller_exit"] == 0 for r in results),
        "poll_seconds": POLL,
        "chaos_mean_seconds": {"controller_killed": KILL_CONTROLLER_MEAN,
                               "terminal_started": START_FOLLOWER_MEAN,
                               "terminal_killed": KILL_FOLLOWER_MEAN},
        "preempted_to_created_seconds": {
            "median": round(statistics.median(latencies), 3) if latencies else None,
            "max": round(max(latencies), 3) if latencies else None},
        "notify_sink": args.notify_sink,
        "notify_posts": sum(len(r["posts"]) for r in results),
        "problems": [f"seed {r['seed']}: {p}" for r in results for p in r["problems"]],
    }
    if anchors:
        recovered = sum(r["recovered"] for r in anchors)
        within = sum(r["within_budget"] for r in anchors)
        summary["anchor_terminal_only"] = {
            "within_budget": within, "recovered": recovered,
            "duplicate_resubmissions": sum(r["duplicates"] for r in anchors)}
        ours = summary["recovered"] / summary["within_budget"] if summary["within_budget"] else 0
        theirs = recovered / within if within else 0
        # Share of the preemptions within budget that were recovered, ours over the anchor's.
        summary["recovered_share_ratio"] = round(ours / theirs, 2) if theirs else None
    if os.environ.get("CHAOS_PER_SEED"):
        summary["per_seed"] = results
    print(json.dumps(summary, indent=2))
    return 1 if summary["problems"] else 0


if __name__ == "__main__":
    sys.exit(main())
