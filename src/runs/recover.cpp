// SPDX-License-Identifier: MIT
// `follow --recover` (docs/recovery.md "Multi-node recovery"): the ledger of a run seen from
// where `follow` runs, the budget and verdict (pure), and the step that resubmits through
// `primebeaker rl resume` run as a child (never by linking the resume module:
// docs/ARCHITECTURE.md).
#include "recover_step.hpp"

#include <primebeaker/checkpoints/topology.hpp>
#include <primebeaker/core/error.hpp>
#include <primebeaker/core/self.hpp>
#include <primebeaker/core/text.hpp>
#include <primebeaker/toml/value.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <ostream>
#include <random>

namespace pb::runs {

namespace ledger = checkpoints::ledger;
namespace stdfs = std::filesystem;

namespace {

std::optional<std::string> env_of(const RunView &run, const char *name) {
  const auto it = run.env.find(name);
  if (it == run.env.end() || it->second.empty()) {
    return std::nullopt;
  }
  return it->second;
}

std::optional<std::int64_t> env_int(const RunView &run, const char *name) {
  const auto text = env_of(run, name);
  if (!text) {
    return std::nullopt;
  }
  std::int64_t value = 0;
  const auto *end = text->data() + text->size();
  const auto [ptr, ec] = std::from_chars(text->data(), end, value);
  if (ec != std::errc() || ptr != end || value < 0) {
    return std::nullopt;
  }
  return value;
}

stdfs::path normal_dir(stdfs::path path) {
  path = path.lexically_normal();
  if (!path.empty() && path.filename().empty()) {
    path = path.parent_path();
  }
  return path;
}

// "1m00s", "15s", "250ms".
std::string wait_text(std::chrono::milliseconds wait) {
  const auto ms = wait.count();
  if (ms < 1000) {
    return fmt::format("{}ms", ms);
  }
  const auto s = ms / 1000;
  if (s >= 60) {
    return fmt::format("{}m{:02}s", s / 60, s % 60);
  }
  return fmt::format("{}s", s);
}

std::string random_hex(std::size_t digits) {
  std::random_device device;
  std::string out;
  while (out.size() < digits) {
    out += fmt::format("{:08x}", device());
  }
  out.resize(digits);
  return out;
}

// The error `rl resume` printed: its "primebeaker: error:" line and the context lines under it,
// else its last non-empty line, else how it ended.
std::string child_error(const proc::Result &result) {
  const auto lines = text::split(result.err, '\n');
  for (std::size_t i = 0; i < lines.size(); ++i) {
    if (text::starts_with(lines[i], "primebeaker: error: ")) {
      std::string message = lines[i].substr(std::string_view("primebeaker: error: ").size());
      for (std::size_t j = i + 1; j < lines.size() && text::starts_with(lines[j], "  "); ++j) {
        message += "; " + std::string(text::trim(lines[j]));
      }
      return message;
    }
  }
  for (auto it = lines.rbegin(); it != lines.rend(); ++it) {
    if (!text::trim(*it).empty()) {
      return std::string(text::trim(*it));
    }
  }
  return result.status();
}

} // namespace

LedgerLocation ledger_location(const RunView &run) {
  LedgerLocation where;
  const auto run_id =
      env_of(run, "WANDB_RUN_ID")
          .value_or(
              env_of(run, "WANDB_SHARED_RUN_ID").value_or(env_of(run, "LAUNCH_ID").value_or("")));
  const stdfs::path working_dir = env_of(run, "WORKING_DIR").value_or("/");
  if (const auto output = env_of(run, "OUTPUT_DIR")) {
    // What the node runtime keys its ledger by (src/node/recovery.cpp).
    const stdfs::path given(*output);
    where.output_dir = normal_dir(given.is_relative() ? working_dir / given : given);
  } else if (const auto config = env_of(run, "CONFIG_PATH")) {
    try {
      const stdfs::path given(*config);
      const auto document = toml::Document::load(given.is_relative() ? working_dir / given : given);
      const auto recorded = env_of(run, "PRIME_RL_GENERATION").value_or("") == "v0.9"
                                ? primerl::Generation::v0_9
                                : primerl::Generation::undetermined;
      where.output_dir =
          normal_dir(checkpoints::output_dir_from_toml(document, working_dir, recorded));
    } catch (const Error &error) {
      where.error = error.what();
      return where;
    }
  } else {
    where.error = "the task sets neither OUTPUT_DIR nor CONFIG_PATH";
    return where;
  }
  if (run_id.empty()) {
    where.error = "the task sets no WANDB_RUN_ID (the ledger is keyed by the W&B run id)";
    return where;
  }
  where.dir = ledger::directory(where.output_dir, ledger::run_key(run_id));
  return where;
}

OrderedJson ledger_counts(const RunView &run) {
  if (!env_of(run, "OUTPUT_DIR") && !env_of(run, "CONFIG_PATH")) {
    return nullptr;
  }
  const auto where = ledger_location(run);
  OrderedJson out = OrderedJson::object();
  if (where.dir.empty()) {
    out["ledger"] = nullptr;
    out["error"] = where.error;
    return out;
  }
  out["ledger"] = where.dir.string();
  std::error_code ec;
  if (!stdfs::is_directory(where.output_dir, ec)) {
    // Not the shared mount, or not created yet: nothing to say rather than "no recoveries".
    out["error"] = fmt::format("output dir {} is not visible here", where.output_dir.string());
    return out;
  }
  try {
    const auto history = ledger::read(where.dir);
    const auto summary = ledger::summarize(history, 0);
    out["attempts"] = summary.attempts;
    out["recoveries"] = summary.preemptions_recovered + summary.error_restarts;
    out["preemptions_recovered"] = summary.preemptions_recovered;
    out["error_restarts"] = summary.error_restarts;
    out["resubmissions"] = summary.resubmissions;
    out["refused"] = summary.refused;
  } catch (const Error &error) {
    out["error"] = error.what();
  }
  return out;
}

RecoveryBudget recovery_budget(const RunView &run, const ledger::Ledger &history) {
  RecoveryBudget budget;
  const auto *last = history.last();
  const auto max_recoveries = env_int(run, "PRIMEBEAKER_MAX_RECOVERIES");
  const auto max_restarts = env_int(run, "PRIMEBEAKER_MAX_RESTARTS_ON_ERRORS");
  if (max_recoveries || max_restarts) {
    budget.from = "experiment";
  } else if (last != nullptr) {
    budget.from = "ledger";
  }
  if (max_recoveries) {
    budget.max_recoveries = *max_recoveries;
  } else if (last != nullptr) {
    budget.max_recoveries = last->start.max_recoveries;
  }
  if (max_restarts) {
    budget.max_restarts_on_errors = *max_restarts;
  } else if (last != nullptr) {
    budget.max_restarts_on_errors = last->start.max_restarts_on_errors;
  }
  return budget;
}

RecoveriesUsed recoveries_used(const ledger::Ledger &history) {
  RecoveriesUsed used;
  for (const auto &attempt : history.attempts) {
    if (!attempt.start.refused.empty()) {
      continue;
    }
    if (attempt.start.cause == ledger::k_preemption) {
      ++used.preemptions;
    } else if (attempt.start.cause == ledger::k_error) {
      ++used.errors;
    }
  }
  // A resubmission whose experiment has not started yet: the runtime will count it.
  if (const auto *last = history.last();
      last != nullptr && last->recover && !last->recover->child_experiment.empty()) {
    if (last->recover->cause == ledger::k_preemption) {
      ++used.preemptions;
    } else if (last->recover->cause == ledger::k_error) {
      ++used.errors;
    }
  }
  return used;
}

bool resubmittable(const RunView &run) {
  const auto &c = run.command;
  return c.size() >= 3 && (c[0] == "primebeaker" || c[0].ends_with("/primebeaker")) &&
         c[1] == "node" && c[2] == "rl";
}

RecoveryVerdict
judge_recovery(const RunView &run, const RecoveryBudget &budget, const RecoveriesUsed &used) {
  RecoveryVerdict verdict;
  if (run.outcome == Outcome::preempted) {
    verdict.cause = ledger::k_preemption;
    verdict.number = used.preemptions + 1;
    verdict.budget = budget.max_recoveries;
    verdict.flag = "--max-recoveries";
  } else if (run.outcome == Outcome::failed) {
    verdict.cause = ledger::k_error;
    verdict.number = used.errors + 1;
    verdict.budget = budget.max_restarts_on_errors;
    verdict.flag = "--max-restarts-on-errors";
    if (run.deciding_replica) {
      verdict.exit_code = run.replicas[*run.deciding_replica].exit_code;
    }
  } else {
    return verdict; // succeeded or canceled by someone: nothing to recover
  }
  if (!resubmittable(run)) {
    verdict.refusal = "it is not a multi-node RL run (`primebeaker node rl`), which is what "
                      "`rl resume` resubmits";
    return verdict;
  }
  if (verdict.budget == 0) {
    verdict.refusal = verdict.cause == ledger::k_preemption
                          ? "automatic recovery is off (--max-recoveries 0)"
                          : "restarts after errors are off (--max-restarts-on-errors 0)";
    return verdict;
  }
  if (verdict.number > verdict.budget) {
    verdict.refusal = fmt::format("the recovery budget is spent ({} of {} {} used)",
                                  verdict.number - 1,
                                  verdict.flag,
                                  verdict.budget);
    return verdict;
  }
  verdict.resubmit = true;
  return verdict;
}

std::optional<std::int64_t> recover_slot(const ledger::Ledger &history,
                                         const std::string &experiment_id) {
  const auto *last = history.last();
  if (last == nullptr || last->recover) {
    return std::nullopt;
  }
  if (!last->start.experiment_id.empty() && last->start.experiment_id != experiment_id) {
    return std::nullopt; // this experiment never recorded a start
  }
  return last->start.attempt;
}

std::string already_resubmitted(const ledger::Ledger &history, const std::string &experiment_id) {
  const auto *last = history.last();
  if (last != nullptr && last->recover && last->recover->source_experiment == experiment_id) {
    return last->recover->child_experiment;
  }
  return {};
}

std::chrono::milliseconds recovery_wait(const RecoverOptions &options, int k) {
  auto wait = options.backoff;
  for (int i = 0; i < k && wait < options.max_backoff; ++i) {
    wait *= 2;
  }
  return std::min(wait, std::max(options.max_backoff, options.backoff));
}

ResumeReceipt parse_resume_receipt(const std::string &stdout_text) {
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(stdout_text);
  } catch (const std::exception &) {
    throw failure("`rl resume` printed no JSON receipt");
  }
  ResumeReceipt receipt;
  if (j.is_object() && j.contains("child_experiment_id") && j["child_experiment_id"].is_string()) {
    receipt.child_experiment_id = j["child_experiment_id"].get<std::string>();
  }
  if (receipt.child_experiment_id.empty()) {
    throw failure("`rl resume` submitted, but its receipt names no child experiment");
  }
  if (j.contains("resume") && j["resume"].is_object()) {
    const auto &resume = j["resume"];
    if (resume.contains("checkpoint") && resume["checkpoint"].is_object() &&
        resume["checkpoint"].contains("step") && resume["checkpoint"]["step"].is_number_integer()) {
      receipt.step = resume["checkpoint"]["step"].get<std::int64_t>();
    }
    if (resume.contains("attempt_id") && resume["attempt_id"].is_string()) {
      receipt.attempt_id = resume["attempt_id"].get<std::string>();
    }
  }
  return receipt;
}

RecoverResult recover_run(const RunView &run,
                          const RecoverOptions &options,
                          RecoverState &state,
                          BeakerCalls &beaker,
                          Clock &clock,
                          const std::function<bool(std::chrono::milliseconds)> &sleep,
                          const std::function<int()> &signal,
                          std::ostream &err) {
  RecoverResult result;
  if (run.outcome != Outcome::preempted && run.outcome != Outcome::failed) {
    return result;
  }
  const auto by_hand = fmt::format("resume by hand: primebeaker rl resume {}", run.id);
  const auto say = [&](const std::string &line) {
    err << "primebeaker: " << line << '\n';
    err.flush();
  };
  const auto where = ledger_location(run);
  if (where.dir.empty()) {
    say(fmt::format(
        "not resubmitting {}: its ledger cannot be found ({}); {}", run.id, where.error, by_hand));
    return result;
  }
  std::error_code ec;
  if (!stdfs::is_directory(where.output_dir, ec)) {
    say(fmt::format("not resubmitting {}: its output dir {} is not visible here (run `follow "
                    "--recover` where the run's shared mount is); {}",
                    run.id,
                    where.output_dir.string(),
                    by_hand));
    return result;
  }
  ledger::Ledger history;
  try {
    history = ledger::read(where.dir);
  } catch (const Error &error) {
    say(fmt::format("not resubmitting {}: its ledger {} cannot be read: {}; {}",
                    run.id,
                    where.dir.string(),
                    error.what(),
                    by_hand));
    return result;
  }
  if (!history.unreadable.empty()) {
    say(fmt::format("warning: ledger files that could not be read are not counted: {} (in {})",
                    text::join(history.unreadable, ", "),
                    where.dir.string()));
  }
  if (const auto child = already_resubmitted(history, run.id); !child.empty()) {
    say(fmt::format("{} was already resubmitted as {} (ledger {}); following it",
                    run.id,
                    child,
                    where.dir.string()));
    result.child = child;
    return result;
  }
  const auto budget = recovery_budget(run, history);
  auto used = recoveries_used(history);
  used.preemptions += state.unrecorded.preemptions;
  used.errors += state.unrecorded.errors;
  const auto verdict = judge_recovery(run, budget, used);
  if (!verdict.resubmit) {
    say(fmt::format("not resubmitting {} ({}): {}; {}",
                    run.id,
                    outcome_name(run.outcome),
                    verdict.refusal,
                    by_hand));
    return result;
  }

  auto wait = recovery_wait(options, state.resubmissions);
  std::string last_error;
  for (int attempt = 1; attempt <= std::max(1, options.resume_tries); ++attempt) {
    say(fmt::format("{} {}: recovery {} of {} {} {}: primebeaker rl resume {}{}",
                    run.id,
                    outcome_name(run.outcome),
                    verdict.number,
                    verdict.flag,
                    verdict.budget,
                    wait.count() == 0 ? std::string("now") : "in " + wait_text(wait),
                    run.id,
                    attempt > 1 ? fmt::format(" (try {} of {})", attempt, options.resume_tries)
                                : std::string()));
    if (wait.count() > 0 && !sleep(wait)) {
      result.signal = signal();
      return result;
    }
    if (const int sig = signal(); sig != 0) {
      result.signal = sig;
      return result;
    }
    // A fresh attempt id each try: a failed try may have written its write-once files.
    const std::string attempt_id =
        fmt::format("{}-{}{}",
                    random_hex(8),
                    verdict.cause == ledger::k_preemption ? "recover" : "restart",
                    verdict.number);
    proc::Command command;
    command.argv = options.program.empty() ? proc::Argv{self::command().string()} : options.program;
    for (const char *word : {"rl", "resume", "--from-experiment"}) {
      command.argv.emplace_back(word);
    }
    command.argv.push_back(run.id);
    command.argv.emplace_back("--attempt-id");
    command.argv.push_back(attempt_id);
    const double requested = std::chrono::duration<double>(clock.now().time_since_epoch()).count();
    proc::Result ran;
    try {
      ran = beaker.runner().run(command);
    } catch (const Error &error) { // the program could not be started
      last_error = error.what();
      break;
    }
    // A Ctrl-C during a successful resubmission still records it and hands the child over
    // (the follow loop then says how to follow it); during a failed one it stops here.
    if (const int sig = signal(); sig != 0 && !ran.ok()) {
      result.signal = sig;
      return result;
    }
    if (ran.ok()) {
      // Its warnings (a managed service not inherited, ...) belong to the user too.
      for (const auto &line : text::split(ran.err, '\n')) {
        if (!text::trim(line).empty()) {
          err << "  [rl resume] " << line << '\n';
        }
      }
      ResumeReceipt receipt;
      try {
        receipt = parse_resume_receipt(ran.out);
      } catch (const Error &error) {
        last_error = error.what();
        break; // it may have submitted: never submit again blindly
      }
      ++state.resubmissions;
      ledger::Recover record;
      record.requested_unix = requested;
      record.cause = verdict.cause;
      record.exit_code = verdict.exit_code;
      record.source_experiment = run.id;
      record.child_experiment = receipt.child_experiment_id;
      std::string recorded;
      const auto slot = recover_slot(history, run.id);
      if (slot) {
        record.attempt = *slot;
        try {
          if (ledger::write_recover(where.dir, record)) {
            recorded = (where.dir / fmt::format("{}.recover.json", *slot)).string();
          }
        } catch (const Error &error) {
          say(fmt::format("warning: the ledger record could not be written: {}", error.what()));
        }
      }
      if (recorded.empty()) {
        // Counted here so that this follow stays within the budget all the same.
        (verdict.cause == ledger::k_preemption ? state.unrecorded.preemptions
                                               : state.unrecorded.errors) += 1;
        recorded = slot ? "not recorded: the ledger slot is taken"
                        : "not recorded: this experiment recorded no start in the ledger";
      }
      say(fmt::format("{} resubmitted as {}{} (recovery {} of {} {}; {}); following it",
                      run.id,
                      receipt.child_experiment_id,
                      receipt.step ? fmt::format(" from step {}", *receipt.step) : std::string(),
                      verdict.number,
                      verdict.flag,
                      verdict.budget,
                      recorded));
      result.child = receipt.child_experiment_id;
      return result;
    }
    last_error =
        fmt::format("`primebeaker rl resume {}` {}: {}", run.id, ran.status(), child_error(ran));
    say(last_error);
    // 1 (a refusal: the source may not be finalized yet) and 4 (beaker) can pass; 2 and 3 not.
    if (ran.signal != 0 || (ran.exit_code != 1 && ran.exit_code != 4)) {
      break;
    }
    wait = std::min(wait * 2, std::max(options.max_backoff, options.backoff));
  }
  say(fmt::format("not resubmitting {} ({}): `rl resume` failed ({}); {}",
                  run.id,
                  outcome_name(run.outcome),
                  last_error,
                  by_hand));
  return result;
}

} // namespace pb::runs
