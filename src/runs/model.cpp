// SPDX-License-Identifier: MIT
// The per-replica view of a Beaker experiment and the classification rules of docs/runs.md.
// Everything here is pure.
#include "status.hpp"

#include <primebeaker/core/error.hpp>
#include <primebeaker/core/text.hpp>
#include <primebeaker/runs/runs.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <ctime>

namespace pb::runs {

namespace {

bool is_digits(std::string_view text) {
  return !text.empty() && std::all_of(text.begin(), text.end(), [](unsigned char c) {
    return std::isdigit(c) != 0;
  });
}

int to_int(std::string_view digits) {
  int value = 0;
  for (const char c : digits) {
    value = value * 10 + (c - '0');
  }
  return value;
}

std::string string_field(const OrderedJson &object, const char *key) {
  if (object.is_object()) {
    const auto it = object.find(key);
    if (it != object.end() && it->is_string()) {
      return it->get<std::string>();
    }
  }
  return {};
}

std::optional<int> int_field(const OrderedJson &object, const char *key) {
  const auto &value = field(object, key);
  if (value.is_number_integer()) {
    return value.get<int>();
  }
  if (value.is_number()) {
    return static_cast<int>(value.get<double>());
  }
  return std::nullopt;
}

// Beaker's cancellation code as a name: numbers of the REST model, strings of the gRPC one.
std::string cancel_code_name(const OrderedJson &code) {
  if (code.is_number_integer()) {
    switch (code.get<int>()) {
    case 1:
      return "system_preemption";
    case 2:
      return "user_preemption";
    case 3:
      return "idle";
    case 4:
      return "manual";
    default:
      return "";
    }
  }
  if (code.is_string()) {
    std::string name = lower_case(code.get<std::string>());
    // "CANCELATION_CODE_SYSTEM_PREEMPTION" and similar enum spellings.
    for (const std::string_view prefix : {"cancelation_code_", "cancellation_code_"}) {
      if (text::starts_with(name, prefix)) {
        name = name.substr(prefix.size());
      }
    }
    return name;
  }
  return "";
}

bool mentions_sibling(std::string_view text) {
  return lower_case(text).find("sibling") != std::string::npos;
}

// The node runtime's "a peer failed" / "shutdown requested by a peer" (docs/node.md).
bool is_consequence_exit(const std::optional<int> &code) {
  return code && (*code == 90 || *code == 92);
}

std::optional<TimePoint> earliest_end(const Replica &replica) {
  for (const auto &time : {replica.failed_at, replica.exited, replica.finalized}) {
    if (time) {
      return time;
    }
  }
  return std::nullopt;
}

} // namespace

std::optional<TimePoint> parse_time_text(std::string_view text) {
  // YYYY-MM-DDTHH:MM:SS[.fraction](Z|+HH:MM|-HH:MM)
  if (text.size() < 20 || text[4] != '-' || text[7] != '-' ||
      (text[10] != 'T' && text[10] != 't' && text[10] != ' ') || text[13] != ':' ||
      text[16] != ':') {
    return std::nullopt;
  }
  const auto year = text.substr(0, 4), month = text.substr(5, 2), day = text.substr(8, 2),
             hour = text.substr(11, 2), minute = text.substr(14, 2), second = text.substr(17, 2);
  for (const auto part : {year, month, day, hour, minute, second}) {
    if (!is_digits(part)) {
      return std::nullopt;
    }
  }
  if (to_int(year) <= 1) {
    return std::nullopt; // Go's zero time: unset
  }
  std::size_t pos = 19;
  std::int64_t nanos = 0;
  if (pos < text.size() && text[pos] == '.') {
    ++pos;
    int digits = 0;
    while (pos < text.size() && std::isdigit(static_cast<unsigned char>(text[pos])) != 0) {
      if (digits < 9) {
        nanos = nanos * 10 + (text[pos] - '0');
        ++digits;
      }
      ++pos;
    }
    if (digits == 0) {
      return std::nullopt;
    }
    for (; digits < 9; ++digits) {
      nanos *= 10;
    }
  }
  if (pos >= text.size()) {
    return std::nullopt;
  }
  std::int64_t offset_seconds = 0;
  const auto zone = text.substr(pos);
  if (zone == "Z" || zone == "z") {
    offset_seconds = 0;
  } else if ((zone[0] == '+' || zone[0] == '-') && zone.size() == 6 && zone[3] == ':' &&
             is_digits(zone.substr(1, 2)) && is_digits(zone.substr(4, 2))) {
    offset_seconds = (to_int(zone.substr(1, 2)) * 3600 + to_int(zone.substr(4, 2)) * 60) *
                     (zone[0] == '-' ? -1 : 1);
  } else {
    return std::nullopt;
  }
  std::tm tm{};
  tm.tm_year = to_int(year) - 1900;
  tm.tm_mon = to_int(month) - 1;
  tm.tm_mday = to_int(day);
  tm.tm_hour = to_int(hour);
  tm.tm_min = to_int(minute);
  tm.tm_sec = to_int(second);
  const std::time_t seconds = ::timegm(&tm);
  return TimePoint(std::chrono::duration_cast<TimePoint::duration>(
      std::chrono::seconds(seconds - offset_seconds) + std::chrono::nanoseconds(nanos)));
}

std::optional<TimePoint> parse_time(const OrderedJson &value) {
  if (!value.is_string()) {
    return std::nullopt;
  }
  return parse_time_text(value.get_ref<const std::string &>());
}

std::string_view state_name(JobState state) {
  switch (state) {
  case JobState::pending:
    return "pending";
  case JobState::scheduled:
    return "scheduled";
  case JobState::running:
    return "running";
  case JobState::uploading:
    return "uploading";
  case JobState::succeeded:
    return "succeeded";
  case JobState::failed:
    return "failed";
  case JobState::preempted:
    return "preempted";
  case JobState::canceled:
    return "canceled";
  case JobState::sibling_canceled:
    return "canceled (sibling)";
  }
  return "unknown";
}

bool is_terminal(JobState state) {
  switch (state) {
  case JobState::succeeded:
  case JobState::failed:
  case JobState::preempted:
  case JobState::canceled:
  case JobState::sibling_canceled:
    return true;
  default:
    return false;
  }
}

std::string_view outcome_name(Outcome outcome) {
  switch (outcome) {
  case Outcome::running:
    return "running";
  case Outcome::succeeded:
    return "succeeded";
  case Outcome::failed:
    return "failed";
  case Outcome::preempted:
    return "preempted";
  case Outcome::canceled:
    return "canceled";
  }
  return "unknown";
}

int exit_code_for(Outcome outcome) {
  switch (outcome) {
  case Outcome::succeeded:
    return k_exit_succeeded;
  case Outcome::failed:
    return k_exit_failed;
  case Outcome::preempted:
    return k_exit_preempted;
  case Outcome::canceled:
    return k_exit_canceled;
  case Outcome::running:
    break;
  }
  return k_exit_timed_out;
}

JobState classify_job(const OrderedJson &status) {
  const std::string code = cancel_code_name(field(status, "canceledCode"));
  const bool canceled = parse_time(field(status, "canceled")).has_value() || !code.empty();
  const bool finalized = parse_time(field(status, "finalized")).has_value();
  const bool exited = parse_time(field(status, "exited")).has_value();
  const bool failed = parse_time(field(status, "failed")).has_value();
  const auto exit_code = int_field(status, "exitCode");

  // Preemption first: a job finalized after preemption is preempted, whatever else is set.
  if (code == "system_preemption" || code == "user_preemption" ||
      code == "sibling_task_preemption") {
    return JobState::preempted;
  }
  if (canceled) {
    // Ended, or canceled before it ever started (nothing left to stop).
    const bool over = finalized || exited || failed || !parse_time(field(status, "started"));
    if (code == "sibling_task_failed" || code == "sibling_task_retry" ||
        mentions_sibling(string_field(status, "canceledFor"))) {
      return over ? JobState::sibling_canceled : JobState::running;
    }
    return over ? JobState::canceled : JobState::running; // running: still stopping
  }
  if (failed) {
    return JobState::failed;
  }
  if (finalized) {
    return exit_code && *exit_code == 0 ? JobState::succeeded : JobState::failed;
  }
  if (exited) {
    return JobState::uploading;
  }
  if (parse_time(field(status, "started"))) {
    return JobState::running;
  }
  if (parse_time(field(status, "scheduled"))) {
    return JobState::scheduled;
  }
  return JobState::pending;
}

std::string Replica::label() const {
  return fmt::format("{}:{}", role, rank);
}

namespace {

std::string describe(const Replica &replica) {
  const std::string reason =
      replica.canceled_for.empty() ? std::string() : ": " + replica.canceled_for;
  switch (replica.state) {
  case JobState::succeeded:
    return "exit code 0";
  case JobState::failed:
    if (replica.exit_code) {
      std::string text = fmt::format("exit code {}", *replica.exit_code);
      if (*replica.exit_code == 90) {
        text += " (a peer replica failed)";
      } else if (*replica.exit_code == 92) {
        text += " (shut down by a peer)";
      }
      return text;
    }
    return replica.message.empty() ? "failed" : replica.message;
  case JobState::preempted:
    return "preempted" +
           (reason.empty() ? " (" + cancel_code_name(replica.canceled_code) + ")" : reason);
  case JobState::canceled:
    return "canceled" + reason;
  case JobState::sibling_canceled:
    return replica.canceled_for.empty() ? "canceled because a sibling replica failed"
                                        : "canceled: " + replica.canceled_for;
  case JobState::uploading:
    return replica.exit_code ? fmt::format("exited {}, uploading results", *replica.exit_code)
                             : "uploading results";
  default:
    return replica.message;
  }
}

// Whether a task's command runs primebeaker: `primebeaker` from the image's PATH, or a staged
// copy (an absolute path ending in /primebeaker, docs/staging.md).
bool is_primebeaker_program(const std::vector<std::string> &command) {
  if (command.empty()) {
    return false;
  }
  const std::string &program = command.front();
  return program == "primebeaker" || program.ends_with("/primebeaker");
}

// The role of a replica from the task's command (docs/runs.md "Roles").
std::string role_for(const std::vector<std::string> &command,
                     const std::string &task_name,
                     int rank,
                     const std::map<std::string, std::string> &env) {
  const auto has = [&](std::size_t i, std::string_view word) {
    return command.size() > i && command[i] == word;
  };
  if (is_primebeaker_program(command) && has(1, "node")) {
    if (has(2, "rl")) {
      // Prime-RL v0.9 places inference first (docs/launch.md "Prime-RL v0.9").
      const auto generation = env.find("PRIME_RL_GENERATION");
      const auto infer = env.find("NUM_INFER_NODES");
      if (generation != env.end() && generation->second == "v0.9" && infer != env.end()) {
        const auto infer_nodes = text::parse_integer(infer->second).value_or(0);
        return rank < infer_nodes ? "inference" : "trainer";
      }
      return rank == 0 ? "trainer" : "inference";
    }
    if (has(2, "sft")) {
      return "sft";
    }
    if (has(2, "single") && command.size() > 3) {
      return command[3];
    }
  }
  return task_name.empty() ? "task" : task_name;
}

// Decides the run's outcome from its replicas and marks consequences (docs/runs.md
// "Outcome"): the first real failure, then preemption, then consequence failures, then
// cancellation; success when every replica ended well.
void decide_outcome(RunView &run) {
  auto &replicas = run.replicas;
  for (auto &replica : replicas) {
    replica.consequence =
        replica.state == JobState::sibling_canceled ||
        (replica.state == JobState::failed && is_consequence_exit(replica.exit_code));
  }
  // The earliest real failure, by when it ended (rank breaks ties).
  std::optional<std::size_t> first_failure;
  for (std::size_t i = 0; i < replicas.size(); ++i) {
    const auto &replica = replicas[i];
    if (replica.state != JobState::failed || replica.consequence) {
      continue;
    }
    if (!first_failure) {
      first_failure = i;
      continue;
    }
    const auto mine = earliest_end(replica), best = earliest_end(replicas[*first_failure]);
    if (mine && (!best || *mine < *best)) {
      first_failure = i;
    }
  }
  // Cancellations after that failure, whatever their reason text, are its consequence
  // (propagateFailure); a manual cancellation stays what it was.
  if (first_failure) {
    const auto failed_at = earliest_end(replicas[*first_failure]);
    for (auto &replica : replicas) {
      if (replica.state == JobState::canceled &&
          cancel_code_name(replica.canceled_code) != "manual" && failed_at && replica.canceled &&
          *replica.canceled >= *failed_at) {
        replica.state = JobState::sibling_canceled;
        replica.consequence = true;
      }
    }
  }
  for (auto &replica : replicas) {
    replica.detail = describe(replica);
  }
  if (replicas.empty() || std::any_of(replicas.begin(), replicas.end(), [](const Replica &r) {
        return !is_terminal(r.state);
      })) {
    run.outcome = Outcome::running;
    if (first_failure) {
      run.deciding_replica = first_failure; // failing, not finished
    }
    return;
  }
  const auto find = [&](auto predicate) -> std::optional<std::size_t> {
    for (std::size_t i = 0; i < replicas.size(); ++i) {
      if (predicate(replicas[i])) {
        return i;
      }
    }
    return std::nullopt;
  };
  if (first_failure) {
    run.outcome = Outcome::failed;
    run.deciding_replica = first_failure;
  } else if (const auto preempted =
                 find([](const Replica &r) { return r.state == JobState::preempted; })) {
    run.outcome = Outcome::preempted;
    run.deciding_replica = preempted;
  } else if (const auto consequence =
                 find([](const Replica &r) { return r.state == JobState::failed; })) {
    run.outcome = Outcome::failed;
    run.deciding_replica = consequence;
  } else if (const auto canceled =
                 find([](const Replica &r) { return r.state == JobState::canceled; })) {
    run.outcome = Outcome::canceled;
    run.deciding_replica = canceled;
  } else if (find([](const Replica &r) { return r.state == JobState::succeeded; })) {
    run.outcome = Outcome::succeeded;
  } else {
    // Only sibling cancellations: nothing succeeded and nothing failed on its own.
    run.outcome = Outcome::canceled;
    run.deciding_replica = 0;
  }
}

struct JobEntry {
  const OrderedJson *job = nullptr;
  std::optional<TimePoint> created;
  std::size_t order = 0;
};

} // namespace

RunView parse_run(const OrderedJson &experiment) {
  RunView run;
  run.id = string_field(experiment, "id");
  run.name = string_field(experiment, "name");
  run.full_name = string_field(experiment, "fullName");
  run.description = string_field(experiment, "description");
  run.author = string_field(field(experiment, "author"), "name");
  run.workspace = string_field(field(experiment, "workspaceRef"), "fullName");
  run.created = parse_time(field(experiment, "created"));

  // Group jobs by (task, rank), tasks in order of first appearance.
  std::vector<std::string> task_order;
  std::map<std::string, std::map<int, std::vector<JobEntry>>> groups;
  std::map<std::string, std::vector<std::string>> task_commands;
  std::map<std::string, std::string> task_names;
  std::map<std::string, int> task_gpus;
  std::map<std::string, std::string> task_priority;
  const auto &jobs = field(experiment, "jobs");
  if (jobs.is_array()) {
    std::size_t order = 0;
    for (const auto &job : jobs) {
      if (!job.is_object()) {
        continue;
      }
      const auto &execution = field(job, "execution");
      std::string task = string_field(execution, "task");
      if (task.empty()) {
        task = string_field(job, "name");
      }
      const int rank = int_field(execution, "replicaRank").value_or(0);
      if (groups.find(task) == groups.end()) {
        task_order.push_back(task);
      }
      groups[task][rank].push_back(
          {&job, parse_time(field(field(job, "status"), "created")), order++});
      const auto &spec = field(execution, "spec");
      const auto &command = field(spec, "command");
      if (command.is_array() && task_commands[task].empty()) {
        for (const auto &word : command) {
          if (word.is_string()) {
            task_commands[task].push_back(word.get<std::string>());
          }
        }
        if (run.command.empty()) {
          run.command = task_commands[task];
        }
      }
      if (task_names[task].empty()) {
        task_names[task] = string_field(spec, "name");
      }
      // GPUs per replica: the spec's gpuCount, else what Beaker assigned (limits.gpus).
      if (task_gpus[task] == 0) {
        if (const auto count = int_field(field(spec, "resources"), "gpuCount")) {
          task_gpus[task] = std::max(0, *count);
        } else if (const auto &assigned = field(field(job, "limits"), "gpus");
                   assigned.is_array()) {
          task_gpus[task] = static_cast<int>(assigned.size());
        }
      }
      if (const auto &wanted = field(field(spec, "constraints"), "cluster");
          wanted.is_array() && run.clusters.empty()) {
        for (const auto &name : wanted) {
          if (name.is_string()) {
            run.clusters.push_back(name.get<std::string>());
          }
        }
      }
      if (task_priority[task].empty()) {
        task_priority[task] = string_field(field(spec, "context"), "priority");
      }
      const auto &env = field(spec, "envVars");
      if (env.is_array() && run.env.empty()) {
        for (const auto &variable : env) {
          const auto name = string_field(variable, "name");
          if (!name.empty() && field(variable, "value").is_string()) {
            run.env[name] = string_field(variable, "value");
          }
        }
        run.auto_resume = field(field(spec, "context"), "autoResume") == true;
      }
    }
  }

  for (const auto &task : task_order) {
    for (auto &[rank, entries] : groups[task]) {
      std::stable_sort(entries.begin(), entries.end(), [](const JobEntry &a, const JobEntry &b) {
        if (a.created && b.created && *a.created != *b.created) {
          return *a.created < *b.created;
        }
        return a.order < b.order;
      });
      const OrderedJson &job = *entries.back().job;
      const auto &status = field(job, "status");
      Replica replica;
      replica.rank = rank;
      replica.task_id = task;
      replica.task_name = task_names[task];
      replica.role = role_for(task_commands[task], task_names[task], rank, run.env);
      replica.job_id = string_field(job, "id");
      replica.node = string_field(job, "node");
      replica.cluster = string_field(job, "cluster");
      replica.state = classify_job(status);
      replica.exit_code = int_field(status, "exitCode");
      replica.canceled_code = field(status, "canceledCode");
      replica.canceled_for = string_field(status, "canceledFor");
      replica.message = string_field(status, "message");
      replica.created = parse_time(field(status, "created"));
      replica.scheduled = parse_time(field(status, "scheduled"));
      replica.ready = parse_time(field(status, "ready"));
      replica.started = parse_time(field(status, "started"));
      replica.exited = parse_time(field(status, "exited"));
      replica.failed_at = parse_time(field(status, "failed"));
      replica.finalized = parse_time(field(status, "finalized"));
      replica.canceled = parse_time(field(status, "canceled"));
      replica.gpus = task_gpus[task];
      replica.priority = task_priority[task];
      for (const auto &entry : entries) {
        const auto &job_status = field(*entry.job, "status");
        JobSpan span;
        span.job_id = string_field(*entry.job, "id");
        span.cluster = string_field(*entry.job, "cluster");
        span.created = parse_time(field(job_status, "created"));
        span.started = parse_time(field(job_status, "started"));
        span.terminal = is_terminal(classify_job(job_status));
        for (const char *key : {"exited", "failed", "finalized"}) {
          const auto time = parse_time(field(job_status, key));
          if (time && (!span.ended || *time < *span.ended)) {
            span.ended = time;
          }
        }
        if (!span.ended && span.terminal) {
          span.ended = parse_time(field(job_status, "canceled"));
        }
        replica.jobs.push_back(std::move(span));
      }
      replica.attempts = static_cast<int>(entries.size());
      for (std::size_t i = 0; i + 1 < entries.size(); ++i) {
        if (classify_job(field(*entries[i].job, "status")) == JobState::preempted) {
          ++replica.preemptions;
        }
      }
      run.replicas.push_back(std::move(replica));
    }
  }
  decide_outcome(run);
  return run;
}

const OrderedJson &single_experiment(const OrderedJson &got, const std::string &what) {
  if (got.is_array() && !got.empty() && got.front().is_object()) {
    return got.front();
  }
  if (got.is_object()) {
    return got;
  }
  throw tool_error(fmt::format("beaker experiment get {} returned no experiment", what));
}

bool is_primebeaker_launch(const OrderedJson &experiment) {
  if (text::starts_with(string_field(experiment, "description"), "PrimeBeaker ")) {
    return true;
  }
  const RunView run = parse_run(experiment);
  if (is_primebeaker_program(run.command)) {
    return true;
  }
  return run.env.count("CONFIG_PATH") > 0 && run.env.count("OUTPUT_DIR") > 0;
}

std::string state_summary(const RunView &run) {
  std::vector<std::string> parts;
  for (const auto state : {JobState::running,
                           JobState::uploading,
                           JobState::scheduled,
                           JobState::pending,
                           JobState::succeeded,
                           JobState::failed,
                           JobState::preempted,
                           JobState::canceled,
                           JobState::sibling_canceled}) {
    const auto count = std::count_if(run.replicas.begin(),
                                     run.replicas.end(),
                                     [&](const Replica &r) { return r.state == state; });
    if (count > 0) {
      parts.push_back(fmt::format("{} {}", count, state_name(state)));
    }
  }
  return parts.empty() ? "no jobs yet" : text::join(parts, ", ");
}

const OrderedJson &field(const OrderedJson &object, const char *key) {
  static const OrderedJson null_value;
  if (object.is_object()) {
    const auto it = object.find(key);
    if (it != object.end()) {
      return *it;
    }
  }
  return null_value;
}

} // namespace pb::runs
