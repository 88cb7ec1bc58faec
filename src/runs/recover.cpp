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

#include <unistd.h>

#include <algorithm>
#include <map>
#include <ostream>
#include <random>
#include <regex>
#include <set>

namespace pb::runs {

namespace ledger = recovery::ledger;
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
  const auto value = text::parse_integer(*text);
  if (!value || *value < 0) {
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

OrderedJson controller_view(const RunView &run) {
  const auto mode = env_of(run, "PRIMEBEAKER_RECOVER");
  if (!mode) {
    return nullptr;
  }
  OrderedJson out = OrderedJson::object();
  out["mode"] = *mode;
  out["controller"] = env_of(run, "PRIMEBEAKER_CONTROLLER_NAME").value_or("");
  out["state"] = nullptr;
  out["following"] = nullptr;
  out["last_action"] = nullptr;
  out["updated_at"] = nullptr;
  out["restarts"] = nullptr;
  if (*mode != "controller") {
    return out;
  }
  const auto where = ledger_location(run);
  if (where.dir.empty()) {
    return out;
  }
  if (const auto status = ledger::read_controller_status(where.dir)) {
    out["state"] = status->state;
    out["following"] = status->following;
    out["last_action"] = status->last_action;
    out["updated_at"] = ledger::utc_text(status->updated_unix);
    out["restarts"] = status->restarts;
  }
  return out;
}

std::string controller_line(const OrderedJson &view) {
  if (!view.is_object()) {
    return "-";
  }
  const std::string mode = view.value("mode", std::string());
  if (mode == "terminal") {
    return "terminal: resubmitted only while `follow --recover` runs";
  }
  if (mode != "controller") {
    return mode;
  }
  std::string line = view.value("controller", std::string());
  if (view["state"].is_null()) {
    return line + ": no status yet (not started, or its output dir is not visible here)";
  }
  line += fmt::format(": {} {} (at {}",
                      view["state"].get<std::string>(),
                      view["following"].get<std::string>(),
                      view["updated_at"].get<std::string>());
  if (view["restarts"].get<int>() > 0) {
    line += fmt::format(", restarted {}x", view["restarts"].get<int>());
  }
  line += ")";
  const std::string last = view["last_action"].get<std::string>();
  if (!last.empty()) {
    line += "; last: " + last;
  }
  return line;
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
  const auto count = [&used](std::string_view cause) {
    if (cause == ledger::k_preemption) {
      ++used.preemptions;
    } else if (cause == ledger::k_error) {
      ++used.errors;
    }
  };
  for (const auto &attempt : history.attempts) {
    if (attempt.start.refused.empty()) {
      count(attempt.start.cause);
    }
  }
  // Resubmissions whose experiment has not started yet: the runtime will count them. One per
  // source experiment, whether a claim or an older follower's recovery record says so.
  std::set<std::string> pending_sources;
  for (const auto &claim : history.claims) {
    if (!history.started(claim.child_experiment) &&
        pending_sources.insert(claim.source_experiment).second) {
      count(claim.cause);
    }
  }
  for (const auto &attempt : history.attempts) {
    const auto &recover = attempt.recover;
    if (recover && !recover->child_experiment.empty() &&
        !history.started(recover->child_experiment) &&
        pending_sources.insert(recover->source_experiment).second) {
      count(recover->cause);
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
    if (verdict.exit_code == static_cast<int>(ExitCode::bad_input)) {
      verdict.refusal = "it failed with a configuration error (exit 3), which fails again on "
                        "every retry; fix the configuration and resume by hand";
      verdict.certain = true;
      return verdict;
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

std::string run_base_name(std::string_view experiment_name) {
  std::string base(experiment_name);
  if (const auto slash = base.rfind('/'); slash != std::string::npos) {
    base = base.substr(slash + 1);
  }
  // A resume's attempt id need not be hex (--attempt-id, PRIMEBEAKER_LAUNCH_ID); a recovery's
  // hex8 always is. Dropped until none is left: a recovered resume carries both.
  static const std::regex suffix(
      "-(recover|restart)[0-9]+-[0-9a-f]{8}$|-resume-step[0-9]+-[A-Za-z0-9_-]{1,8}$");
  for (std::string shorter = std::regex_replace(base, suffix, ""); shorter != base;
       shorter = std::regex_replace(base, suffix, "")) {
    base = std::move(shorter);
  }
  return base;
}

std::string
recovery_child_name(const RunView &run, const RecoveryVerdict &verdict, std::string_view hex8) {
  std::string base = run_base_name(run.name);
  if (base.empty()) {
    base = "run";
  }
  const std::string tail = fmt::format(
      "-{}{}-{}", verdict.cause == ledger::k_error ? "restart" : "recover", verdict.number, hex8);
  if (base.size() + tail.size() > 128) {
    base.resize(128 - tail.size());
  }
  return base + tail;
}

std::string actor_identity(bool controller) {
  if (controller) {
    const char *id = std::getenv("BEAKER_EXPERIMENT_ID");
    return fmt::format("controller {}", id != nullptr && *id != 0 ? id : "(outside Beaker)");
  }
  char host[256] = {};
  if (::gethostname(host, sizeof host - 1) != 0) {
    host[0] = 0;
  }
  return fmt::format("terminal {} {}", host[0] != 0 ? host : "localhost", ::getpid());
}

std::string newest_in_chain(const ledger::Ledger &history, std::string experiment_id) {
  std::set<std::string> seen;
  while (seen.insert(experiment_id).second) {
    std::string child;
    if (const auto *claim = history.claim_of(experiment_id)) {
      child = claim->child_experiment;
    }
    if (child.empty()) {
      for (const auto &attempt : history.attempts) {
        if (attempt.recover && attempt.recover->source_experiment == experiment_id) {
          child = attempt.recover->child_experiment;
        }
      }
    }
    if (child.empty()) {
      break;
    }
    experiment_id = child;
  }
  return experiment_id;
}

Chain run_chain(const ledger::Ledger &history, const std::string &experiment_id) {
  // child -> (source, claim) from the claims first, then the older followers' records.
  std::map<std::string, std::pair<std::string, const ledger::Claim *>> parent;
  for (const auto &claim : history.claims) {
    if (!claim.child_experiment.empty()) {
      parent.emplace(claim.child_experiment, std::make_pair(claim.source_experiment, &claim));
    }
  }
  for (const auto &attempt : history.attempts) {
    if (attempt.recover && !attempt.recover->child_experiment.empty()) {
      parent.emplace(attempt.recover->child_experiment,
                     std::make_pair(attempt.recover->source_experiment, nullptr));
    }
  }
  std::string first = experiment_id;
  std::set<std::string> seen = {first};
  for (auto it = parent.find(first); it != parent.end(); it = parent.find(first)) {
    if (!seen.insert(it->second.first).second) {
      break; // a cycle in hand-edited records: stop where it closes
    }
    first = it->second.first;
  }
  const auto started_from = [&history](ChainLink &link) {
    for (const auto &attempt : history.attempts) {
      if (attempt.start.experiment_id == link.experiment_id && attempt.start.refused.empty()) {
        link.resume_step = attempt.start.resume_step;
        link.from_start = !attempt.start.resume_step;
        link.known = true;
        return; // its first start is where it began
      }
    }
  };
  Chain chain;
  ChainLink origin;
  origin.experiment_id = first;
  chain.links.push_back(std::move(origin));
  started_from(chain.links.back());
  if (!chain.links.back().known) {
    chain.links.back().from_start = true; // the first experiment of a run starts at the start
    chain.links.back().known = true;
  }
  seen = {first};
  for (;;) {
    const std::string &at = chain.links.back().experiment_id;
    ChainLink next;
    if (const auto *claim = history.claim_of(at); claim && !claim->child_experiment.empty()) {
      next.experiment_id = claim->child_experiment;
      next.cause = claim->cause;
      next.number = claim->number;
      next.resume_step = claim->child_resume_step;
      next.from_start = claim->child_from_start;
      next.known = claim->child_resume_step || claim->child_from_start;
    } else {
      for (const auto &attempt : history.attempts) {
        if (attempt.recover && attempt.recover->source_experiment == at &&
            !attempt.recover->child_experiment.empty()) {
          next.experiment_id = attempt.recover->child_experiment;
          next.cause = attempt.recover->cause;
        }
      }
    }
    if (next.experiment_id.empty() || !seen.insert(next.experiment_id).second) {
      break;
    }
    started_from(next); // what the runtime did wins over what the resubmitter planned
    chain.links.push_back(std::move(next));
  }
  return chain;
}

OrderedJson
chain_json(const Chain &chain, const ledger::Ledger &history, const RecoveryBudget &budget) {
  OrderedJson out = OrderedJson::object();
  out["original_experiment_id"] = chain.original();
  out["current_experiment_id"] = chain.newest();
  OrderedJson links = OrderedJson::array();
  for (const auto &link : chain.links) {
    OrderedJson row = OrderedJson::object();
    row["experiment_id"] = link.experiment_id;
    row["cause"] = link.cause.empty() ? OrderedJson(nullptr) : OrderedJson(link.cause);
    row["recovery"] = link.number > 0 ? OrderedJson(link.number) : OrderedJson(nullptr);
    row["from"] = !link.known        ? OrderedJson(nullptr)
                  : link.resume_step ? OrderedJson(fmt::format("step {}", *link.resume_step))
                                     : OrderedJson("start");
    links.push_back(std::move(row));
  }
  out["experiments"] = std::move(links);
  const RecoveriesUsed used = recoveries_used(history);
  out["recoveries"] = used.preemptions;
  out["max_recoveries"] = budget.max_recoveries;
  out["restarts_on_errors"] = used.errors;
  out["max_restarts_on_errors"] = budget.max_restarts_on_errors;
  std::int64_t lost = 0;
  for (const auto &attempt : history.attempts) {
    lost += attempt.start.steps_lost;
  }
  out["steps_lost"] = lost;
  return out;
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
    receipt.from_start = resume.value("from", std::string()) == "start";
    if (resume.contains("attempt_id") && resume["attempt_id"].is_string()) {
      receipt.attempt_id = resume["attempt_id"].get<std::string>();
    }
  }
  return receipt;
}

namespace {

// One recovery of one ended experiment: the claim protocol of docs/recovery.md "Exactly one
// resubmission", around `rl resume` run as a child.
class Recovery {
public:
  Recovery(const RunView &run,
           const RecoverOptions &options,
           RecoverState &state,
           beaker::Client &beaker,
           Clock &clock,
           const std::function<bool(std::chrono::milliseconds)> &sleep,
           const std::function<int()> &signal,
           std::ostream &err)
      : m_run(run), m_options(options), m_state(state), m_beaker(beaker), m_clock(clock),
        m_sleep(sleep), m_signal(signal), m_err(err),
        m_actor(options.actor.empty() ? actor_identity(options.controller) : options.actor),
        m_by_hand(fmt::format("resume by hand: primebeaker rl resume {}", run.id)) {}

  // One recovery, step by step: find the run's ledger; settle a claim already there (or follow a
  // resubmission already recorded); judge the budget and wait; claim; submit.
  RecoverResult run() {
    if (!open_ledger()) {
      return m_result;
    }
    if (const auto *claim = m_history.claim_of(m_run.id)) {
      return settle(*claim);
    }
    if (follows_earlier_resubmission() || !judge() || !wait(m_wait) || !reread()) {
      return m_result;
    }
    // Another actor may have claimed it while we waited.
    if (const auto *claim = m_history.claim_of(m_run.id)) {
      return settle(*claim);
    }
    return claim_and_submit();
  }

private:
  // Finds and reads the run's ledger; false (having said why) when it cannot be used from here.
  bool open_ledger() {
    const auto where = ledger_location(m_run);
    if (where.dir.empty()) {
      say(fmt::format("not resubmitting {}: its ledger cannot be found ({}); {}",
                      m_run.id,
                      where.error,
                      m_by_hand));
      return false;
    }
    std::error_code ec;
    if (!stdfs::is_directory(where.output_dir, ec)) {
      say(fmt::format("not resubmitting {}: its output dir {} is not visible here (run `follow "
                      "--recover` where the run's shared mount is); {}",
                      m_run.id,
                      where.output_dir.string(),
                      m_by_hand));
      return false;
    }
    m_dir = where.dir;
    m_state.ledger_dir = m_dir;
    if (!reread()) {
      return false;
    }
    if (!m_history.unreadable.empty()) {
      say(fmt::format("warning: ledger files that could not be read are not counted: {} (in {})",
                      text::join(m_history.unreadable, ", "),
                      m_dir.string()));
    }
    return true;
  }

  // True when the ledger already records a resubmission of this experiment: that one is followed.
  bool follows_earlier_resubmission() {
    if (const auto child = already_resubmitted(m_history, m_run.id); !child.empty()) {
      say(fmt::format("{} was already resubmitted as {} (ledger {}); following it",
                      m_run.id,
                      child,
                      m_dir.string()));
      m_result.child = child;
      return true;
    }
    return false;
  }

  // Whether the budget allows this recovery (said either way), and how long to wait first.
  bool judge() {
    const auto budget = recovery_budget(m_run, m_history);
    m_verdict = judge_recovery(m_run, budget, recoveries_used(m_history));
    if (!m_verdict.resubmit) {
      say(fmt::format("not resubmitting {} ({}): {}; {}",
                      m_run.id,
                      outcome_name(m_run.outcome),
                      m_verdict.refusal,
                      m_by_hand));
      m_result.not_recoverable = m_verdict.certain;
      m_result.budget_spent = m_verdict.budget > 0 && m_verdict.number > m_verdict.budget;
      return false;
    }
    m_wait = recovery_wait(m_options, m_state.resubmissions);
    say(fmt::format("{} {}: recovery {} of {} {} {}: primebeaker rl resume {}",
                    m_run.id,
                    outcome_name(m_run.outcome),
                    m_verdict.number,
                    m_verdict.flag,
                    m_verdict.budget,
                    m_wait.count() == 0 ? std::string("now") : "in " + wait_text(m_wait),
                    m_run.id));
    return true;
  }

  // Claims the recovery in the ledger and submits it, or settles the claim another actor won.
  RecoverResult claim_and_submit() {
    ledger::Claim mine;
    mine.source_experiment = m_run.id;
    mine.generation = 1;
    mine.cause = m_verdict.cause;
    mine.number = m_verdict.number;
    mine.by = m_actor;
    mine.claimed_unix = now_unix();
    const std::string hex = random_hex(8);
    mine.attempt_id = attempt_id(hex);
    mine.child_name = recovery_child_name(m_run, m_verdict, hex);
    if (!write_claim(mine)) {
      return m_result;
    }
    if (!m_claim_won) {
      if (!reread()) {
        return m_result;
      }
      const auto *claim = m_history.claim_of(m_run.id);
      if (claim == nullptr) {
        say(fmt::format(
            "not resubmitting {}: its claim vanished from {}", m_run.id, m_dir.string()));
        m_result.retry_later = true;
        return m_result;
      }
      return settle(*claim);
    }
    return submit(mine, false);
  }

  void say(const std::string &line) {
    m_err << "primebeaker: " << line << '\n';
    m_err.flush();
    m_state.last_action = line;
  }

  double now_unix() const {
    return std::chrono::duration<double>(m_clock.now().time_since_epoch()).count();
  }

  bool reread() {
    try {
      m_history = ledger::read(m_dir);
      return true;
    } catch (const Error &error) {
      say(fmt::format("not resubmitting {}: its ledger {} cannot be read: {}; {}",
                      m_run.id,
                      m_dir.string(),
                      error.what(),
                      m_by_hand));
      m_result.retry_later = true; // a shared mount's hiccup passes
      return false;
    }
  }

  // False when interrupted (m_result.signal says by what).
  bool wait(std::chrono::milliseconds how_long) {
    if (how_long.count() > 0 && !m_sleep(how_long)) {
      m_result.signal = m_signal();
      return false;
    }
    if (const int sig = m_signal(); sig != 0) {
      m_result.signal = sig;
      return false;
    }
    return true;
  }

  std::string attempt_id(const std::string &hex) const {
    const auto &claim_cause = m_verdict.cause;
    return fmt::format(
        "{}-{}{}", hex, claim_cause == ledger::k_error ? "restart" : "recover", m_verdict.number);
  }

  // Sets m_claim_won; false (having said why) when the claim cannot be written at all: then
  // nothing is submitted, since an unrecorded resubmission could be repeated by another actor.
  bool write_claim(const ledger::Claim &claim) {
    try {
      m_claim_won = ledger::write_claim(m_dir, claim);
      return true;
    } catch (const Error &error) {
      say(fmt::format("not resubmitting {}: its claim could not be written ({}); {}",
                      m_run.id,
                      error.what(),
                      m_by_hand));
      m_result.retry_later = true; // a shared mount's hiccup passes
      return false;
    }
  }

  // The experiment is claimed: follow what the claim submitted, wait for its claimant, or take
  // it over (our own claim from before a restart, or a claim past its lease).
  RecoverResult settle(ledger::Claim claim) {
    bool said_waiting = false;
    for (;;) {
      if (!claim.child_experiment.empty()) {
        say(fmt::format("{} was already resubmitted as {} by {} (ledger {}); following it",
                        m_run.id,
                        claim.child_experiment,
                        claim.by,
                        m_dir.string()));
        m_result.child = claim.child_experiment;
        return m_result;
      }
      const double age = now_unix() - claim.claimed_unix;
      const bool lease_over = age * 1000.0 >= static_cast<double>(m_options.claim_lease.count());
      if (claim.by == m_actor || lease_over) {
        ledger::Claim next = claim;
        next.generation = claim.generation + 1;
        next.by = m_actor;
        next.claimed_unix = now_unix();
        m_verdict.cause = claim.cause;
        m_verdict.number = claim.number;
        next.attempt_id = attempt_id(random_hex(8));
        if (!write_claim(next)) {
          return m_result;
        }
        if (m_claim_won) {
          say(fmt::format("{}: taking over the resubmission claimed by {} ({}) as {}",
                          m_run.id,
                          claim.by,
                          claim.by == m_actor ? "before this controller restarted"
                                              : "its lease ran out",
                          next.child_name));
          return submit(next, true);
        }
      } else if (!said_waiting) {
        say(fmt::format("{} is being resubmitted by {} as {}; waiting for it (taken over after "
                        "{} without a new experiment)",
                        m_run.id,
                        claim.by,
                        claim.child_name,
                        wait_text(m_options.claim_lease)));
        said_waiting = true;
        if (!wait(std::chrono::milliseconds(0))) {
          return m_result;
        }
      } else if (!wait(std::max(
                     std::chrono::milliseconds(50),
                     std::min(m_options.claim_lease / 20, std::chrono::milliseconds(30000))))) {
        return m_result;
      }
      if (!reread()) {
        return m_result;
      }
      const auto *now = m_history.claim_of(m_run.id);
      if (now == nullptr) {
        say(fmt::format(
            "not resubmitting {}: its claim vanished from {}", m_run.id, m_dir.string()));
        m_result.retry_later = true;
        return m_result;
      }
      claim = *now;
    }
  }

  // The experiment created under the claim's name, when one was (by a claimant that died before
  // recording it).
  // What a takeover learns of an experiment created under the claim's name: its id, and where
  // it starts, from the PRIMEBEAKER_RESUME_STEP its `rl resume` gave it ("start" or a step).
  struct Created {
    std::string id; // empty: none was created
    std::optional<std::int64_t> step;
    bool from_start = false;
  };
  Created created_under(const ledger::Claim &claim) {
    const std::string author = !m_run.author.empty() ? m_run.author : m_beaker.whoami();
    const auto found = m_beaker.find_experiment(author + "/" + claim.child_name);
    if (!found) {
      return {};
    }
    Created created;
    created.id = found->value("id", std::string());
    const RunView child = parse_run(*found);
    if (const auto it = child.env.find("PRIMEBEAKER_RESUME_STEP"); it != child.env.end()) {
      created.from_start = it->second == "start";
      if (const auto step = text::parse_integer(it->second); step && !created.from_start) {
        created.step = *step;
      }
    }
    return created;
  }

  RecoverResult submit(const ledger::Claim &claim, bool takeover) {
    // A retry waits twice the wait before the first try, doubling again for each later one.
    const auto cap = std::max(m_options.max_backoff, m_options.backoff);
    auto wait_next = std::min((m_wait.count() > 0 ? m_wait : m_options.backoff) * 2, cap);
    std::string last_error;
    const int tries = std::max(1, m_options.resume_tries);
    for (int attempt = 1; attempt <= tries; ++attempt) {
      if (takeover || attempt > 1) {
        Created existing;
        try {
          existing = created_under(claim);
        } catch (const Error &error) {
          last_error = error.what();
          m_result.retry_later = true;
          break; // cannot tell whether it exists: never submit blindly
        }
        if (!existing.id.empty()) {
          return record(claim, existing.id, existing.step, existing.from_start);
        }
      }
      proc::Command command;
      command.argv =
          m_options.program.empty() ? proc::Argv{self::command().string()} : m_options.program;
      for (const char *word : {"rl", "resume", "--from-experiment"}) {
        command.argv.emplace_back(word);
      }
      command.argv.push_back(m_run.id);
      command.argv.emplace_back("--attempt-id");
      // A fresh attempt id each try: a failed try may have written its write-once files.
      command.argv.push_back(attempt == 1 ? claim.attempt_id : attempt_id(random_hex(8)));
      command.argv.emplace_back("--child-name");
      command.argv.push_back(claim.child_name);
      // A run preempted before its first complete checkpoint starts again from the start.
      command.argv.emplace_back("--from-start-if-none");
      if (const auto it = m_run.env.find("PRIMEBEAKER_CONTROLLER_NAME");
          it != m_run.env.end() && !it->second.empty()) {
        command.argv.emplace_back("--controller-name");
        command.argv.push_back(it->second);
      } else {
        // A run without a controller (an older launch, or --recover terminal) keeps being
        // recovered by whoever follows it: no controller appears behind the user's back.
        command.argv.emplace_back("--recover");
        command.argv.emplace_back("terminal");
      }
      proc::Result ran;
      try {
        ran = m_beaker.runner().run(command);
      } catch (const Error &error) { // the program could not be started
        last_error = error.what();
        m_result.retry_later = true;
        break;
      }
      if (ran.ok()) {
        // Its warnings (a managed service not inherited, ...) belong to the user too.
        for (const auto &line : text::split(ran.err, '\n')) {
          if (!text::trim(line).empty()) {
            m_err << "  [rl resume] " << line << '\n';
          }
        }
        ResumeReceipt receipt;
        try {
          receipt = parse_resume_receipt(ran.out);
        } catch (const Error &error) {
          last_error = error.what();
          m_result.retry_later = true;
          break; // it may have submitted: the claim stays, a takeover finds it by name
        }
        return record(claim, receipt.child_experiment_id, receipt.step, receipt.from_start);
      }
      last_error = fmt::format(
          "`primebeaker rl resume {}` {}: {}", m_run.id, ran.status(), child_error(ran));
      say(last_error);
      if (const int sig = m_signal(); sig != 0) {
        m_result.signal = sig;
        return m_result;
      }
      // 75: a refusal that passes (the source not finalized yet); 4: `beaker` failed. The rest
      // (a refused plan, a missing secret, a configuration error) fails again on every retry.
      if (ran.signal != 0) {
        // Killed (out of memory, say): it may have submitted; a takeover finds it by name.
        m_result.retry_later = true;
        break;
      }
      if (ran.exit_code == beaker::k_exit_already_exists) {
        // The child's name is the claim's own, so only an earlier claimant of this claim made
        // it: one whose lease ran out while its `rl resume` was still submitting. That
        // experiment is the resubmission; follow it.
        try {
          if (const Created existing = created_under(claim); !existing.id.empty()) {
            say(fmt::format("{}: {} was created meanwhile by an earlier claimant; taking it",
                            m_run.id,
                            claim.child_name));
            return record(claim, existing.id, existing.step, existing.from_start);
          }
        } catch (const Error &error) {
          last_error = error.what();
        }
        m_result.retry_later = true; // not visible yet: a later takeover finds it by name
        break;
      }
      if (ran.exit_code != static_cast<int>(ExitCode::retry_later) && ran.exit_code != 4) {
        say(fmt::format("not resubmitting {} ({}): `rl resume` refused for a reason no retry "
                        "mends; {}",
                        m_run.id,
                        outcome_name(m_run.outcome),
                        m_by_hand));
        m_result.not_recoverable = true;
        return m_result;
      }
      m_result.retry_later = attempt == tries;
      if (attempt < tries) {
        say(fmt::format("{}: trying `rl resume` again in {} (try {} of {})",
                        m_run.id,
                        wait_text(wait_next),
                        attempt + 1,
                        tries));
        if (!wait(wait_next)) {
          return m_result;
        }
        wait_next = std::min(wait_next * 2, cap);
      }
    }
    say(fmt::format("not resubmitting {} ({}): `rl resume` failed ({}); {}",
                    m_run.id,
                    outcome_name(m_run.outcome),
                    last_error,
                    m_by_hand));
    return m_result;
  }

  RecoverResult record(const ledger::Claim &claim,
                       const std::string &child,
                       const std::optional<std::int64_t> &step,
                       bool from_start) {
    ++m_state.resubmissions;
    std::string recorded;
    try {
      ledger::ChildStart from;
      from.resume_step = step;
      from.from_start = from_start;
      if (!ledger::write_claim_child(m_dir, m_run.id, child, now_unix(), from)) {
        reread();
        const auto *now = m_history.claim_of(m_run.id);
        if (now != nullptr && now->child_experiment != child) {
          say(fmt::format("warning: {} is also recorded as resubmitted as {}",
                          m_run.id,
                          now->child_experiment));
        }
      }
      // The runtime reads the cause of its next start from this record.
      ledger::Recover old_style;
      old_style.requested_unix = claim.claimed_unix;
      old_style.cause = claim.cause;
      old_style.exit_code = m_verdict.exit_code;
      old_style.source_experiment = m_run.id;
      old_style.child_experiment = child;
      if (const auto slot = recover_slot(m_history, m_run.id)) {
        old_style.attempt = *slot;
        if (ledger::write_recover(m_dir, old_style)) {
          recorded = (m_dir / fmt::format("{}.recover.json", *slot)).string();
        }
      }
    } catch (const Error &error) {
      say(fmt::format("warning: the ledger record could not be written: {}", error.what()));
    }
    if (recorded.empty()) {
      recorded = (m_dir / "claims" / fmt::format("{}.child.json", m_run.id)).string();
    }
    const auto budget = recovery_budget(m_run, m_history);
    const bool error = claim.cause == ledger::k_error;
    say(fmt::format("{} resubmitted as {}{} (recovery {} of {} {}; {}); following it",
                    m_run.id,
                    child,
                    from_start ? std::string(" from the start (it had no complete checkpoint)")
                    : step     ? fmt::format(" from step {}", *step)
                               : std::string(),
                    claim.number,
                    error ? "--max-restarts-on-errors" : "--max-recoveries",
                    error ? budget.max_restarts_on_errors : budget.max_recoveries,
                    recorded));
    m_result.child = child;
    return m_result;
  }

  const RunView &m_run;
  const RecoverOptions &m_options;
  RecoverState &m_state;
  beaker::Client &m_beaker;
  Clock &m_clock;
  const std::function<bool(std::chrono::milliseconds)> &m_sleep;
  const std::function<int()> &m_signal;
  std::ostream &m_err;
  std::string m_actor;
  std::string m_by_hand;
  stdfs::path m_dir;
  ledger::Ledger m_history;
  RecoveryVerdict m_verdict;
  std::chrono::milliseconds m_wait{0};
  bool m_claim_won = false;
  RecoverResult m_result;
};

} // namespace

RecoverResult recover_run(const RunView &run,
                          const RecoverOptions &options,
                          RecoverState &state,
                          beaker::Client &beaker,
                          Clock &clock,
                          const std::function<bool(std::chrono::milliseconds)> &sleep,
                          const std::function<int()> &signal,
                          std::ostream &err) {
  if (run.outcome != Outcome::preempted && run.outcome != Outcome::failed) {
    return {};
  }
  return Recovery(run, options, state, beaker, clock, sleep, signal, err).run();
}

} // namespace pb::runs
