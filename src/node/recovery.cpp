// SPDX-License-Identifier: MIT
// The recovery step of every replica start (docs/recovery.md), around the pure decision.
#include "recovery.hpp"

#include <primebeaker/contract/replica_env.hpp>
#include <primebeaker/core/error.hpp>
#include <primebeaker/toml/edit.hpp>
#include <primebeaker/toml/value.hpp>

#include <fmt/format.h>

#include <chrono>
#include <cmath>

namespace pb::node {

namespace {

namespace fs = std::filesystem;
namespace rec = recovery;
namespace ledger = recovery::ledger;

double now_unix() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

// "20260501T120000Z-<job>": the set-aside directory of one start.
std::string set_aside_name(double now, const std::string &job_id) {
  std::string stamp = ledger::utc_text(now);
  std::string compact;
  for (const char c : stamp.substr(0, 19)) {
    if (c != '-' && c != ':') {
      compact += c;
    }
  }
  return compact + "Z-" + ledger::run_key(job_id);
}

} // namespace

primerl::RunLayout layout_of(const RecoveryRequest &request, const toml::Document &document) {
  const fs::path out = request.output_dir.is_relative() ? request.working_dir / request.output_dir
                                                        : request.output_dir;
  const bool v0_9 = request.generation == primerl::Generation::v0_9 ||
                    primerl::detect_generation(document).generation == primerl::Generation::v0_9;
  std::string run_dir = request.run_dir_name;
  if (v0_9 && run_dir.empty()) {
    run_dir = primerl::run_dir_name(document, "");
    if (run_dir.empty()) {
      throw input_error(fmt::format("{}: a Prime-RL v0.9 config without run.dir or run.name, and "
                                    "no PRIME_RL_RUN_DIR: the run directory is unknown",
                                    request.config_path.string()));
    }
  }
  return primerl::run_layout(v0_9 ? primerl::Generation::v0_9 : primerl::Generation::v0_8,
                             out,
                             run_dir,
                             primerl::ckpt_output_dir(document, request.working_dir));
}

nlohmann::json RecoveryOutcome::published() const {
  nlohmann::json j = {{"attempt", attempt},
                      {"cause", decision.record.cause},
                      {"resume_step", nullptr},
                      {"refused", nullptr}};
  if (decision.resume_step) {
    j["resume_step"] = *decision.resume_step;
  }
  if (!decision.refusal.empty()) {
    j["refused"] = decision.refusal;
    j["refusal_code"] = decision.refusal_code;
  }
  return j;
}

nlohmann::json RecoveryOutcome::helper_request() const {
  nlohmann::json j = {{"step", nullptr}, {"keep_output", decision.keep_output}};
  if (decision.resume_step) {
    j["step"] = *decision.resume_step;
  }
  if (layout.is_v0_9()) {
    // The v0.9 edit differs for a fresh start (recovery::resume_toml).
    j["generation"] = "v0.9";
    j["keeps_fork"] = decision.keeps_fork;
  }
  return j;
}

RecoveryOutcome start_recovery(const RecoveryRequest &request,
                               const std::function<void(const std::string &)> &note) {
  std::error_code ec;
  if (!fs::is_regular_file(request.config_path, ec)) {
    throw input_error(fmt::format("config file not found: {}", request.config_path.string()));
  }
  const auto document = toml::Document::load(request.config_path);
  RecoveryOutcome outcome;
  outcome.layout = layout_of(request, document);
  const auto source =
      checkpoints::source_from_layout(outcome.layout, std::max(1, request.trainer_ranks));

  rec::StartFacts facts;
  facts.run_id = request.run_id;
  facts.launch_key = request.launch_key;
  facts.job_id = request.job_id;
  facts.experiment_id = request.experiment_id;
  facts.replica = request.replica;
  facts.now_unix = now_unix();
  facts.policy = request.policy;
  facts.toml = rec::read_intent(document);

  // One run per checkpoint directory (docs/recovery.md "One run per output dir"): the first
  // start claims it; a start of another run over it is refused before anything is touched.
  if (!request.run_id.empty()) {
    const auto owner_file = ledger::owner_path(
        source.output_dir,
        outcome.layout.is_v0_9() ? outcome.layout.run_dir.filename().string() : std::string());
    const auto owner =
        ledger::claim(owner_file,
                      {request.run_id,
                       request.experiment_id.empty() ? request.launch_key : request.experiment_id,
                       ledger::utc_text(facts.now_unix)});
    if (owner.run_id != request.run_id) {
      throw input_error(ledger::ownership_refusal(owner_file,
                                                  outcome.layout.is_v0_9() ? outcome.layout.run_dir
                                                                           : source.output_dir,
                                                  owner,
                                                  request.run_id,
                                                  outcome.layout.is_v0_9()));
    }
  }
  // The ledger stays under output_dir, outside a v0.9 run directory that `clean` deletes.
  outcome.ledger_dir = ledger::directory(source.output_dir, ledger::run_key(request.run_id));
  const ledger::Ledger history = ledger::read(outcome.ledger_dir);
  for (const auto &name : history.unreadable) {
    note(fmt::format("warning: skipping the unreadable ledger record {}",
                     (outcome.ledger_dir / name).string()));
  }
  const rec::DiskFacts disk = rec::gather(
      source, outcome.layout, request.trainer_only, rec::needs_full_listing(history, facts));
  outcome.decision = rec::decide(history, disk, facts);
  auto &decision = outcome.decision;

  if (decision.refusal.empty()) {
    decision.record.set_aside = rec::set_aside(source,
                                               decision.set_aside,
                                               ledger::set_aside_root(source.output_dir) /
                                                   set_aside_name(facts.now_unix, request.job_id));
    for (const auto &path : decision.record.set_aside) {
      note(fmt::format("moved the incomplete step aside: {}", path));
    }
    for (const auto &path : rec::remove_stale_state(outcome.layout, decision.stale_above)) {
      note(fmt::format("removed stale {}", path));
    }
  }
  outcome.attempt = ledger::append_start(outcome.ledger_dir, decision.record);
  const auto &r = decision.record;
  std::string why = r.cause;
  if (r.previous_exit_code) {
    why += fmt::format(", exit code {}", *r.previous_exit_code);
  }
  if (!decision.refusal.empty()) {
    note(fmt::format("attempt {} ({}) refused", outcome.attempt, why));
  } else if (decision.resume_step) {
    note(fmt::format("attempt {} ({}): resuming from step {}{}",
                     outcome.attempt,
                     why,
                     *decision.resume_step,
                     r.cause == ledger::k_first_start
                         ? std::string()
                         : fmt::format(" ({} steps and {:.0f} s lost)",
                                       r.steps_lost,
                                       std::round(r.time_lost_seconds))));
  } else if (decision.keeps_fork) {
    note(fmt::format("attempt {} ({}): no complete checkpoint of this run; starting from the "
                     "TOML's resume.dir",
                     outcome.attempt,
                     why));
  } else {
    note(fmt::format(
        "attempt {} ({}): starting fresh (no complete checkpoint)", outcome.attempt, why));
  }
  return outcome;
}

void record_end(const RecoveryOutcome &outcome,
                int exit_code,
                int root_code,
                const std::string &message) {
  if (outcome.attempt == 0) {
    return;
  }
  ledger::End end;
  end.attempt = outcome.attempt;
  end.ended_unix = now_unix();
  end.exit_code = exit_code;
  end.root_code = root_code;
  end.message = message;
  try {
    ledger::write_end(outcome.ledger_dir, end);
  } catch (const Error &) {
    // The start record stands; a missing end reads as a preemption, the safe reading.
  }
}

std::string v0_9_runtime_toml(const toml::Document &document,
                              const rec::Decision &decision,
                              const std::string &run_name) {
  std::string text = rec::resume_toml(document, decision);
  if (run_name.empty() || primerl::names_its_run(document)) {
    return text;
  }
  return toml::set_string(
      toml::Document::parse(text, document.source_name()), "run.name", run_name);
}

} // namespace pb::node
