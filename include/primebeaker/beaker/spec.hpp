// SPDX-License-Identifier: MIT
// The Beaker experiment spec (version v2) as a value, rendered to JSON in the key order the
// reference emits, and checked against what Beaker itself requires (docs/launch.md).
#pragma once

#include <primebeaker/core/json.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace pb::beaker {

// Exactly one of a Beaker image (full name or ID) or a Docker image reference.
struct Image {
  enum class Kind { beaker, docker };
  Kind kind = Kind::docker;
  std::string ref;

  // `beaker://<ref>` selects a Beaker image (prefix removed); anything else is a Docker ref.
  static Image from_reference(std::string_view reference);
};

// One entry of `envVars`: a plain value or the name of a workspace secret.
struct EnvVar {
  std::string name;
  std::string value;  // used when !is_secret
  std::string secret; // used when is_secret
  bool is_secret = false;

  static EnvVar plain(std::string name, std::string value);
  static EnvVar from_secret(std::string name, std::string secret);
};

// A Weka bucket mounted at an absolute path.
struct WekaMount {
  std::string mount_path;
  std::string bucket;
};

// The keys a replicated (multi-node) task adds, all emitted together.
struct Replication {
  std::int64_t replicas = 2;
  bool leader_selection = true;
  std::string synchronized_start_timeout = "4h";
  bool host_networking = true;
  bool propagate_failure = true;
  bool propagate_preemption = true;
};

struct Context {
  std::string priority = "high";
  std::string min_runtime = "0h";
  bool auto_resume = true;
};

struct Task {
  std::string name;
  Image image;
  std::vector<std::string> command;
  std::optional<Replication> replication;
  std::vector<EnvVar> env_vars; // rendered in this order (callers sort them)
  std::vector<WekaMount> datasets;
  std::string result_path = "/tmp/beaker-result";
  std::int64_t gpu_count = 0;
  double cpu_count = 0; // resources.cpuCount, emitted when > 0
  std::string memory;   // resources.memory ("1GiB"), emitted when non-empty
  Context context;
  std::vector<std::string> clusters;
};

struct Experiment {
  std::string description;
  std::vector<Task> tasks;
  std::string budget; // emitted only when non-empty
  // retry.allowedTaskRetries (0..10): how often Beaker re-runs a failed task; emitted only when
  // > 0 (docs/recovery.md).
  std::int64_t allowed_task_retries = 0;
};

// The spec as JSON with Python PrimeBeaker's key order: version, description, tasks, [budget],
// [retry];
// task keys name, image, command, [replication keys], envVars, datasets, result, resources,
// context, constraints. Pure.
OrderedJson to_json(const Experiment &experiment);

// Everything Beaker would reject, one readable line each (empty when the spec is fine):
// unique non-empty task names, one image, a command, unique env names each with a value or a
// secret, absolute non-overlapping mount paths, an absolute result path, gpuCount >= 0, a known
// priority, at least one cluster, replicas >= 1 and a start timeout in (0, 48h]. Pure.
std::vector<std::string> problems(const Experiment &experiment);

// Beaker priorities accepted by the scheduler (context.priority), highest first.
const std::vector<std::string> &known_priorities();
bool is_known_priority(std::string_view priority);

// Beaker workspace names look like ACCOUNT/NAME. Pure.
bool is_workspace_name(std::string_view workspace);

} // namespace pb::beaker
