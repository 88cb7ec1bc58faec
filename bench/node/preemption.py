#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Fault injection: runs that survive preemption without a human (docs/recovery.md).

Each seed runs N real `primebeaker node rl` (or `node sft`) replicas on this machine with fake
Prime-RL programs on PATH that train in lock-step and write checkpoint step directories shard by
shard (trainer: one __<rank>_0.distcp per rank, then .metadata; orchestrator: progress.pt), then
kills every replica at a random moment - a random time, or while a checkpoint is half written -
with SIGKILL or SIGTERM, and starts them again with a new BEAKER_JOB_ID, as Beaker does after a
preemption. After 1-3 preemptions the run goes to the end. Checked for every seed:

  - nothing incomplete (and never -1) is handed to Prime-RL: the fake programs check the step
    they are told to resume from against the checkpoint rule of docs/checkpoints.md;
  - no complete step is lost or touched: every step complete at a kill is still complete, with
    the same files, at the end; everything moved aside is incomplete;
  - at most one checkpoint interval of trained steps is lost per preemption;
  - the W&B run id never changes; the attempt ledger lists every start that trained, with the
    right causes; the run finishes with every step;
  - per start after the first, the ledger's steps_lost is exactly the trained steps past the
    resume step that the disk showed after the kill (trainer-side step directories, RL
    broadcasts; never the rollouts the orchestrator writes ahead), never more than the trained
    steps lost as the fakes logged them, and fewer only by what was not on disk yet (RL: the one
    step trained and not yet broadcast; SFT, which writes nothing per step: the steps since its
    last save began). docs/recovery.md "Work lost".

Figures: seeds that survived, trained steps lost per preemption (median/max, against the
interval) and the ledger's figure for the same starts, seconds from a replica's start to
Prime-RL's trainer starting (fakes load no model).

usage: python3 bench/node/preemption.py --binary build/primebeaker [--seeds 100] [--first-seed 1]
       [--kind both] [--nodes 2] [--max-steps 24] [--interval 4] [--json FILE] [--quiet]
Exit 0 when every seed survived with every check, 1 otherwise.
"""
import argparse
import json
import os
import random
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

# --- fake Prime-RL config code (run by the node runtime's config helper) ------------------------

FAKE_RL_CONFIG = '''
import json, os
from pathlib import Path
from types import SimpleNamespace as NS
class RLConfig:
    @staticmethod
    def model_validate(raw):
        ckpt = raw.get("ckpt") or {}
        if ckpt.get("resume_step") == -1:
            with open(os.environ["PB_CTL"] + "/violations", "a") as h:
                h.write("config helper handed ckpt.resume_step = -1 to Prime-RL\\n")
        inf = raw["inference"]
        return NS(raw=raw, output_dir=Path(raw["output_dir"]), env_vars={},
                  inference=NS(router=NS(policy="round_robin"), enable_expert_parallel=False,
                               parallel=NS(dp=inf["parallel"]["dp"], tp=1), server=NS(port=8000),
                               backend_port=8100, env_vars={}),
                  weight_broadcast=NS(type="filesystem"), rollout_transport=NS(type="filesystem"),
                  trainer=NS(env_vars={}, log=NS(ranks_filter=[0]), weight_broadcast=NS()),
                  orchestrator=NS(env_vars={}, weight_broadcast=NS()))
'''
FAKE_RL_ENTRY = '''
import json
def write_subconfigs(config, config_dir):
    for name in ("trainer", "orchestrator", "inference"):
        (config_dir / f"{name}.json").write_text(json.dumps(config.raw))
'''
FAKE_SFT_CONFIG = '''
import os
from types import SimpleNamespace as NS
class SFTConfig:
    @staticmethod
    def model_validate(raw):
        if (raw.get("ckpt") or {}).get("resume_step") == -1:
            with open(os.environ["PB_CTL"] + "/violations", "a") as h:
                h.write("config helper handed ckpt.resume_step = -1 to Prime-RL\\n")
        return NS(raw=raw, env_vars={}, log=NS(ranks_filter=[0]))
'''
FAKE_SFT_ENTRY = '''
import json
def write_config(config, path, exclude):
    path.with_suffix(".json").write_text(json.dumps(config.raw))
    path.write_text("# fake\\n")
'''
FAKE_PROCESS = ("DEFAULT_COMMON_ENV_VARS = {}\nDEFAULT_TRAINER_ENV_VARS = {}\n"
                "DEFAULT_INFERENCE_ENV_VARS = {}\n")
FAKE_GATEWAY = '''
import sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
port = int(sys.argv[sys.argv.index("--port") + 1])
class H(BaseHTTPRequestHandler):
    def log_message(self, *a): pass
    def ok(self):
        self.send_response(200); self.send_header("Content-Length", "0"); self.end_headers()
    do_GET = do_OPTIONS = do_POST = ok
ThreadingHTTPServer(("127.0.0.1", port), H).serve_forever()
'''

# --- fake Prime-RL programs ---------------------------------------------------------------------

FAKE_COMMON = r'''
import json, os, sys, time
from pathlib import Path
OUT = Path(os.environ["OUTPUT_DIR"])
CTL = Path(os.environ["PB_CTL"])
STEP = float(os.environ["PB_STEP_SECONDS"])
SHARD = float(os.environ["PB_SHARD_SECONDS"])
INTERVAL = int(os.environ["PB_INTERVAL"])
MAX_STEPS = int(os.environ["PB_MAX_STEPS"])
JOB = os.environ.get("BEAKER_JOB_ID", "manual")

def log(name, **fields):
    fields.update(time=time.time(), job=JOB, pid=os.getpid())
    with open(CTL / name, "a") as h:
        h.write(json.dumps(fields) + "\n")

def violation(text):
    with open(CTL / "violations", "a") as h:
        h.write(f"{JOB}: {text}\n")

def nonempty(p):
    return p.is_file() and p.stat().st_size > 0

def trainer_complete(step, ranks):
    d = OUT / "checkpoints" / f"step_{step}" / "trainer"
    if not nonempty(d / ".metadata"):
        return False
    shards = sorted(p.name for p in d.glob("*.distcp"))
    return shards == sorted(f"__{r}_0.distcp" for r in range(ranks)) and all(
        nonempty(d / s) for s in shards)

def progress_complete(step):
    return nonempty(OUT / "run_default" / "checkpoints" / f"step_{step}" / "orchestrator" / "progress.pt")

def resume_step(config_file):
    raw = json.loads(Path(config_file).read_text())
    step = (raw.get("ckpt") or {}).get("resume_step")
    if step == -1:
        violation(f"{config_file}: resume_step = -1 handed to Prime-RL")
    return step

def write_slowly(path, size):
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "wb") as h:
        h.write(b"x" * (size // 2)); h.flush()
        time.sleep(SHARD / 2)
        h.write(b"x" * (size - size // 2))
    time.sleep(SHARD / 2)

def write_atomically(path, text):
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + f".{os.getpid()}.tmp")
    tmp.write_text(text)
    os.replace(tmp, path)

def wait_for(path, deadline=60):
    end = time.time() + deadline
    while not path.exists():
        if time.time() > end:
            violation(f"timed out waiting for {path}")
            sys.exit(5)
        time.sleep(0.005)
'''

# RL trainer (torchrun on replica 0): waits for the orchestrator's rollouts of each step, trains,
# broadcasts the policy, and saves every INTERVAL steps: one shard per rank, .metadata last.
# A step is logged as trained as soon as it is (before its broadcast is written): what the
# harness counts as trained steps must not depend on how far the trainer got in publishing it.
FAKE_RL_TRAINER = FAKE_COMMON + r'''
ranks = int(os.environ["TRAINER_GPU_COUNT"])
start = resume_step(OUT / "configs" / "trainer.json")
if start is not None and not (trainer_complete(start, ranks) and progress_complete(start)):
    violation(f"trainer told to resume from incomplete step {start}")
log("trainer.log", event="start", resume=start, wandb=os.environ.get("WANDB_RUN_ID"))
for step in range((start or 0) + 1, MAX_STEPS + 1):
    wait_for(OUT / "run_default" / "rollouts" / f"step_{step}")
    time.sleep(STEP)
    log("trainer.log", event="trained", step=step)
    write_atomically(OUT / "run_default" / "broadcasts" / f"step_{step}" / "STABLE", "ok")
    if step % INTERVAL == 0 or step == MAX_STEPS:
        d = OUT / "checkpoints" / f"step_{step}" / "trainer"
        for r in range(ranks):
            write_slowly(d / f"__{r}_0.distcp", 64)
        write_atomically(d / ".metadata", "meta")
        log("trainer.log", event="saved", step=step)
log("trainer.log", event="done")
'''

# RL orchestrator: one step ahead of the trainer (async level 1), saves progress.pt atomically
# every INTERVAL steps before producing the next step's rollouts.
FAKE_RL_ORCHESTRATOR = FAKE_COMMON + r'''
ranks = int(os.environ["TRAINER_GPU_COUNT"])
start = resume_step(OUT / "configs" / "orchestrator.json")
if start is not None and not (trainer_complete(start, ranks) and progress_complete(start)):
    violation(f"orchestrator told to resume from incomplete step {start}")
log("orchestrator.log", event="start", resume=start)
for step in range((start or 0) + 1, MAX_STEPS + 1):
    if step - 1 > (start or 0):
        wait_for(OUT / "run_default" / "broadcasts" / f"step_{step - 1}" / "STABLE")
        if (step - 1) % INTERVAL == 0:
            write_atomically(OUT / "run_default" / "checkpoints" / f"step_{step - 1}" / "orchestrator" / "progress.pt", "progress")
    (OUT / "run_default" / "rollouts" / f"step_{step}").mkdir(parents=True, exist_ok=True)
wait_for(OUT / "run_default" / "broadcasts" / f"step_{MAX_STEPS}" / "STABLE")
write_atomically(OUT / "run_default" / "checkpoints" / f"step_{MAX_STEPS}" / "orchestrator" / "progress.pt", "progress")
log("orchestrator.log", event="done")
'''

# SFT node (torchrun on every replica): trains in lock-step through a per-step barrier file per
# node; at a checkpoint each node writes its ranks' shards, node 0 writes .metadata after all.
# A step is trained once every node has passed its barrier; each node logs it then, before it
# writes anything of the step's checkpoint (another node may start the save before node 0 logs).
FAKE_SFT_NODE = FAKE_COMMON + r'''
node = int(os.environ["BEAKER_REPLICA_RANK"])
nodes = int(os.environ["TOTAL_NODES"])
gpus = int(os.environ["GPUS_PER_NODE"])
ranks = nodes * gpus
start = resume_step(OUT / "configs" / "sft.json")
if start is not None and not trainer_complete(start, ranks):
    violation(f"SFT node {node} told to resume from incomplete step {start}")
if node == 0:
    log("trainer.log", event="start", resume=start, wandb=os.environ.get("WANDB_RUN_ID"))
sync = OUT / "sync" / os.environ["PB_ROUND"]
for step in range((start or 0) + 1, MAX_STEPS + 1):
    time.sleep(STEP)
    (sync / f"step_{step}.{node}").parent.mkdir(parents=True, exist_ok=True)
    (sync / f"step_{step}.{node}").write_text("")
    for n in range(nodes):
        wait_for(sync / f"step_{step}.{n}")
    log("trainer.log", event="trained", step=step, node=node)
    if step % INTERVAL == 0 or step == MAX_STEPS:
        d = OUT / "checkpoints" / f"step_{step}" / "trainer"
        for r in range(node * gpus, (node + 1) * gpus):
            write_slowly(d / f"__{r}_0.distcp", 64)
        (sync / f"saved_{step}.{node}").write_text("")
        if node == 0:
            for n in range(nodes):
                wait_for(sync / f"saved_{step}.{n}")
            write_atomically(d / ".metadata", "meta")
            log("trainer.log", event="saved", step=step)
        else:
            wait_for(d / ".metadata")
if node == 0:
    log("trainer.log", event="done")
'''

RL_TOML = '''output_dir = "{out}"
max_steps = {max_steps}

[deployment]
type = "multi_node"

[inference.parallel]
dp = {infer_ranks}

[inference.router]
policy = "round_robin"

[orchestrator]

[ckpt]
interval = {interval}
resume_step = -1
'''

SFT_TOML = '''output_dir = "{out}"
max_steps = {max_steps}

[deployment]
type = "multi_node"

[ckpt]
interval = {interval}
resume_step = -1
'''


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def write(path, text, mode=None):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    if mode:
        path.chmod(mode)


def read_lines(path):
    if not path.exists():
        return []
    out = []
    for line in path.read_text().splitlines():
        try:
            out.append(json.loads(line))
        except ValueError:
            pass  # a line cut by a kill
    return out


def nonempty(p):
    return p.is_file() and p.stat().st_size > 0


class Run:
    """One seed: the replicas, their fakes and what is checked."""

    def __init__(self, args, seed, kind, root):
        self.args, self.seed, self.kind, self.root = args, seed, kind, root
        self.rng = random.Random(seed)
        self.nodes = args.nodes
        self.gpus = 2
        self.out = root / "out"
        self.ctl = root / "ctl"
        self.rdv = root / "rdv"
        for d in (self.out, self.ctl, self.rdv, root / "work", root / "scratch", root / "registry",
                  root / "local"):
            d.mkdir(parents=True, exist_ok=True)
        py = root / "pylib"
        for f, text in {
            "prime_rl/__init__.py": "", "prime_rl/configs/__init__.py": "",
            "prime_rl/configs/rl.py": FAKE_RL_CONFIG, "prime_rl/configs/sft.py": FAKE_SFT_CONFIG,
            "prime_rl/entrypoints/__init__.py": "",
            "prime_rl/entrypoints/rl.py": FAKE_RL_ENTRY, "prime_rl/entrypoints/sft.py": FAKE_SFT_ENTRY,
            "prime_rl/utils/__init__.py": "", "prime_rl/utils/process.py": FAKE_PROCESS,
            "literegistry/__init__.py": "", "literegistry/gateway/__init__.py": "",
            "literegistry/gateway/__main__.py": FAKE_GATEWAY,
        }.items():
            write(py / f, text)
        bin_dir = root / "bin"
        python = sys.executable
        write(bin_dir / "torchrun", f"#!{python}\n" +
              (FAKE_SFT_NODE if kind == "sft" else FAKE_RL_TRAINER), 0o755)
        write(bin_dir / "orchestrator", f"#!{python}\n" + FAKE_RL_ORCHESTRATOR, 0o755)
        for name in ("inference", "vllm-router"):
            write(bin_dir / name, "#!/bin/sh\nexec sleep 1000\n", 0o755)
        self.infer_ranks = (self.gpus - 1) + self.gpus * (self.nodes - 1)
        template = RL_TOML if kind == "rl" else SFT_TOML
        write(root / "config.toml", template.format(
            out=self.out, max_steps=args.max_steps, interval=args.interval,
            infer_ranks=self.infer_ranks))
        self.gateway_port = free_port()
        self.base_env = {
            "PATH": f"{bin_dir}:/usr/bin:/bin", "HOME": str(root / "work"), "LANG": "C.UTF-8",
            "PYTHONPATH": str(py), "PYTHONDONTWRITEBYTECODE": "1", "PB_CTL": str(self.ctl),
            "TOTAL_NODES": str(self.nodes), "GPUS_PER_NODE": str(self.gpus),
            "CONFIG_PATH": str(root / "config.toml"), "OUTPUT_DIR": str(self.out),
            "WORKING_DIR": str(root / "work"), "SCRATCH": str(root / "scratch"),
            "LAUNCH_ID": f"launch{seed}", "RENDEZVOUS_DIR": str(self.rdv),
            "RENDEZVOUS_TIMEOUT_SECONDS": "60", "WANDB_RUN_ID": f"wandb-run-{seed}",
            "WANDB_SHARED_RUN_ID": f"wandb-run-{seed}", "WANDB_RESUME": "allow",
            "BEAKER_EXPERIMENT_ID": f"01EXPERIMENT{seed}",
            "PRIMEBEAKER_NODE_POLL_SECONDS": "0.05", "PRIMEBEAKER_NODE_STOP_GRACE_SECONDS": "1",
            "PRIMEBEAKER_NODE_GATEWAY_SETTLE_SECONDS": "0.05",
            "PRIMEBEAKER_NODE_GATEWAY_PROBE_INTERVAL_SECONDS": "0.05",
            "PRIMEBEAKER_NODE_HOST": "127.0.0.1", "PRIMEBEAKER_NODE_LOCAL_ROOT": str(root / "local"),
            "PB_STEP_SECONDS": str(args.step_seconds), "PB_SHARD_SECONDS": str(args.shard_seconds),
            "PB_INTERVAL": str(args.interval), "PB_MAX_STEPS": str(args.max_steps),
        }
        if kind == "rl":
            self.base_env.update({
                "TOTAL_INFER_RANKS": str(self.infer_ranks), "TRAINER_GPU_COUNT": "1",
                "MIXED_INFER_GPU_COUNT": str(self.gpus - 1),
                "REGISTRY": f"file://{root / 'registry'}", "GATEWAY_PORT": str(self.gateway_port),
                "GATEWAY_WORKERS": "1", "REQUIRED_LITEREGISTRY_SERVICES": "{}",
                "LOCAL_SEARCH_MODEL_PATHS_JSON": "[]",
            })
        self.trainer_ranks = 1 if kind == "rl" else self.nodes * self.gpus
        self.problems = []
        self.rounds = []  # per start: {job, spawned, killed, signal, mode}
        self.lost = []     # trained steps lost per start after the first (the fakes' own logs)
        self.ledger_lost = []  # the ledger's steps_lost for the same starts
        self.shown_lost = []   # trained steps past the resume step that the disk showed
        self.per_start = []    # one record per start after the first, for the JSON
        self.latencies = []

    # -- the checkpoint rule, as an oracle --------------------------------------------------------
    def complete(self, step_dir_trainer, step_dir_orch):
        t = step_dir_trainer / "trainer"
        if not nonempty(t / ".metadata"):
            return False
        shards = sorted(p.name for p in t.glob("*.distcp"))
        if shards != sorted(f"__{r}_0.distcp" for r in range(self.trainer_ranks)):
            return False
        if not all(nonempty(t / s) for s in shards):
            return False
        return self.kind == "sft" or nonempty(step_dir_orch / "orchestrator" / "progress.pt")

    def complete_steps(self):
        found = {}
        root = self.out / "checkpoints"
        if not root.is_dir():
            return found
        for d in root.iterdir():
            if d.name.startswith("step_") and d.name[5:].isdigit():
                step = int(d.name[5:])
                orch = self.out / "run_default" / "checkpoints" / d.name
                if self.complete(d, orch):
                    found[step] = (d / "trainer" / ".metadata").stat().st_mtime_ns
        return found

    def newest_trained_on_disk(self):
        """The newest step the trainer left evidence of (docs/recovery.md "Work lost"): a
        trainer-side step directory or (RL) a weight broadcast. Taken after a kill, before the
        next start: the disk the next start's decision reads."""
        newest = 0
        roots = [self.out / "checkpoints"]
        if self.kind == "rl":
            roots.append(self.out / "run_default" / "broadcasts")
        for root in roots:
            if root.is_dir():
                for d in root.iterdir():
                    if d.name.startswith("step_") and d.name[5:].isdigit() and d.is_dir():
                        newest = max(newest, int(d.name[5:]))
        return newest

    # -- running ---------------------------------------------------------------------------------
    def spawn(self, job):
        procs = []
        logs = []
        for rank in range(self.nodes):
            env = dict(self.base_env, BEAKER_REPLICA_RANK=str(rank), BEAKER_JOB_ID=f"{job}-r{rank}",
                       PB_ROUND=job)
            log = open(self.root / f"replica.{job}.{rank}.log", "w")
            logs.append(log)
            procs.append(subprocess.Popen([str(self.args.binary), "node", self.kind], env=env,
                                          cwd=self.root / "work", stdout=log, stderr=log,
                                          start_new_session=True))
        return procs, logs, time.time()

    def saving_now(self):
        root = self.out / "checkpoints"
        if not root.is_dir():
            return False
        for d in root.iterdir():
            t = d / "trainer"
            if t.is_dir() and any(t.glob("*.distcp")) and not (t / ".metadata").exists():
                return True
        return False

    def kill(self, procs, mode):
        sig = signal.SIGKILL if self.rng.random() < 0.5 else signal.SIGTERM
        order = list(range(len(procs)))
        self.rng.shuffle(order)
        for i in order:  # every replica, in a random order, a few ms apart
            try:
                os.killpg(procs[i].pid, sig)
            except ProcessLookupError:
                pass
            time.sleep(self.rng.random() * 0.01)
        for p in procs:
            try:
                p.wait(timeout=20)
            except subprocess.TimeoutExpired:
                os.killpg(p.pid, signal.SIGKILL)
                p.wait()
        return sig

    def run(self):
        preemptions = self.rng.randint(1, 3)
        started = time.time()
        snapshots = {}
        for round_index in range(preemptions + 1):
            job = f"job{self.seed}-{round_index}"
            procs, logs, spawned = self.spawn(job)
            entry = {"job": job, "spawned": spawned}
            self.rounds.append(entry)
            last = round_index == preemptions
            if last:
                deadline = time.time() + self.args.timeout
                while any(p.poll() is None for p in procs) and time.time() < deadline:
                    time.sleep(0.02)
                codes = [p.poll() for p in procs]
                if any(c is None for c in codes):
                    self.kill(procs, "timeout")
                    self.problems.append(f"the final round did not finish in {self.args.timeout} s")
                elif any(c != 0 for c in codes):
                    self.problems.append(f"the final round exited {codes}")
            else:
                mode = self.rng.choice(["random", "mid-save", "mid-save"])
                limit = time.time() + self.rng.uniform(0.3, self.args.kill_window)
                if mode == "mid-save":
                    limit = time.time() + self.args.timeout / 2
                while time.time() < limit and all(p.poll() is None for p in procs):
                    if mode == "mid-save" and self.saving_now():
                        time.sleep(self.rng.random() * self.args.shard_seconds)
                        break
                    time.sleep(0.002)
                entry["mode"] = mode
                entry["signal"] = self.kill(procs, mode).name
                # A run whose replica 0 finished before the kill came was not preempted: its next
                # start is a restart after success (the ledger says so). A killed replica 0 exits
                # 143 (SIGTERM, handled) or -9.
                entry["completed"] = procs[0].returncode == 0
                entry["killed"] = time.time()
                entry["shown"] = self.newest_trained_on_disk()
                snapshots[job] = self.complete_steps()
            for log in logs:
                log.close()
        self.elapsed = time.time() - started
        self.check(snapshots)

    # -- checks ----------------------------------------------------------------------------------
    def check(self, snapshots):
        if (self.ctl / "violations").exists():
            for line in (self.ctl / "violations").read_text().splitlines():
                self.problems.append("violation: " + line)
        final = self.complete_steps()
        for job, seen in snapshots.items():
            for step, mtime in seen.items():
                if step not in final:
                    self.problems.append(f"step {step}, complete when {job} was killed, is gone")
                elif final[step] != mtime:
                    self.problems.append(f"step {step}, complete when {job} was killed, was rewritten")
        expected = set(range(self.args.interval, self.args.max_steps + 1, self.args.interval))
        expected.add(self.args.max_steps)
        if not expected <= set(final):
            self.problems.append(f"missing complete steps at the end: {sorted(expected - set(final))}")
        aside = self.out / "primebeaker_recovery" / "set_aside"
        if aside.is_dir():
            for start_dir in aside.iterdir():
                trainer_root = start_dir / "checkpoints"
                if not trainer_root.is_dir():
                    continue
                for d in trainer_root.iterdir():
                    orch = start_dir / "run_default" / "checkpoints" / d.name
                    if not orch.exists():
                        orch = self.out / "run_default" / "checkpoints" / d.name
                    if self.complete(d, orch):
                        self.problems.append(f"a complete step was moved aside: {d}")
        # Trained steps per round (any replica of it: SFT nodes all log) and the step each
        # round's trainer was told to resume from.
        events = read_lines(self.ctl / "trainer.log")
        trained, resumed, wandb, finished = {}, {}, set(), set()
        for e in events:
            round_job = e["job"].rsplit("-r", 1)[0]
            if e["event"] == "done":
                finished.add(round_job)
            elif e["event"] == "trained":
                trained[round_job] = max(trained.get(round_job, 0), e["step"])
            elif e["event"] == "start":
                resumed[round_job] = e["resume"]
                wandb.add(e.get("wandb"))
                spawned = next((r["spawned"] for r in self.rounds
                                if e["job"].startswith(r["job"] + "-")), None)
                if spawned is not None:
                    self.latencies.append(e["time"] - spawned)
        if wandb != {f"wandb-run-{self.seed}"}:
            self.problems.append(f"W&B run ids seen: {sorted(map(str, wandb))}")
        jobs = [r["job"] for r in self.rounds]
        # The ledger: one start per attempt that reached the decision, in order, with causes.
        ledger_dir = self.out / "primebeaker_recovery" / "ledger" / f"wandb-run-{self.seed}"
        starts = []
        if ledger_dir.is_dir():
            for f in ledger_dir.iterdir():
                if f.name.endswith(".json") and f.name.split(".")[0].isdigit() and f.name.count(".") == 1:
                    starts.append(json.loads(f.read_text()))
        starts.sort(key=lambda s: s["attempt"])
        ledger_jobs = [s["job_id"] for s in starts]
        for job in jobs:
            if job in resumed and f"{job}-r0" not in ledger_jobs:
                self.problems.append(f"the ledger misses the start of {job}")
        if ledger_jobs != sorted(ledger_jobs, key=lambda j: jobs.index(j.rsplit("-r", 1)[0])):
            self.problems.append(f"ledger out of order: {ledger_jobs}")
        by_job = {r["job"]: r for r in self.rounds}
        for i, s in enumerate(starts):
            want = "first_start"
            if i > 0:
                before_job = starts[i - 1]["job_id"].rsplit("-r", 1)[0]
                before = by_job[before_job]
                # A start after a round whose replica 0 recorded success (its end record says 0)
                # is a restart after success. That round may still have been killed: the kill can
                # reach replica 0 after it wrote its end record, before it exited.
                end_file = ledger_dir / f"{starts[i - 1]['attempt']}.end.json"
                end = json.loads(end_file.read_text()) if end_file.exists() else None
                succeeded = end is not None and end.get("root_code") == 0
                if before.get("completed") and not succeeded:
                    self.problems.append(f"{before_job} exited 0 without recording success")
                if succeeded and before_job not in finished:
                    self.problems.append(f"{before_job} recorded success, its training did not finish")
                want = "after_success" if succeeded else "preemption"
            if s["cause"] != want or s["refused"]:
                self.problems.append(f"ledger attempt {s['attempt']}: cause {s['cause']}, refused {s['refused']}")
        # Steps lost, per start after the first one the ledger recorded. Trained steps lost: the
        # newest step trained in this timeline (the fakes' logs) minus the step resumed from. The
        # ledger must count what the disk showed of them after the kill (trainer-side step
        # directories, broadcasts; never the rollouts the orchestrator writes ahead), and that
        # may miss only what nothing on disk shows yet: for RL the one step trained and not yet
        # broadcast, for SFT (which writes nothing per step) the steps since its last save began.
        start_of = {s["job_id"].rsplit("-r", 1)[0]: s for s in starts}
        first = starts[0]["job_id"].rsplit("-r", 1)[0] if starts else None
        unseen_bound = 1 if self.kind == "rl" else self.args.interval
        high = 0   # newest step trained so far in the timeline
        shown = 0  # newest trained step on disk after the latest kill
        recorded_before = False  # the previous round recorded its start (its decision finished)
        for i, job in enumerate(jobs):
            s = start_of.get(job)
            if s is not None and job != first and not s["refused"]:
                resume = resumed.get(job, s["resume_step"])
                if job in resumed and resumed[job] != s["resume_step"]:
                    self.problems.append(f"{job}: the trainer resumed from {resumed[job]}, the "
                                         f"ledger says {s['resume_step']}")
                lost = max(high - (resume or 0), 0)
                seen = max(shown - (resume or 0), 0)
                unseen = lost - s["steps_lost"]
                if lost > self.args.interval:
                    self.problems.append(f"{job} resumed from {resume} after step {high} "
                                         f"was trained: {lost} steps lost")
                if s["steps_lost"] != seen:
                    self.problems.append(f"{job}: the ledger counts {s['steps_lost']} steps lost, "
                                         f"the disk showed {seen} trained steps past step {resume}")
                # A round killed inside its decision, before recording it, may have removed the
                # evidence of steps its own start lost: then only the lower bound holds.
                if unseen < 0 or (recorded_before and unseen > unseen_bound):
                    self.problems.append(f"{job}: {lost} trained steps lost, the ledger counts "
                                         f"{s['steps_lost']}")
                self.lost.append(lost)
                self.ledger_lost.append(s["steps_lost"])
                self.shown_lost.append(seen)
                self.per_start.append({"job": job, "resume": resume, "trained_before": high,
                                       "steps_lost": lost, "ledger_steps_lost": s["steps_lost"],
                                       "shown_on_disk": seen, "unseen": unseen,
                                       "bounded": recorded_before})
                high = resume or 0
            high = max(high, trained.get(job, 0))
            shown = self.rounds[i].get("shown", shown)
            recorded_before = s is not None


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--binary", default="build/primebeaker", type=Path)
    parser.add_argument("--seeds", type=int, default=100)
    parser.add_argument("--first-seed", type=int, default=1)
    parser.add_argument("--kind", choices=["rl", "sft", "both"], default="both")
    parser.add_argument("--nodes", type=int, default=2)
    parser.add_argument("--max-steps", type=int, default=24)
    parser.add_argument("--interval", type=int, default=4)
    parser.add_argument("--step-seconds", type=float, default=0.03)
    parser.add_argument("--shard-seconds", type=float, default=0.03)
    parser.add_argument("--kill-window", type=float, default=2.0, help="random kills happen within this many seconds")
    parser.add_argument("--timeout", type=float, default=90.0)
    parser.add_argument("--json", type=Path)
    parser.add_argument("--keep", action="store_true", help="keep each seed's directory")
    parser.add_argument("--quiet", action="store_true")
    args = parser.parse_args()
    args.binary = args.binary.resolve()
    if not args.binary.is_file():
        sys.exit(f"no binary at {args.binary}")

    results = []
    for seed in range(args.first_seed, args.first_seed + args.seeds):
        kind = args.kind if args.kind != "both" else ("rl" if seed % 2 else "sft")
        root = Path(tempfile.mkdtemp(prefix=f"pb-preempt-{seed}-"))
        run = Run(args, seed, kind, root)
        try:
            run.run()
        except Exception as error:  # a harness failure is a failed seed, with the reason
            run.problems.append(f"harness: {error!r}")
            run.elapsed = 0.0
        ok = not run.problems
        results.append({"seed": seed, "kind": kind, "ok": ok, "problems": run.problems,
                        "preemptions": len(run.rounds) - 1,
                        "rounds": [{k: v for k, v in r.items() if k in ("job", "mode", "signal", "shown")} for r in run.rounds],
                        "steps_lost": run.lost, "ledger_steps_lost": run.ledger_lost,
                        "starts": run.per_start,
                        "latency_seconds": [round(x, 3) for x in run.latencies],
                        "seconds": round(run.elapsed, 2), "dir": str(root)})
        if not args.quiet or not ok:
            print(f"seed {seed:3} {kind:3} {'ok ' if ok else 'FAIL'} preemptions={len(run.rounds) - 1} "
                  f"lost={run.lost} ledger={run.ledger_lost} latency={[round(x, 2) for x in run.latencies]} "
                  f"{run.elapsed:.1f}s" + ("" if ok else "\n  " + "\n  ".join(run.problems) + f"\n  dir: {root}"),
                  flush=True)
        if ok and not args.keep:
            subprocess.run(["rm", "-rf", str(root)])

    survived = sum(r["ok"] for r in results)
    lost = [x for r in results for x in r["steps_lost"]]
    ledger_lost = [x for r in results for x in r["ledger_steps_lost"]]
    per_start = [(r["kind"], x) for r in results for x in r["starts"]]
    unseen = {k: [x["unseen"] for kind, x in per_start if kind == k] for k in ("rl", "sft")}
    latency = [x for r in results for x in r["latency_seconds"]]
    preemptions = sum(r["preemptions"] for r in results)
    mid_save = sum(1 for r in results for x in r["rounds"] if x.get("mode") == "mid-save")
    summary = {
        "seeds": len(results), "survived": survived, "preemptions": preemptions,
        "mid_save_kills": mid_save, "interval": args.interval,
        "steps_lost_median": statistics.median(lost) if lost else None,
        "steps_lost_max": max(lost) if lost else None,
        "ledger_steps_lost_median": statistics.median(ledger_lost) if ledger_lost else None,
        "ledger_steps_lost_max": max(ledger_lost) if ledger_lost else None,
        "ledger_equal_to_steps_lost": sum(x["unseen"] == 0 for _, x in per_start),
        "starts_after_first": len(per_start),
        "steps_unseen_max_rl": max(unseen["rl"]) if unseen["rl"] else None,
        "steps_unseen_max_sft": max(unseen["sft"]) if unseen["sft"] else None,
        "restart_to_trainer_seconds_median": round(statistics.median(latency), 3) if latency else None,
        "restart_to_trainer_seconds_max": round(max(latency), 3) if latency else None,
    }
    print(json.dumps(summary))
    if args.json:
        args.json.write_text(json.dumps({"summary": summary, "seeds": results}, indent=2) + "\n")
    return 0 if survived == len(results) else 1


if __name__ == "__main__":
    sys.exit(main())
