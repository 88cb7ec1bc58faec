// SPDX-License-Identifier: MIT
// The seams of make_plan (private to the launch module): flags -> ValidatedFlags, the training
// TOML -> TopologyRead (one reader per topology), then the container env and the experiment in
// plan.cpp. All pure.
#pragma once

#include <primebeaker/beaker/spec.hpp>
#include <primebeaker/contract/replica_env.hpp>
#include <primebeaker/images/choose.hpp>
#include <primebeaker/launch/launch.hpp>
#include <primebeaker/launch/overrides.hpp>
#include <primebeaker/primerl/config.hpp>
#include <primebeaker/primerl/v0_9.hpp>

#include <chrono>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace pb::launch::detail {

// The images a preview shows when the catalog has none for the workspace.
inline constexpr std::string_view k_missing_prime_rl_image =
    "beaker://<no Prime-RL image cataloged for this workspace: pass --image>";
inline constexpr std::string_view k_missing_runtime_image =
    "beaker://<no primebeaker-runtime image for this workspace: pass --image>";

// Every flag checked, in the order the checks run (docs/launch.md "Validation order").
struct ValidatedFlags {
  std::string mount;       // normalized container paths
  std::string working_dir; //
  std::string scratch_dir; //
  std::string home_dir;    //
  std::string image_ref;
  std::string submit_refusal; // no image cataloged for the launch and no --image
  std::vector<std::string> clusters;
  std::map<std::string, std::string> user_env;
  std::map<std::string, std::string> secrets; // with the W&B / HF defaults applied
  contract::RequiredServices required_services;
  std::optional<contract::RegistryUri> registry; // RL with --registry
};

// Flags that need nothing but themselves: priority, workspace, runtime, dataset, container
// paths. Throws pb::Error exit 2 naming the flag.
void check_basic_flags(const LaunchOptions &options, ValidatedFlags &flags);

// The rest, once the topology is known: image, clusters, --env/--secret, multi-node knobs and
// the registry URI (through the replica's own parser). Throws pb::Error exit 2.
void check_flags(const LaunchOptions &options,
                 Program program,
                 bool multi,
                 const images::ImageChoice &image,
                 ValidatedFlags &flags);

// A TOML path key the mount check compares: label for messages, value as written.
struct CheckedPath {
  std::string label; // "--working-dir" or "output_dir at file.toml:3:1"
  std::string value;
  bool from_toml = false;
};

// What one topology reader takes from the TOML.
struct TopologyRead {
  primerl::Wandb wandb;
  primerl::PathKey output_dir;
  std::vector<CheckedPath> paths; // TOML paths that must lie under the mount
  std::string task_name;
  std::string description_kind;               // "SFT", "multi-node RL", ...
  std::int64_t gpu_count = 0;                 // per task (single node) or per replica (multi node)
  std::int64_t weight_broadcast_port = 29501; // Prime-RL's placement: weight_broadcast.port
  std::int64_t replicas = 0;                  // multi node only
  contract::ReplicaEnv replica;               // the topology's fields (counts, local search paths)
  primerl::Generation generation = primerl::Generation::v0_8;
  primerl::v0_9::Run run; // v0.9: the run directory the TOML names, if any
};

// Reads the launch keys of the topology `kind` names (docs/launch.md "TOML keys"), adding every
// problem (key and line:column) to `problems`.
// A v0.9 TOML (`generation`) is read by the v0.9 model (docs/launch.md "Prime-RL v0.9").
TopologyRead read_topology(const toml::Document &document,
                           contract::Kind kind,
                           primerl::Generation generation,
                           primerl::Problems &problems);

// The real path of `path` as the glue resolved it (LaunchInputs::real_paths), else `path`.
std::string real_path(const LaunchInputs &inputs, const std::string &path);

// `path` made absolute against the submitter's cwd (the --toml path), normalized.
std::string absolute_normalized(const LaunchInputs &inputs, const std::string &path);

// A path from the TOML as the container resolves it: relative to `working_dir`, normalized.
std::string in_container(const std::string &working_dir, const std::string &path);

// The recovery policy in the spec (docs/recovery.md): single-node tasks get context.autoResume
// (preemptions) when --max-recoveries > 0 and retry.allowedTaskRetries = --max-restarts-on-errors
// (failures); multi-node tasks get neither (their replicas are resubmitted whole by `follow
// --recover`). recovery_policy() is the receipt's "recovery" object.
bool auto_resume(const LaunchOptions &options, bool multi);
// "controller", "terminal", "off" (multi-node), "beaker" or "off" (single-node). Throws
// pb::Error exit 2 for another --recover.
std::string recover_mode(const LaunchOptions &options, Program program, bool multi);
std::int64_t allowed_task_retries(const LaunchOptions &options, bool multi);
OrderedJson recovery_policy(const LaunchOptions &options, Program program, bool multi);

// The recovery controller (src/launch/controller.cpp, docs/recovery.md "The controller"): its
// poll interval and first backoff, which set how soon a preemption is resubmitted and what it
// costs in `beaker` calls (one `experiment get` per poll: 120 an hour).
inline constexpr std::chrono::seconds k_controller_poll{30};
inline constexpr std::chrono::seconds k_controller_backoff{10};
// "<training name>-recovery", at most 128 characters. Pure.
std::string controller_name_for(const std::string &training_name);
// The controller's plan for mode "controller" (nullopt otherwise, or when options name the
// run's running controller). Throws pb::Error exit 2 for its flags. Pure.
std::optional<ControllerPlan> controller_plan(const LaunchOptions &options,
                                              const LaunchInputs &inputs,
                                              const ValidatedFlags &flags,
                                              const std::string &mode,
                                              const std::string &training_name,
                                              const std::filesystem::path &staged_program,
                                              const std::string &launch_id);

} // namespace pb::launch::detail

namespace pb::beaker {
class Client;
}

namespace pb::launch {
// The controller's spec with the training experiment's id in place of the placeholder. Pure.
OrderedJson controller_spec_for(const ControllerPlan &plan, const std::string &training_id);
// Refuses (exit 3, one line saying how to create it) a controller whose token secret the
// workspace lacks; runs `beaker secret list`.
void require_controller_secrets(const LaunchPlan &plan, beaker::Client &beaker);
} // namespace pb::launch
