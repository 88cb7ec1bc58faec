// SPDX-License-Identifier: MIT
// Experiment JSON in the shape `beaker experiment get ID --format json` prints (docs/runs.md),
// built per test so each one says exactly which status fields are set.
#pragma once

#include <primebeaker/core/json.hpp>

#include <string>
#include <vector>

namespace pb::test::runs {

inline constexpr const char *k_experiment = "01JZ8M3Q4T5V6W7X8Y9Z0A1B2C";
inline constexpr const char *k_service = "01JZ8M3Q4T5V6W7X8Y9Z0SERVC";
inline constexpr const char *k_zero = "0001-01-01T00:00:00Z";

inline std::string stamp(int minute, int second = 0) {
  char buffer[32];
  std::snprintf(buffer, sizeof buffer, "2026-08-10T10:%02d:%02d.250Z", minute, second);
  return buffer;
}

// Job statuses. Every unset timestamp is Go's zero time, as the Beaker CLI prints them.
inline OrderedJson status_pending() {
  return {{"created", stamp(0)},
          {"scheduled", k_zero},
          {"started", k_zero},
          {"exited", k_zero},
          {"failed", k_zero},
          {"finalized", k_zero},
          {"canceled", k_zero},
          {"canceledCode", 0}};
}
inline OrderedJson status_scheduled() {
  auto s = status_pending();
  s["scheduled"] = stamp(1);
  return s;
}
inline OrderedJson status_running() {
  auto s = status_scheduled();
  s["started"] = stamp(2);
  s["ready"] = stamp(2, 30);
  return s;
}
inline OrderedJson status_exited(int code, int minute) {
  auto s = status_running();
  s["exited"] = stamp(minute);
  s["finalized"] = stamp(minute, 30);
  s["exitCode"] = code;
  return s;
}
// Preempted and then finalized with exit code 0: must still read as preempted.
inline OrderedJson status_preempted(int minute) {
  auto s = status_exited(0, minute);
  s["canceled"] = stamp(minute - 1);
  s["canceledCode"] = 1;
  s["canceledFor"] = "preempted by a higher priority job";
  return s;
}
inline OrderedJson status_canceled(int code, const std::string &why, int minute, int exit_code) {
  auto s = status_exited(exit_code, minute);
  s["canceled"] = stamp(minute - 1);
  s["canceledCode"] = code;
  s["canceledFor"] = why;
  return s;
}

inline OrderedJson env_list(const std::vector<std::pair<std::string, std::string>> &env) {
  OrderedJson list = OrderedJson::array();
  for (const auto &[name, value] : env) {
    list.push_back({{"name", name}, {"value", value}});
  }
  list.push_back({{"name", "WANDB_API_KEY"}, {"secret", "WANDB_API_KEY"}});
  return list;
}

// One job of the multi-node RL task (rank 0 carries the full spec, as in Beaker's output).
inline OrderedJson job(const std::string &id,
                       int rank,
                       OrderedJson status,
                       const std::string &task = "01JZ8M3QZZ0000000000000T01",
                       const std::vector<std::pair<std::string, std::string>> &env = {},
                       std::vector<std::string> command = {"primebeaker", "node", "rl"}) {
  OrderedJson spec = {{"name", "prime-rl-multinode"}, {"replicas", 4}};
  if (rank == 0) {
    spec["command"] = command;
    spec["envVars"] = env_list(env);
    spec["context"] = {{"priority", "high"}, {"autoResume", false}};
  }
  return {{"id", id},
          {"kind", "execution"},
          {"name", "prime-rl-multinode-replica-" + std::to_string(rank)},
          {"cluster", "ai2/jupiter"},
          {"node", "node-" + std::to_string(rank)},
          {"status", std::move(status)},
          {"execution",
           {{"task", task},
            {"experiment", k_experiment},
            {"replicaRank", rank},
            {"replicaGroupID", "01JZ8M3QRG000000000000000G"},
            {"spec", spec}}}};
}

inline OrderedJson experiment(std::vector<OrderedJson> jobs,
                              const std::string &id = k_experiment,
                              const std::string &author = "jdoe",
                              const std::string &description = "PrimeBeaker multi-node RL search") {
  return {{"id", id},
          {"name", "search"},
          {"fullName", author + "/search"},
          {"description", description},
          {"author", {{"id", "01HA"}, {"name", author}}},
          {"created", stamp(0)},
          {"workspaceRef", {{"fullName", "ai2/oe-agents"}}},
          {"jobs", std::move(jobs)}};
}

// What `beaker experiment get` prints: an array of one experiment.
inline std::string printed(const OrderedJson &experiment_object) {
  OrderedJson array = OrderedJson::array();
  array.push_back(experiment_object);
  return array.dump();
}

inline std::string job_id(int rank, int attempt = 1) {
  return "01JOB" + std::to_string(attempt) + "000000000000000000000" + std::to_string(rank);
}

// Four replicas (trainer + 3 inference) all in `status`.
inline OrderedJson four(const OrderedJson &status,
                        const std::vector<std::pair<std::string, std::string>> &env = {}) {
  std::vector<OrderedJson> jobs;
  for (int rank = 0; rank < 4; ++rank) {
    jobs.push_back(job(job_id(rank), rank, status, "01JZ8M3QZZ0000000000000T01", env));
  }
  return experiment(jobs);
}

} // namespace pb::test::runs
