// SPDX-License-Identifier: MIT
// The resume decision of every start (docs/recovery.md): pure decide(), and its few effects.
#include <primebeaker/core/error.hpp>
#include <primebeaker/core/text.hpp>
#include <primebeaker/primerl/config.hpp>
#include <primebeaker/recovery/decision.hpp>
#include <primebeaker/toml/edit.hpp>
#include <primebeaker/toml/value.hpp>

#include <fmt/format.h>

#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

namespace pb::recovery {

using checkpoints::EntryKind;
using checkpoints::FileState;
using checkpoints::parse_step_name;

namespace {

namespace fs = std::filesystem;

std::optional<std::int64_t> integer_at(const toml::Document &document,
                                       std::initializer_list<std::string_view> keys) {
  const toml::Value *value = document.root().find_path(keys);
  return value != nullptr ? value->integer() : std::nullopt;
}

// Codes that mean the replica was stopped from outside (SIGTERM, SIGHUP -> 143; SIGINT 130):
// what a preemption looks like to the runtime. Beaker restarts only after preemptions (with
// autoResume) or failures (with retries), so a start after such an end is a preemption.
bool stopped_from_outside(int code) {
  return code == 143 || code == 130;
}

std::string step_text(const std::optional<std::int64_t> &step) {
  return step ? fmt::format("step {}", *step) : std::string("none");
}

bool is_v0_9(const toml::Document &document) {
  return primerl::detect_generation(document).generation == primerl::Generation::v0_9;
}

bool has_key(const toml::Document &document, const std::string &dotted) {
  return document.root().find_path(text::split(dotted, '.')) != nullptr;
}

// v0.9's [resume] (shared.py ResumeConfig): step, or dir (another run's step directory), or
// neither (latest). The top-level table wins: Prime-RL copies it onto the sub-configs.
TomlIntent read_v0_9_intent(const toml::Document &document) {
  TomlIntent intent;
  intent.resume_key = "resume.step";
  const toml::Value *resume = document.root().find("resume");
  if (resume == nullptr) {
    resume = document.root().find_path({"trainer", "resume"});
    intent.resume_key = "trainer.resume.step";
  }
  if (resume != nullptr && resume->is(toml::Type::table)) {
    if (const toml::Value *step = resume->find("step")) {
      intent.resume_step = step->integer();
    }
    if (const toml::Value *dir = resume->find("dir"); dir != nullptr && dir->string() != nullptr) {
      intent.resume_dir = *dir->string();
    }
    if (!intent.resume_step && !intent.resume_dir) {
      intent.resume_step = -1; // an empty [resume]: the latest step
    }
  }
  if (const toml::Value *clean = document.root().find("clean")) {
    intent.clean_output_dir = clean->boolean().value_or(false);
  }
  return intent;
}

} // namespace

TomlIntent read_intent(const toml::Document &document) {
  if (is_v0_9(document)) {
    return read_v0_9_intent(document);
  }
  TomlIntent intent;
  intent.resume_step = integer_at(document, {"ckpt", "resume_step"});
  if (!intent.resume_step) {
    intent.resume_step = integer_at(document, {"trainer", "ckpt", "resume_step"});
  }
  if (const toml::Value *clean = document.root().find("clean_output_dir")) {
    intent.clean_output_dir = clean->boolean().value_or(false);
  }
  return intent;
}

Cause cause_of(const ledger::Ledger &ledger, const std::string &launch_key) {
  Cause cause;
  const ledger::Attempt *last = ledger.last();
  if (last == nullptr) {
    cause.name = ledger::k_first_start;
    return cause;
  }
  cause.first_of_launch =
      std::none_of(ledger.attempts.begin(), ledger.attempts.end(), [&](const ledger::Attempt &a) {
        return a.start.launch_id == launch_key;
      });
  if (last->recover && !last->recover->child_experiment.empty()) {
    // follow --recover resubmitted the run after this attempt: that is the recovery it counts.
    cause.name = last->recover->cause;
    cause.exit_code = last->recover->exit_code;
    return cause;
  }
  if (cause.first_of_launch) {
    cause.name = ledger::k_resubmission; // rl resume by hand, or a new launch of the same run
    if (last->end) {
      cause.exit_code = last->end->root_code;
    }
    return cause;
  }
  if (!last->end) {
    cause.name = ledger::k_preemption; // killed without a word: preempted or the node was lost
    return cause;
  }
  cause.exit_code = last->end->root_code;
  if (stopped_from_outside(last->end->root_code)) {
    cause.name = ledger::k_preemption;
  } else if (last->end->root_code == 0) {
    cause.name = ledger::k_after_success;
  } else {
    cause.name = ledger::k_error;
  }
  return cause;
}

bool needs_full_listing(const ledger::Ledger &ledger, const StartFacts &facts) {
  if (!cause_of(ledger, facts.launch_key).first_of_launch) {
    return false;
  }
  return facts.toml.clean_output_dir || (facts.toml.resume_step && *facts.toml.resume_step >= 0);
}

Decision decide(const ledger::Ledger &ledger, const DiskFacts &disk, const StartFacts &facts) {
  Decision d;
  const Cause cause = cause_of(ledger, facts.launch_key);
  auto &r = d.record;
  r.run_id = facts.run_id;
  r.launch_id = facts.launch_key;
  r.job_id = facts.job_id;
  r.experiment_id = facts.experiment_id;
  r.replica = facts.replica;
  r.started_unix = facts.now_unix;
  r.cause = cause.name;
  r.previous_exit_code = cause.exit_code;
  r.max_recoveries = facts.policy.max_recoveries;
  r.max_restarts_on_errors = facts.policy.max_restarts_on_errors;

  // What earlier starts did: recoveries counted, and the newest step any of them resumed.
  std::optional<std::int64_t> resumed_before;
  std::int64_t resumed_before_attempt = 0;
  for (const auto &a : ledger.attempts) {
    if (!a.start.refused.empty()) {
      continue;
    }
    if (a.start.cause == ledger::k_preemption) {
      ++r.preemptions_recovered;
    } else if (a.start.cause == ledger::k_error) {
      ++r.error_restarts;
    }
    if (a.start.resume_step && (!resumed_before || *a.start.resume_step >= *resumed_before)) {
      resumed_before = a.start.resume_step;
      resumed_before_attempt = a.start.attempt;
    }
  }
  if (cause.name == ledger::k_preemption) {
    ++r.preemptions_recovered;
  } else if (cause.name == ledger::k_error) {
    ++r.error_restarts;
  }

  const std::optional<std::int64_t> newest = newest_complete(disk.steps);
  r.newest_complete = newest;
  const bool pinned =
      cause.first_of_launch && facts.toml.resume_step && *facts.toml.resume_step >= 0;
  if (cause.first_of_launch && facts.toml.clean_output_dir) {
    // The user asked for a clean output directory on this launch's first start: a fresh run.
    // Earlier steps are moved aside, not deleted, and Prime-RL may clean the rest.
    d.keep_output = false;
    for (const auto &step : disk.steps) {
      d.set_aside.push_back(step.name);
    }
  } else if (pinned) {
    const std::int64_t step = *facts.toml.resume_step;
    const auto it = std::find_if(disk.steps.begin(), disk.steps.end(), [&](const StepStatus &s) {
      return s.step == step && s.complete;
    });
    if (it == disk.steps.end()) {
      try {
        require_step(disk.steps, step);
      } catch (const Error &e) {
        d.refusal =
            fmt::format("{} = {} in the training TOML: {}", facts.toml.resume_key, step, e.what());
        for (const auto &line : e.context()) {
          d.refusal += "; " + line;
        }
      }
      d.refusal_code = 3;
    } else {
      d.resume_step = step;
      d.honours_pin = true;
      // Steps above the pinned one belong to an abandoned timeline: Prime-RL would save over
      // them, and a later recovery must not pick one of them.
      for (const auto &s : disk.steps) {
        if (s.step > step) {
          d.set_aside.push_back(s.name);
        }
      }
    }
  } else {
    d.resume_step = newest;
    for (const auto &s : disk.steps) {
      if (!s.complete && (!newest || s.step > *newest)) {
        d.set_aside.push_back(s.name);
      }
    }
  }
  // v0.9 resume.dir forks another run's step: kept until this run has a step of its own.
  d.keeps_fork = !d.resume_step && facts.toml.resume_dir.has_value() && d.refusal.empty();
  d.stale_above = d.resume_step.value_or(-1);

  // Work lost (docs/recovery.md "Work lost"): steps the trainer is shown to have completed
  // beyond the resume step (to be trained again), and the previous attempt's time after its last
  // surviving checkpoint.
  r.resume_step = d.resume_step;
  r.last_step_seen = disk.newest_trained_step;
  if (const ledger::Attempt *prev = ledger.last()) {
    if (disk.newest_trained_step) {
      r.steps_lost =
          std::max<std::int64_t>(0, *disk.newest_trained_step - d.resume_step.value_or(0));
    }
    const double prev_start = prev->start.started_unix;
    double prev_end = prev_start;
    if (prev->end) {
      prev_end = prev->end->ended_unix;
    } else if (disk.newest_evidence_mtime && *disk.newest_evidence_mtime > prev_start) {
      prev_end = std::min(*disk.newest_evidence_mtime, facts.now_unix);
    }
    double saved_at = prev_start;
    if (d.resume_step) {
      if (const auto it = disk.complete_mtimes.find(*d.resume_step);
          it != disk.complete_mtimes.end()) {
        saved_at = std::max(saved_at, it->second);
      }
    }
    r.time_lost_seconds = prev->start.refused.empty() ? std::max(0.0, prev_end - saved_at) : 0.0;
    r.downtime_seconds = std::max(0.0, facts.now_unix - prev_end);
  }

  // Refusals, the clearest first.
  if (d.refusal.empty() && cause.name == ledger::k_preemption &&
      r.preemptions_recovered > facts.policy.max_recoveries) {
    d.refusal =
        facts.policy.max_recoveries == 0
            ? "restart after a preemption refused: automatic recovery is off "
              "(--max-recoveries 0); resume by hand with `primebeaker rl resume`"
            : fmt::format("restart after a preemption refused: this would be recovery {} and "
                          "--max-recoveries is {} (docs/recovery.md)",
                          r.preemptions_recovered,
                          facts.policy.max_recoveries);
    d.refusal_code = 1;
  }
  if (d.refusal.empty() && cause.name == ledger::k_error &&
      r.error_restarts > facts.policy.max_restarts_on_errors) {
    d.refusal =
        fmt::format("restart after an error (exit code {}) refused: this would be restart {} and "
                    "--max-restarts-on-errors is {} (docs/recovery.md)",
                    cause.exit_code.value_or(1),
                    r.error_restarts,
                    facts.policy.max_restarts_on_errors);
    d.refusal_code = 1;
  }
  if (d.refusal.empty() && !d.honours_pin && d.keep_output && resumed_before &&
      (!newest || *newest < *resumed_before)) {
    d.refusal = fmt::format(
        "the newest complete checkpoint is {}, but attempt {} resumed from step {}: checkpoints "
        "went missing, so training would start over them; refusing (docs/recovery.md)",
        step_text(newest),
        resumed_before_attempt,
        *resumed_before);
    d.refusal_code = 1;
  }
  if (!d.refusal.empty()) {
    d.set_aside.clear();
    r.refused = d.refusal;
  }
  return d;
}

// --- effects --------------------------------------------------------------------------------

std::vector<StepStatus> evaluate_trainer_only(const TreeListing &listing) {
  std::vector<StepStatus> out;
  out.reserve(listing.steps.size());
  for (StepListing step : listing.steps) {
    if (!step.in_trainer_root) {
      continue;
    }
    step.in_orchestrator_root = true;
    step.progress = FileState{EntryKind::regular, 1};
    out.push_back(evaluate_step(step, listing.source));
  }
  return out;
}

namespace {

std::optional<double> mtime_of(const fs::path &path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) {
    return std::nullopt;
  }
  return static_cast<double>(st.st_mtim.tv_sec) + static_cast<double>(st.st_mtim.tv_nsec) / 1e9;
}

// The step_<n> names of `dir`, highest number last.
std::vector<std::pair<std::int64_t, std::string>> step_dirs(const fs::path &dir) {
  std::vector<std::pair<std::int64_t, std::string>> out;
  std::error_code ec;
  for (const auto &entry : fs::directory_iterator(dir, ec)) {
    const std::string name = entry.path().filename().string();
    if (const auto step = parse_step_name(name); step && entry.is_directory(ec)) {
      out.emplace_back(*step, name);
    }
  }
  std::sort(out.begin(), out.end());
  return out;
}

} // namespace

DiskFacts gather(const CheckpointSource &source,
                 const primerl::RunLayout &layout,
                 bool trainer_only,
                 bool full) {
  DiskFacts facts;
  const TreeListing listing = trainer_only || full ? list_steps(source) : list_latest(source);
  facts.full_listing = trainer_only || full;
  facts.steps = trainer_only ? evaluate_trainer_only(listing) : evaluate(listing);
  auto note_trained = [&](std::int64_t step) {
    if (!facts.newest_trained_step || step > *facts.newest_trained_step) {
      facts.newest_trained_step = step;
    }
  };
  auto note_time = [&](const std::optional<double> &t) {
    if (t && (!facts.newest_evidence_mtime || *t > *facts.newest_evidence_mtime)) {
      facts.newest_evidence_mtime = t;
    }
  };
  // Trained steps: the trainer writes step_N/trainer only after training step N (complete or
  // cut off, the step was trained). An orchestrator-only step directory is not one: the
  // orchestrator checkpoints its own progress, which may run ahead of the trainer. With one root
  // for both (v0.9) the trainer's side is the trainer/ subdirectory.
  const bool shared_root = source.trainer_root == source.orchestrator_root;
  for (const auto &step : listing.steps) {
    if (step.in_trainer_root && (!shared_root || step.trainer_dir.kind == EntryKind::directory)) {
      note_trained(step.step);
    }
  }
  for (const auto &step : facts.steps) {
    const fs::path trainer = source.trainer_root / step.name / "trainer";
    if (step.complete) {
      std::optional<double> newest = mtime_of(trainer / ".metadata");
      if (!trainer_only) {
        const auto progress =
            mtime_of(source.orchestrator_root / step.name / "orchestrator" / "progress.pt");
        if (progress && (!newest || *progress > *newest)) {
          newest = progress;
        }
      }
      if (newest) {
        facts.complete_mtimes[step.step] = *newest;
      }
    }
  }
  if (!facts.steps.empty()) {
    const auto &last = facts.steps.back();
    note_time(mtime_of(source.trainer_root / last.name / "trainer"));
    note_time(mtime_of(source.orchestrator_root / last.name / "orchestrator"));
  }
  // Rollouts and broadcasts say when the attempt was last alive; of them only the broadcasts
  // are trained steps: the trainer publishes broadcasts/step_N once it has trained step N (the
  // filesystem broadcast's weights, or the NCCL broadcast's notice to the orchestrator), while
  // the orchestrator writes rollouts/step_N ahead of training, by its async level.
  for (const auto &root : layout.step_dirs) {
    const auto dirs = step_dirs(root);
    if (!dirs.empty()) {
      if (root == layout.broadcasts) {
        note_trained(dirs.back().first);
      }
      note_time(mtime_of(root / dirs.back().second));
    }
  }
  return facts;
}

std::vector<std::string> set_aside(const CheckpointSource &source,
                                   const std::vector<std::string> &names,
                                   const fs::path &destination) {
  std::vector<std::string> moved;
  auto relative_root = [&](const fs::path &root, const char *fallback) {
    const fs::path rel = root.lexically_relative(source.output_dir);
    return rel.empty() || *rel.begin() == ".." ? fs::path(fallback) : rel;
  };
  const std::vector<std::pair<fs::path, fs::path>> roots = {
      {source.trainer_root, relative_root(source.trainer_root, "trainer_checkpoints")},
      {source.orchestrator_root,
       relative_root(source.orchestrator_root, "orchestrator_checkpoints")}};
  for (const auto &name : names) {
    for (const auto &[root, rel] : roots) {
      const fs::path from = root / name;
      std::error_code ec;
      if (!fs::exists(fs::symlink_status(from, ec))) {
        continue;
      }
      fs::path to = destination / rel / name;
      fs::create_directories(to.parent_path(), ec);
      if (::rename(from.c_str(), to.c_str()) != 0) {
        if (errno != EXDEV) {
          throw failure(fmt::format("cannot move the incomplete step {} aside to {}: {}",
                                    from.string(),
                                    to.string(),
                                    std::strerror(errno)));
        }
        // Another volume (ckpt.output_dir elsewhere): set it aside beside its root instead.
        to = root.parent_path() / "primebeaker_set_aside" / destination.filename() / name;
        fs::create_directories(to.parent_path(), ec);
        if (::rename(from.c_str(), to.c_str()) != 0) {
          throw failure(fmt::format(
              "cannot move the incomplete step {} aside: {}", from.string(), std::strerror(errno)));
        }
      }
      moved.push_back(to.string());
    }
  }
  return moved;
}

std::vector<std::string> remove_stale_state(const primerl::RunLayout &layout, std::int64_t above) {
  std::vector<std::string> removed;
  for (const auto &root : layout.step_dirs) {
    for (const auto &[step, name] : step_dirs(root)) {
      if (step > above) {
        std::error_code ec;
        fs::remove_all(root / name, ec);
        removed.push_back((root / name).string());
      }
    }
  }
  return removed;
}

namespace {

std::string v0_9_resume_toml(const toml::Document &document, const Decision &decision) {
  const auto &keys = primerl::resume_keys(primerl::Generation::v0_9);
  toml::Editor editor(document);
  const auto unset_present = [&](const std::string &key) {
    if (has_key(document, key)) {
      editor.unset(key, {.if_exists = true});
    }
  };
  if (decision.resume_step) {
    const std::string step = std::to_string(*decision.resume_step);
    editor.set(keys.step, step);
    // A sub-config [trainer.resume] says the same step (the shared one is copied over it).
    for (const auto &copy : keys.copies) {
      if (has_key(document, copy.substr(0, copy.rfind('.')))) {
        editor.set(copy, step);
      }
    }
    for (const auto &key : keys.exclusive) {
      unset_present(key);
    }
  } else if (decision.keeps_fork) {
    // [resume] dir stays as written: this run has no step of its own yet.
  } else if (decision.keep_output) {
    // Every step directory was moved aside: "latest" finds none and Prime-RL starts from
    // scratch, while a resume is not refused over the logs of earlier attempts (pathing.py
    // validate_run_dir).
    unset_present(keys.step);
    for (const auto &key : keys.copies) {
      unset_present(key);
    }
    for (const auto &key : keys.exclusive) {
      unset_present(key);
    }
    if (!has_key(document, "resume")) {
      editor.set("resume", "{}");
    }
  } else {
    for (const auto &table : keys.tables) {
      unset_present(table);
    }
  }
  if (decision.keep_output && has_key(document, keys.clean)) {
    editor.set(keys.clean, "false");
  }
  return editor.text();
}

} // namespace

std::string resume_toml(const toml::Document &document, const Decision &decision) {
  if (is_v0_9(document)) {
    return v0_9_resume_toml(document, decision);
  }
  toml::Editor editor(document);
  const std::vector<std::vector<std::string>> keys = {{"ckpt", "resume_step"},
                                                      {"trainer", "ckpt", "resume_step"},
                                                      {"orchestrator", "ckpt", "resume_step"}};
  for (const auto &key : keys) {
    std::string path;
    for (const auto &part : key) {
      path += (path.empty() ? "" : ".") + part;
    }
    const bool present = document.root().find_path(key) != nullptr;
    if (decision.resume_step) {
      // The shared key always; a sub-config copy wins over it in Prime-RL, so it says the same.
      if (present || key.size() == 2) {
        editor.set(path, std::to_string(*decision.resume_step));
      }
    } else if (present) {
      editor.unset(path, {.if_exists = true});
    }
  }
  if (decision.keep_output && document.root().find("clean_output_dir") != nullptr) {
    editor.set("clean_output_dir", "false");
  }
  return editor.text();
}

} // namespace pb::recovery
