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
#include <primebeaker/node/plan.hpp>

#include <filesystem>
#include <optional>
#include <string>
#include <utility>
#include <variant>
#include <vector>

namespace pb::node {

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
  std::string replica; // "node rl", "node sft"
  int trainer_ranks = 0;
  bool leader = false;
  bool trainer_only = false; // SFT: no orchestrator side
  std::filesystem::path output_dir;
  std::filesystem::path config_path;
  std::int64_t max_recoveries = 0; // the budget (PRIMEBEAKER_MAX_RECOVERIES ...)
  std::int64_t max_restarts_on_errors = 0;
  primerl::Generation generation = primerl::Generation::v0_8; // where checkpoints live
  std::string run_dir_name;                                   // v0.9
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
};
struct RaiseOpenFiles {
  int limit = 65536;
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
  std::vector<std::string> dirs;
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
                          step::RaiseOpenFiles,
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
  std::string command; // "node rl", "node sft"
  int rank = 0;
  int total_nodes = 0;
  std::string role; // "mixed", "trainer", "inference", "sft"
  std::string summary;
  std::filesystem::path working_dir;    // every child's cwd
  std::filesystem::path rendezvous_dir; // the attempt directories live under it
  std::filesystem::path local_tmp;      // node-local scratch of this replica
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
};

// The plan of one replica of `node rl` / `node sft`. Pure: throws pb::Error exit 2 on a
// contract the replica cannot run (as parse_rl_env, place_rl).
ReplicaPlan plan_rl(const RlEnv &env, const PlanInputs &inputs);
ReplicaPlan plan_sft(const SftEnv &env, const PlanInputs &inputs);

// `${name}` -> facts[name]; `${name+N}` -> facts[name] + N (integers). Throws pb::Error
// (internal) on a fact not bound yet.
std::string substitute(const std::string &text, const EnvMap &facts);
// The argv of `process` with facts: an element that is exactly `${name...}` becomes the
// space-separated words of facts[name]; `when` arguments appended.
proc::Argv resolve_argv(const ProcessSpec &process, const EnvMap &facts);

// The plan as people read it (`--dry-run`) and as JSON (`--dry-run --json`, one object).
std::string plan_text(const ReplicaPlan &plan);
std::string plan_json(const ReplicaPlan &plan);

} // namespace pb::node
