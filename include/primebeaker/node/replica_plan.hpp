// SPDX-License-Identifier: MIT
// The replica plan (docs/node.md "The plan"): everything one replica of `node rl|sft` will do,
// in order, as one value computed before anything runs (ninja's Plan vs CommandRunner, Bear's
// Command values). node::plan is pure; the runtime (src/node/runtime.cpp) only executes a plan,
// and `node rl|sft --dry-run` prints it.
//
// A replica learns some values only while it runs: the attempt it joined, its peers' addresses,
// what Prime-RL resolved from the TOML, the resume point. The plan names them as `${name}`
// placeholders and says which step binds each one (docs/node.md lists them); the runtime
// substitutes them, and never builds an argv of its own.
#pragma once

#include <primebeaker/core/process.hpp>
#include <primebeaker/node/env.hpp>
#include <primebeaker/node/peers.hpp>
#include <primebeaker/recovery/decision.hpp>

#include <filesystem>
#include <optional>
#include <string>
#include <utility>
#include <variant>
#include <vector>

namespace pb::node {

// ---- The planner's helpers (replica_plan.cpp) ----

enum class Role { trainer, mixed, inference };
std::string role_name(Role role); // "trainer", "mixed", "inference"

// Role and placement of one RL replica (docs/node.md). Exit 2 on a bad rank or a
// partition larger than the node.
struct RlPlacement {
  Role role = Role::inference;
  int train_gpus = 0;
  Slice inference;
};
RlPlacement place_rl(const RlEnv &env);

// Paths of one replica (docs/node.md).
struct Paths {
  std::filesystem::path config_dir; // <OUTPUT_DIR>/configs
  std::filesystem::path logs;       // <OUTPUT_DIR>/logs
  std::filesystem::path local_tmp;  // the node-local TMPDIR default
};
Paths rl_paths(const RlEnv &env);
Paths sft_paths(const SftEnv &env);

// Cache defaults of docs/node.md (each only when unset in `env`) plus TMPDIR.
EnvMap cache_defaults(const EnvMap &env,
                      const std::filesystem::path &scratch,
                      const std::filesystem::path &local_tmp);

// The local tool gateway (docs/node.md): the one place naming its program. Today
// LiteRegistry's own `python3 -m literegistry.gateway`; a native `primebeaker gateway` later.
proc::Argv local_gateway_argv(const RlEnv &env);

// The registry steps run as supervised children of this binary (`primebeaker registry ...`,
// src/registry), so a barrier never blocks the watcher and dies with its process group.
proc::Argv
wait_redis_argv(const std::string &self, const RlEnv &env, const std::filesystem::path &stop_file);
proc::Argv wait_services_argv(const std::string &self,
                              const RlEnv &env,
                              const std::filesystem::path &stop_file);
proc::Argv probe_gateway_argv(const std::string &self, const RlEnv &env);

// What the resume decision of one start needs (docs/recovery.md "What a start does").
struct RecoveryRequest {
  std::string replica; // "node rl", "node sft", "node single rl", "node single sft"
  std::filesystem::path working_dir;
  std::filesystem::path output_dir; // as in OUTPUT_DIR (relative to working_dir)
  std::filesystem::path config_path;
  int trainer_ranks = 1;
  bool trainer_only = false; // SFT: no orchestrator side
  // The Prime-RL generation the TOML is written for (PRIME_RL_GENERATION); a v0.8 request for a
  // TOML primerl detects as v0.9 reads it as v0.9.
  primerl::Generation generation = primerl::Generation::v0_8;
  // v0.9: the run directory under output_dir (PRIME_RL_RUN_DIR); "" takes run.dir / run.name
  // from the TOML.
  std::string run_dir_name;
  std::string run_id;        // WANDB_RUN_ID
  std::string launch_key;    // LAUNCH_ID, or BEAKER_EXPERIMENT_ID for single-node
  std::string job_id;        // BEAKER_JOB_ID or "manual"
  std::string experiment_id; // BEAKER_EXPERIMENT_ID
  recovery::Policy policy;
};
// The request of a replica's start: the one place its fields are copied from the contract.
RecoveryRequest
recovery_request(const CommonEnv &env, std::string replica, int trainer_ranks, bool trainer_only);

// ---- The plan ----

// Where a process's output goes.
struct LogSpec {
  enum class Mode { inherit, tee, truncate, append, discard };
  Mode mode = Mode::inherit; // tee: appended to `path` line by line and echoed to stdout
  std::filesystem::path path;
  bool strip_rank_prefix = false; // torchrun's "[default0]:" (tee only)
};

// One child process. Strings may hold `${fact}` placeholders (see substitute()).
struct ProcessSpec {
  std::string name; // as in messages: "trainer", "inference server 0", "registry barrier"
  proc::Argv argv;
  // Arguments appended when the fact is "1" (what Prime-RL resolved decides, e.g. ZMQ transport).
  std::vector<std::pair<std::string, proc::Argv>> when;
  // "trainer", "orchestrator", "inference": the env Prime-RL resolved for that component, laid
  // over the replica's env (runtime/<component>.env); empty for none.
  std::string component_env;
  EnvMap env;                     // laid over that, last
  std::string gpus;               // CUDA_VISIBLE_DEVICES ("" = not set by the plan)
  std::vector<std::string> ports; // what it listens on
  LogSpec log;
};

namespace step {
// Directories created (and any parents); a path may hold facts, and one that is empty once they
// are filled in is skipped (an optional directory of the TOML's).
struct MakeDirs {
  std::vector<std::filesystem::path> dirs;
};
// The attempt handshake (docs/node.md "Attempts"); binds ${attempt_dir}.
struct JoinAttempt {
  std::filesystem::path rendezvous_dir;
  int timeout_seconds = 0;
};
// The resume decision (docs/recovery.md), made by the replica from what is on disk at start:
// replica 0 decides and publishes recovery.json, the others wait for it. Binds ${resume}.
struct DecideResume {
  RecoveryRequest request;
  bool leader = false;
  bool publish = true; // recovery.json for the other replicas (none for node single)
  // RL single-node: the trainer's rank count is deployment.num_train_gpus of the TOML, read then.
  bool trainer_ranks_from_toml = false;
};
// A process run to its end under supervision; a non-zero exit fails the replica with
// `failure` (plus the step's own error line when it is a `primebeaker registry` step).
struct Run {
  ProcessSpec process;
  std::string failure;
  int failure_code = 1;
  bool registry_step = false;
};
struct RequirePrograms {
  std::vector<std::string> programs; // exit 4 naming the missing ones
  std::string failure = {};          // "" = "cannot find <programs> on PATH"
};
// The TOML exists and each key of `readable_paths` names a readable file (exit 3 at the key).
struct CheckConfig {
  std::filesystem::path config_path;
  std::vector<std::string> readable_paths; // dotted keys
};
// The TOML Prime-RL reads on this start, written from `config_path` (never edited) with the
// decided ${resume}: the environment ids rewritten (v0.8.0 RL), the resume point, and for v0.9
// the launch's run.name.
struct WriteRuntimeToml {
  std::filesystem::path config_path;
  std::filesystem::path path;
  bool rewrite_environment_ids = false;
  primerl::Generation generation = primerl::Generation::v0_8;
  std::string run_name; // v0.9
};
struct RaiseOpenFiles {
  int limit = 65536;
  // KV-cache offload pins host memory: also lift the locked-memory limit (`ulimit -l unlimited`
  // in Prime-RL's template), as far as the container allows.
  bool unlimited_locked_memory = false;
};
// A file written atomically before the processes that read it start (path and content with
// facts): llm-d's configs, Mooncake's client config.
struct WriteFile {
  std::string path;
  std::string content;
};
// Waits until host:port (facts) accepts a TCP connection, as Prime-RL's template waits for
// Mooncake's master and client; fails naming `what` after `timeout_seconds`.
struct WaitPort {
  std::string what;
  std::string host;
  int port = 0;
  int timeout_seconds = 0;
};
// Variables every child started from here on gets.
struct SetEnv {
  EnvMap env;
};
// An atomic write into the attempt directory.
struct Publish {
  std::string file;
  std::string content;
};
// Waits for a non-empty file of the attempt (timeout: the rendezvous timeout); binds `fact` to
// its trimmed content when not empty.
struct WaitFor {
  std::string file;
  std::string fact;
  int timeout_seconds = 0;
};
// Config materialisation (docs/node.md step 6). The leader runs the Prime-RL config helper with
// `request` plus {"resume": ${resume}} and publishes runtime/*; the others wait for
// runtime/runtime.ready. Binds ${runtime.NAME} for each value of runtime.env and the component
// envs.
struct ResolveConfig {
  bool leader = false;
  std::string request_json; // without "resume"
  std::filesystem::path config_path;
  // The leader writes the helper to `script` and the request to `request_path`, runs `helper`,
  // and reads Prime-RL's answer from `result_path`.
  std::filesystem::path script;
  std::filesystem::path request_path;
  std::filesystem::path result_path;
  ProcessSpec helper;
  // The component env files published beside runtime.env ("trainer", "orchestrator", ...).
  std::vector<std::string> components;
};
// The global worker list from every layout.N and ${host.N}, checked against TP and the expected
// rank count (exit 2); binds ${workers} and ${admin_urls} (space separated).
struct BindWorkers {
  int total_nodes = 0;
  int expected_ranks = 0;
};
// A long-running child: it ending before the replica is done decides the replica's exit.
struct Start {
  ProcessSpec process;
};
// One inference server per ${runtime.INFERENCE_TP} GPUs of `slice`: server k gets ${k},
// ${gpus} (its block) and ${port} = ${runtime.BACKEND_PORT} + k in `each`; `dirs` (templates)
// are created first.
struct StartInferenceServers {
  Slice slice;
  ProcessSpec each;
  // The fact holding the first server's port; server k listens on it + k.
  std::string port_fact = "runtime.BACKEND_PORT";
  std::vector<std::string> dirs;
  // (path, content) written before each server starts, both with its ${k} facts.
  std::vector<std::pair<std::string, std::string>> files;
};
// A supervised sleep.
struct Pause {
  double seconds = 0;
};
// Up to `attempts` runs of `process`, `interval_seconds` apart, until one exits 0.
struct Probe {
  ProcessSpec process;
  int attempts = 1;
  double interval_seconds = 0;
  std::string failure; // "<failure>: <the last probe's error><hint>"
  std::string hint;
};
// Supervises until each of `processes` exited 0 (the replica is done) or something decides
// otherwise; with none, until a peer's verdict (inference-only replicas).
struct AwaitExit {
  std::vector<std::string> processes;
};
} // namespace step

using Step = std::variant<step::MakeDirs,
                          step::JoinAttempt,
                          step::DecideResume,
                          step::Run,
                          step::RequirePrograms,
                          step::CheckConfig,
                          step::WriteRuntimeToml,
                          step::RaiseOpenFiles,
                          step::WriteFile,
                          step::WaitPort,
                          step::SetEnv,
                          step::Publish,
                          step::WaitFor,
                          step::ResolveConfig,
                          step::BindWorkers,
                          step::Start,
                          step::StartInferenceServers,
                          step::Pause,
                          step::Probe,
                          step::AwaitExit>;

struct ReplicaPlan {
  std::string command; // "node rl", "node sft", "node single rl", "node single sft"
  int rank = 0;
  int total_nodes = 0;
  std::string role; // "mixed", "trainer", "inference", "sft", "single"
  std::string summary;
  std::filesystem::path working_dir;    // every child's cwd
  std::filesystem::path rendezvous_dir; // the attempt directories live under it ("" = none)
  int rendezvous_timeout_seconds = 0;
  // The exit trap (docs/node.md): on success this replica publishes `complete` (the training
  // side of RL), a peer that exited 0 ends it too (RL), and its shutdown.requested line names it.
  bool publishes_complete = false;
  bool peer_success_ends = false;
  std::string exit_subject;        // "Prime-RL node 0 (trainer)", "SFT node 1"
  std::filesystem::path local_tmp; // node-local scratch of this replica
  EnvMap env; // laid over the container's environment for every child (cache defaults, TMPDIR)
  std::optional<std::string> managed_service_experiment_id; // rank 0 stops it on exit, with
  proc::Argv on_exit;                                       // this (empty: nothing)
  Tuning tuning;
  std::vector<Step> steps;
  // Secrets in the plan (a registry URI's password) and what printers show instead.
  std::vector<std::pair<std::string, std::string>> redact;
};

// What the plan needs besides the contract: read-only facts of this machine and this binary.
struct PlanInputs {
  EnvMap env;                                 // the container's environment
  std::string self;                           // this binary, for `primebeaker registry ...` steps
  std::string address;                        // the address this node publishes (local_address())
  std::optional<std::string> infiniband_hcas; // NCCL_IB_HCA hint
  std::optional<std::string> socket_ifname;   // GLOO_SOCKET_IFNAME hint
  std::optional<std::string> rdma_ports;      // UCX_NET_DEVICES for NIXL (disaggregated)
};

// The plan of one replica of `node rl` / `node sft`. Pure: throws pb::Error exit 2 on a
// contract the replica cannot run (as parse_rl_env, place_rl).
ReplicaPlan plan_rl(const RlEnv &env, const PlanInputs &inputs);
ReplicaPlan plan_sft(const SftEnv &env, const PlanInputs &inputs);
// `node single sft|rl`: one container, Prime-RL's `sft`/`rl` on the runtime TOML, supervised.
ReplicaPlan plan_single(const SingleEnv &env, const PlanInputs &inputs);

// ---- Facts (facts.cpp): what the executor fills in ----

// `${name}` -> facts[name]; `${name+N}` -> facts[name] + N (integers). Throws pb::Error
// (internal) on a fact not bound yet.
std::string substitute(const std::string &text, const EnvMap &facts);
// The argv of `process` with facts: an element that is exactly `${name...}` becomes the
// space-separated words of facts[name]; `when` arguments appended.
proc::Argv resolve_argv(const ProcessSpec &process, const EnvMap &facts);

// ---- Printers (plan_print.cpp) ----

// The plan as people read it (`--dry-run`) and as JSON (`--dry-run --json`, one object).
std::string plan_text(const ReplicaPlan &plan);
std::string plan_json(const ReplicaPlan &plan);

} // namespace pb::node
