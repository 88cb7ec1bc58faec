// SPDX-License-Identifier: MIT
// The attempt ledger of a run (docs/recovery.md): one file per start of the run's replicas, on
// the shared mount beside its checkpoints, never rewritten. The node runtime appends a start
// record before training (and an end record when it exits), `follow --recover` a recovery
// record when it resubmits, and `status` / `list` read it. Records, their JSON, the
// exclusive-create writes and the summary live here, in the shared checkpoints layer, so that
// node and runs agree on one format.
#pragma once

#include <primebeaker/core/json.hpp>

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace pb::recovery::ledger {

inline constexpr int k_schema_version = 1;

// Why a start happened (docs/recovery.md "Causes").
inline constexpr std::string_view k_first_start = "first_start";
inline constexpr std::string_view k_preemption = "preemption";
inline constexpr std::string_view k_error = "error";
inline constexpr std::string_view k_resubmission = "resubmission";
inline constexpr std::string_view k_after_success = "after_success";

// <output_dir>/primebeaker_recovery/ledger/<run_id>
std::filesystem::path directory(const std::filesystem::path &output_dir, std::string_view run_id);
// Where steps moved aside go: <output_dir>/primebeaker_recovery/set_aside
std::filesystem::path set_aside_root(const std::filesystem::path &output_dir);

// A run id names a directory: 1-128 of [A-Za-z0-9_.-], not starting with a dot.
bool valid_run_id(std::string_view run_id);
// The directory name for a W&B run id: other characters become '-', leading dots dropped, at
// most 128 characters ("run" when nothing is left). The runtime and `status` both use it.
std::string run_key(std::string_view run_id);

// One start of a run (`<n>.json`), written by replica 0 (or `node single`) once per attempt.
struct Start {
  std::int64_t attempt = 0; // n, from 1; assigned by append_start()
  std::string run_id;       // the W&B run id: the same across restarts and resubmissions
  std::string launch_id;    // LAUNCH_ID (multi-node; rl resume: its attempt id); empty single-node
  std::string job_id;       // BEAKER_JOB_ID, "manual" when unset
  std::string experiment_id;
  std::string replica;     // "node rl", "node sft", "node single rl", "node single sft"
  double started_unix = 0; // seconds since the epoch
  std::string cause;       // k_first_start, ...
  std::optional<int> previous_exit_code;       // the code that ended the attempt before, when known
  std::optional<std::int64_t> resume_step;     // null: a fresh start
  std::optional<std::int64_t> newest_complete; // on disk at this start (differs when pinned)
  std::optional<std::int64_t> last_step_seen;  // newest step the trainer is shown to have completed
  std::int64_t steps_lost = 0;                 // last_step_seen - resume_step, at least 0
  double time_lost_seconds = 0; // of the previous attempt, after its last surviving checkpoint
  double downtime_seconds = 0;  // from the previous attempt's end to this start
  std::vector<std::string> set_aside;     // step directories moved aside (paths as moved to)
  std::int64_t preemptions_recovered = 0; // counting this start
  std::int64_t error_restarts = 0;        // counting this start
  std::int64_t max_recoveries = 10;
  std::int64_t max_restarts_on_errors = 0;
  std::string refused; // non-empty: the start was refused with this line and trained nothing
};

// How an attempt ended (`<n>.end.json`), when its replica 0 lived to say so.
struct End {
  std::int64_t attempt = 0;
  double ended_unix = 0;
  int exit_code = 0; // replica 0's own exit code
  int root_code = 0; // the code that decided it: a failed peer's own code instead of 90/92
  std::string message;
};

// A resubmission by `follow --recover` after attempt `attempt` ended (`<n>.recover.json`).
struct Recover {
  std::int64_t attempt = 0;
  double requested_unix = 0;
  std::string cause; // k_preemption or k_error
  std::optional<int> exit_code;
  std::string source_experiment;
  std::string child_experiment; // empty when the resubmission failed
  std::string error;            // why it failed
};

// Who resubmits a given preemption (docs/recovery.md "Exactly one resubmission"): before a
// recovering actor (the controller on Beaker, a second controller, a terminal `follow
// --recover`) runs `rl resume` for an experiment that ended, it claims that experiment in
// `claims/<source>.<generation>.json`, created exclusively: of racing actors one wins. The claim
// fixes the new experiment's name, so a takeover (the claimant restarted, or its lease ran out)
// submits under the same name or finds the experiment already created under it. When the
// resubmission is done, `claims/<source>.child.json` names the new experiment.
struct Claim {
  std::string source_experiment;
  int generation = 1;      // 1 = the first claim; a takeover creates generation + 1
  std::string cause;       // k_preemption or k_error
  std::int64_t number = 0; // the recovery's number against its budget
  std::string by;          // "controller <experiment id>" or "terminal <host> <pid>"
  double claimed_unix = 0;
  std::string attempt_id; // `rl resume --attempt-id`
  std::string child_name; // `rl resume --child-name`: the new experiment's exact name
  // From the `.child.json` record: the experiment submitted, empty while none is recorded.
  std::string child_experiment;
  double child_unix = 0;
  // Where the child starts: a step, or the start (no complete checkpoint); both unset when the
  // recorder did not know (a takeover that found the child by name).
  std::optional<std::int64_t> child_resume_step;
  bool child_from_start = false;
};

struct Attempt {
  Start start;
  std::optional<End> end;
  std::optional<Recover> recover;
};

struct Ledger {
  std::vector<Attempt> attempts;       // ascending by attempt
  std::vector<std::string> unreadable; // files that could not be parsed (named, skipped)
  std::vector<Claim> claims; // per source experiment, its newest generation; by claimed_unix
  const Attempt *last() const { return attempts.empty() ? nullptr : &attempts.back(); }
  const Claim *claim_of(std::string_view source_experiment) const;
  // Whether a start of `experiment_id` is recorded (its replica 0 has started).
  bool started(std::string_view experiment_id) const;
};

OrderedJson to_json(const Start &start);
OrderedJson to_json(const End &end);
OrderedJson to_json(const Recover &recover);
// Throw pb::Error (exit 3) on a malformed record.
Start start_from_json(const nlohmann::json &j);
End end_from_json(const nlohmann::json &j);
Recover recover_from_json(const nlohmann::json &j);

// Reads every record of `dir` (a missing directory is an empty ledger). Pure parsing of
// `files` (name -> content) is ledger_from_files, for tests.
Ledger read(const std::filesystem::path &dir);
Ledger ledger_from_files(const std::vector<std::pair<std::string, std::string>> &files);

// Writes `start` as the next attempt: n = the highest start number in `dir` + 1, created
// exclusively (a temporary file, fsynced, then link()ed to `<n>.json`, which fails if another
// writer took n first; then n + 1 is tried). Returns n (also stored in start.attempt). Never
// replaces a file. Throws pb::Error (exit 1) on I/O failure.
std::int64_t append_start(const std::filesystem::path &dir, Start &start);
// `<n>.end.json` and `<n>.recover.json`, exclusively; false when the file already exists.
bool write_end(const std::filesystem::path &dir, const End &end);
bool write_recover(const std::filesystem::path &dir, const Recover &recover);

// `claim` as generation claim.generation of its source, exclusively: false when that
// generation exists (another actor claimed it first). Throws pb::Error (exit 1) on I/O failure.
bool write_claim(const std::filesystem::path &dir, const Claim &claim);
// Records the experiment a claim submitted (`claims/<source>.child.json`), exclusively: false
// when one is recorded already.
struct ChildStart {
  std::optional<std::int64_t> resume_step;
  bool from_start = false;
};
bool write_claim_child(const std::filesystem::path &dir,
                       const std::string &source_experiment,
                       const std::string &child_experiment,
                       double unix_seconds,
                       const ChildStart &from = {});

// One notification of `event` about `subject` (an experiment id; "<id>.attempt<n>" for a
// single-node restart), claimed by whoever posts it (docs/notify.md "Exactly one post"):
// `notify/<subject>.<event>.json`, created exclusively; false when another actor claimed it.
bool write_notification_claim(const std::filesystem::path &dir,
                              std::string_view subject,
                              std::string_view event,
                              std::string_view by,
                              double unix_seconds);

// What the recovery controller last did (docs/recovery.md "The controller"):
// `controller.json` beside the ledger's records, replaced atomically on every change.
struct ControllerStatus {
  std::string controller_experiment; // the controller's own experiment (BEAKER_EXPERIMENT_ID)
  std::string following;             // the training experiment it watches now
  std::string state;                 // "following", "recovering", "waiting", "ended"
  std::string last_action;           // one line
  double updated_unix = 0;
  int restarts = 0; // of the controller itself (its job changed)
  std::string job_id;
};
void write_controller_status(const std::filesystem::path &dir, const ControllerStatus &status);
// nullopt when the ledger has none (or it cannot be read: a status is never worth an error).
std::optional<ControllerStatus> read_controller_status(const std::filesystem::path &dir);
OrderedJson to_json(const ControllerStatus &status);

// Who owns a run's checkpoints (docs/recovery.md "One run per output dir"): the first start of
// a launch claims the directory its checkpoints live in (v0.8.0: output_dir; v0.9: its run
// directory) for its W&B run id, so that no other run resumes from them.
struct Owner {
  std::string run_id;     // the W&B run id: the same across restarts, resubmissions, resumes
  std::string experiment; // BEAKER_EXPERIMENT_ID (or the launch id) of the claiming start
  std::string claimed_at; // utc_text
};

// <output_dir>/primebeaker_recovery/owner.json, or owner-<run dir>.json for a v0.9 run
// directory (`run_dir` non-empty).
std::filesystem::path owner_path(const std::filesystem::path &output_dir,
                                 std::string_view run_dir = {});
// The owner recorded at `path`, or nullopt when none is. Throws pb::Error exit 3 naming the
// file when it cannot be read as one.
std::optional<Owner> read_owner(const std::filesystem::path &path);
// The owner a file's text records (`path` names it in the error read_owner throws).
Owner parse_owner(std::string_view text, const std::filesystem::path &path);
// The text of an owner file recording `owner`.
std::string owner_text(const Owner &owner);
// Claims `path` for `mine` unless already claimed (exclusive create: of two racing starts one
// wins); returns the owner, `mine` or the earlier one.
Owner claim(const std::filesystem::path &path, const Owner &mine);
// The one line refusing a run over a directory another run owns (exit 3 by the caller), with
// how to fix it.
std::string ownership_refusal(const std::filesystem::path &path,
                              const std::filesystem::path &checkpoint_dir,
                              const Owner &owner,
                              std::string_view run_id,
                              bool v0_9 = false);

// RFC 3339 UTC with milliseconds ("2026-05-01T12:00:00.250Z").
std::string utc_text(double unix_seconds);

// What `status` and `list` show of a run's history (docs/recovery.md "Status").
struct Summary {
  std::int64_t attempts = 0;
  std::int64_t preemptions_recovered = 0;
  std::int64_t error_restarts = 0;
  std::int64_t resubmissions = 0; // manual (rl resume) and follow --recover
  std::int64_t refused = 0;
  std::vector<std::int64_t> steps_lost_per_preemption;
  std::optional<std::int64_t> last_resume_step;
  double total_seconds = 0;  // first start to the last end (or `now`)
  double useful_seconds = 0; // total minus time lost and downtime
  double lost_seconds = 0;
  double downtime_seconds = 0;
};
Summary summarize(const Ledger &ledger, double now_unix);
OrderedJson to_json(const Summary &summary);

} // namespace pb::recovery::ledger
