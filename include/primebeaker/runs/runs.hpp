// SPDX-License-Identifier: MIT
// Following what was launched (docs/runs.md): the per-replica view of a Beaker experiment read
// from `beaker experiment get ID --format json`, the classification rules (Go's zero time is
// unset, preemption comes from canceledCode, sibling cancellations are not failures), and the
// follow loop behind `primebeaker follow` and `submit --follow`.
#pragma once

#include <primebeaker/beaker/client.hpp>
#include <primebeaker/core/clock.hpp>
#include <primebeaker/core/json.hpp>
#include <primebeaker/core/process.hpp>

#include <chrono>
#include <cstdint>
#include <functional>
#include <iosfwd>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace pb::runs {

// ---- Classification (pure) ----

// A Beaker timestamp: nullopt when missing, null, empty, unparsable or Go's zero time
// (year 1, `0001-01-01T00:00:00Z`), which Beaker prints for "not set".
using TimePoint = std::chrono::system_clock::time_point;
std::optional<TimePoint> parse_time(const OrderedJson &value);
std::optional<TimePoint> parse_time_text(std::string_view text);

// The state of one job, from its `status` object.
enum class JobState : std::uint8_t {
  pending,   // created, not scheduled
  scheduled, // placed on a node, not started
  running,
  uploading, // exited, results not finalized yet
  succeeded,
  failed,
  preempted,        // canceledCode 1/2 (or system_preemption, user_preemption,
                    // sibling_task_preemption), even when finalized with an exit code
  canceled,         // stopped by a user, idle, timeout, ...
  sibling_canceled, // stopped because a sibling replica failed or finished
};
std::string_view state_name(JobState state); // "pending", ..., "canceled (sibling)"
bool is_terminal(JobState state);

// Beaker's canceledCode: a number (1 system preemption, 2 user preemption, 3 idle, 4 manual)
// or the newer string names. Pure.
JobState classify_job(const OrderedJson &status);

// How the run ended (or that it has not).
enum class Outcome : std::uint8_t { running, succeeded, failed, preempted, canceled };
std::string_view outcome_name(Outcome outcome);

// Exit codes of `follow` (and `submit --follow`), one per outcome (docs/runs.md).
inline constexpr int k_exit_succeeded = 0;
inline constexpr int k_exit_failed = 10;
inline constexpr int k_exit_preempted = 11;
inline constexpr int k_exit_canceled = 12;
inline constexpr int k_exit_timed_out = 13;
// `follow --recover`: the run ended in a way no retry can mend (a configuration error, exit 3
// of a replica; `rl resume` refusing for a reason that stays, such as a missing secret).
inline constexpr int k_exit_not_recoverable = 14;
int exit_code_for(Outcome outcome); // running -> k_exit_timed_out

// One job of a replica (every attempt, oldest first): what GPU-hours and queue time are
// computed from (include/primebeaker/runs/usage.hpp).
struct JobSpan {
  std::string job_id;
  std::string cluster;
  std::optional<TimePoint> created, started;
  // When it let its GPUs go: the first of exited, failed, finalized; canceled when it ended
  // without those; nullopt while it runs (or never started).
  std::optional<TimePoint> ended;
  bool terminal = false;
};

// One replica: the newest job of one (task, replica rank).
struct Replica {
  std::string role; // trainer / inference / sft / rl / the task name
  int rank = 0;
  std::string task_id;
  std::string task_name;
  std::string job_id;
  std::string node;
  std::string cluster;
  JobState state = JobState::pending;
  std::optional<int> exit_code;
  OrderedJson canceled_code; // as Beaker gave it (null when absent)
  std::string canceled_for;
  std::string message;
  std::optional<TimePoint> created, scheduled, ready, started, exited, failed_at, finalized,
      canceled;
  int gpus = 0;              // the task's resources.gpuCount (0 when the spec names none)
  std::string priority;      // the task's context.priority ("" when not given)
  std::vector<JobSpan> jobs; // every job of this replica, oldest first (the last is this one)
  int attempts = 1;          // jobs Beaker created for this replica (retries, preemption restarts)
  int preemptions = 0;       // earlier jobs of this replica that ended preempted
  // A failure caused by another one: exit 90/92 of the node runtime (a peer failed / asked
  // to shut down), or a cancellation after a sibling's failure.
  bool consequence = false;
  std::string detail; // one human line: "exit code 1", "canceled: sibling task failed", ...

  std::string label() const; // "trainer:0"
};

// One experiment as this tool shows it.
struct RunView {
  std::string id;
  std::string name;
  std::string full_name;
  std::string description;
  std::string author;
  std::string workspace;
  std::optional<TimePoint> created;
  std::vector<Replica> replicas;          // tasks in order, then rank
  std::map<std::string, std::string> env; // plain envVars of the task spec
  std::vector<std::string> command;       // the task's command
  bool auto_resume = false;               // context.autoResume
  std::vector<std::string> clusters;      // the spec's constraints.cluster (asked for)
  Outcome outcome = Outcome::running;
  std::optional<std::size_t> deciding_replica; // index of the replica that decided it
};

// Reads one experiment object (§5.3 of the Beaker CLI facts in docs/runs.md): unknown fields
// ignored, missing optional fields accepted. The newest job (by status.created) of each
// (task, replicaRank) is the replica; earlier jobs count as attempts. Pure.
RunView parse_run(const OrderedJson &experiment);

// The first element of `beaker experiment get` output (an array, or one object). Throws
// pb::Error exit 4 when there is none.
const OrderedJson &single_experiment(const OrderedJson &got, const std::string &what);

// True when the experiment looks like this tool's launch: a "PrimeBeaker " description, a
// `primebeaker ...` task command, or the launcher's CONFIG_PATH + OUTPUT_DIR env pair. Pure.
bool is_primebeaker_launch(const OrderedJson &experiment);

// "2 running, 1 pending" (states in a fixed order). Pure.
std::string state_summary(const RunView &run);

// ---- Talking to beaker ----

// Through the one beaker::Client (docs/runs.md "Transient failures"): this module's calls are
// tried again with beaker::RetryPolicy::for_reads() while they fail transiently, and the follow
// loop waits by the client's Timing.
using beaker::is_transient_failure;
using beaker::Timing;

// ---- Following ----

// `follow --recover` (docs/recovery.md, include/primebeaker/runs/recover.hpp): resubmit a run
// that ended preempted (or failed, within --max-restarts-on-errors) through `rl resume`.
struct RecoverOptions {
  bool enabled = false;
  // Waits before a resubmission: `backoff` before the first of this follow, doubled for each
  // later one (and for each retry of a failed `rl resume`), at most `max_backoff`.
  std::chrono::milliseconds backoff{60000};
  std::chrono::milliseconds max_backoff{900000};
  int resume_tries = 3; // `rl resume` runs per recovery while it fails with exit 1 or 4
  // What runs `rl resume`: argv before "rl", "resume"; empty = this program (self::command()).
  proc::Argv program;
  // Who this follower is in the ledger's claims (actor_identity()); empty: worked out.
  std::string actor;
  // A claim by another actor whose new experiment is not recorded after this long is taken
  // over (same experiment name, so never submitted twice).
  std::chrono::milliseconds claim_lease{900000};
  // Run as the recovery controller on Beaker (docs/recovery.md "The controller"): no logs,
  // `controller.json` kept in the ledger, exit 0 once the run has ended whatever its outcome.
  bool controller = false;
};

struct FollowOptions {
  std::optional<int> replica;                       // only this replica rank (every task)
  std::optional<TimePoint> since;                   // drop log lines stamped before this
  std::optional<std::chrono::milliseconds> timeout; // stop following (run keeps going)
  std::chrono::milliseconds poll_interval{10000};
  // After a preemption of a task Beaker resumes by itself (context.autoResume), how long to
  // wait for its new job before calling the run preempted.
  std::chrono::milliseconds resume_grace{600000};
  beaker::RetryPolicy retry = beaker::RetryPolicy::for_reads();
  RecoverOptions recover;
  bool logs = true; // false: states only (the recovery controller saves its beaker calls)
};

// Streams every replica's log lines to `out`, each prefixed "[role:rank] ", polling until the
// run ends; state changes and the closing summary go to `err`. Returns the outcome's exit code
// (k_exit_*), k_exit_timed_out when options.timeout passed first, or 130 when interrupted.
// Never stops the run. With options.recover.enabled, a run that ends preempted (or failed) is
// resubmitted within its budget and the new experiment followed; the code is then that of the
// last experiment followed (--timeout counts from the start, across experiments).
int follow_run(const std::string &experiment_id,
               const FollowOptions &options,
               beaker::Client &beaker,
               std::ostream &out,
               std::ostream &err);

// The entry point for `submit --follow`: follows `experiment_id` with the `beaker` program of
// PRIMEBEAKER_BEAKER (or PATH), the system clock, and Ctrl-C/SIGTERM turned into "stop
// following" (exit 130/143; the run keeps running). Logs go to `out`, progress to stderr.
int follow(const std::string &experiment_id,
           const FollowOptions &options,
           proc::Runner &runner,
           std::ostream &out);

// Log lines of one fetch after the first `already` bytes: complete lines only, unless
// `final` (then a last unterminated line too). Returns the bytes consumed. Pure.
std::size_t take_new_lines(const std::string &log,
                           std::size_t already,
                           bool final,
                           std::vector<std::string> &lines);

// Whether a log line survives --since: lines starting with an RFC 3339 stamp are compared;
// unstamped lines inherit the verdict of the line before (`previous`). Pure.
bool keep_since(std::string_view line, const std::optional<TimePoint> &since, bool previous);

// --since: an RFC 3339 time, or a duration back from `now` ("90s", "10m", "2h", "1d").
// Throws pb::Error exit 2. Pure.
TimePoint parse_since(std::string_view text, TimePoint now);

// --timeout: "0" = forever, seconds, or a duration ("30m", "2h"). Throws pb::Error exit 2.
std::optional<std::chrono::milliseconds> parse_timeout(std::string_view text);

// ---- Which run (RUN argument) ----

// What a RUN argument names: an experiment id, a name, or a receipt file written from the
// output of `sft|rl submit`, `run launch` or `rl resume`.
struct RunTarget {
  std::string reference;             // what `beaker experiment get` is given (id or author/name)
  std::string service_experiment_id; // the service stack a joint run owns (run launch)
  std::optional<std::string> wandb_url;
  std::optional<std::string> experiment_url;
  std::string receipt; // the receipt file, when RUN was one
  // The run's recovery controller as the receipt recorded it (recovery.controller), so that
  // `stop` finds it by id; empty when none was submitted.
  std::string controller_experiment_id;
  std::string controller_name;
};

// True for a 26-character Beaker ULID (digits and upper-case letters). Pure.
bool looks_like_experiment_id(std::string_view text);

// Reads a receipt: `experiment_id` when present, else the id in `stdout` ("Experiment ID
// submitted"); `run launch` receipts ({service_experiment_id, service, rl}) and `rl resume`
// receipts ({resume, child_experiment_id, stdout}) too. Throws pb::Error exit 3 naming
// `where` when no experiment can be found in it. Pure.
RunTarget target_from_receipt(const OrderedJson &receipt, const std::string &where);

// RUN as a receipt file: the experiment an existing file names (target_from_receipt); nullopt
// when RUN is no file and does not look like a path (an id or a name). Throws pb::Error exit 3
// for a file that is no receipt, or a path ("./x", "/x", "x.json") that does not exist.
std::optional<RunTarget> receipt_target(const std::string &run);

// RUN as given: an existing file is a receipt; an experiment id is used as is; "author/name"
// as is; a bare name becomes "<you>/<name>" (`beaker account whoami`).
RunTarget resolve_target(const std::string &run, beaker::Client &beaker);

// A sweep (docs/sweep.md) as RUN: its receipt file (`"sweep"` and `"variants"`, each a launch
// receipt), or `group:<name or id>` (`beaker group experiments`). Its name and one target per
// experiment; nullopt when RUN is neither.
struct SweepTargets {
  std::string name;
  std::vector<RunTarget> variants;
};
std::optional<SweepTargets> resolve_sweep(const std::string &run, beaker::Client &beaker);

} // namespace pb::runs
