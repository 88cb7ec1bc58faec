// SPDX-License-Identifier: MIT
// The `beaker` calls of the runs module, retried with exponential backoff while they fail
// transiently (docs/runs.md "Transient failures"), and what a RUN argument names.
#include "status.hpp"

#include <primebeaker/beaker/client.hpp>
#include <primebeaker/core/error.hpp>
#include <primebeaker/core/text.hpp>
#include <primebeaker/runs/runs.hpp>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

namespace pb::runs {

namespace {

std::string failure_detail(const proc::Result &result) {
  std::string detail(text::trim(result.err));
  if (detail.empty()) {
    detail = std::string(text::trim(result.out));
  }
  return detail;
}

} // namespace

bool is_transient_failure(std::string_view stderr_text) {
  const std::string text = lower_case(stderr_text);
  for (const std::string_view marker : {"timeout",
                                        "timed out",
                                        "deadline exceeded",
                                        "connection refused",
                                        "connection reset",
                                        "broken pipe",
                                        "eof",
                                        "temporarily unavailable",
                                        "temporary failure",
                                        "try again",
                                        "too many requests",
                                        "429",
                                        "500 internal server error",
                                        "502",
                                        "503",
                                        "504",
                                        "bad gateway",
                                        "service unavailable",
                                        "no such host",
                                        "network is unreachable",
                                        "tls handshake"}) {
    if (text.find(marker) != std::string::npos) {
      return true;
    }
  }
  return false;
}

BeakerCalls::BeakerCalls(proc::Runner &runner,
                         std::string program,
                         Timing timing,
                         RetryPolicy retry)
    : m_runner(runner), m_program(std::move(program)), m_timing(std::move(timing)), m_retry(retry) {
}

proc::Result BeakerCalls::call(const proc::Argv &args, const std::string &what) {
  proc::Command command;
  command.argv.push_back(m_program);
  command.argv.insert(command.argv.end(), args.begin(), args.end());
  auto delay = m_retry.first_delay;
  for (int attempt = 1;; ++attempt) {
    spdlog::debug("running {}", proc::argv_to_json(command.argv));
    proc::Result result;
    try {
      result = m_runner.run(command);
    } catch (Error &error) {
      error.add_context("install the Beaker CLI, or point PRIMEBEAKER_BEAKER at it");
      throw;
    }
    if (result.ok()) {
      return result;
    }
    const std::string detail = failure_detail(result);
    const bool interrupted = m_timing.interrupted && m_timing.interrupted() != 0;
    const bool transient = result.timed_out || is_transient_failure(detail);
    if (interrupted || !transient || attempt >= m_retry.attempts) {
      Error error = tool_error(fmt::format("{} {} failed ({}){}{}",
                                           m_program,
                                           what,
                                           result.status(),
                                           detail.empty() ? "" : ": ",
                                           detail));
      if (transient && !interrupted) {
        error.add_context(fmt::format("gave up after {} attempts", attempt));
      }
      throw error;
    }
    spdlog::warn("{} {} failed ({}), retrying in {} ms: {}",
                 m_program,
                 what,
                 result.status(),
                 delay.count(),
                 detail);
    const bool slept =
        m_timing.sleep ? m_timing.sleep(delay) : (std::this_thread::sleep_for(delay), true);
    if (!slept) {
      throw tool_error(fmt::format("{} {} interrupted while retrying", m_program, what));
    }
    delay = std::min(delay * 2, m_retry.max_delay);
  }
}

OrderedJson BeakerCalls::call_json(const proc::Argv &args, const std::string &what) {
  const auto result = call(args, what);
  auto parsed = OrderedJson::parse(result.out, nullptr, false);
  if (parsed.is_discarded()) {
    throw tool_error(fmt::format("{} {} printed something that is not JSON", m_program, what));
  }
  return parsed;
}

OrderedJson BeakerCalls::get_experiment(const std::string &id) {
  return call_json({"experiment", "get", id, "--format", "json"}, "experiment get " + id);
}

std::optional<OrderedJson> BeakerCalls::find_experiment(const std::string &reference) {
  OrderedJson got;
  try {
    got = get_experiment(reference);
  } catch (const Error &error) {
    std::string message = error.what();
    std::transform(message.begin(), message.end(), message.begin(), [](unsigned char c) {
      return static_cast<char>(std::tolower(c));
    });
    if (message.find("not found") != std::string::npos ||
        message.find("does not exist") != std::string::npos) {
      return std::nullopt;
    }
    throw;
  }
  if (got.is_array()) {
    if (got.empty()) {
      return std::nullopt;
    }
    return OrderedJson(got.front());
  }
  return got;
}

std::string BeakerCalls::job_logs(const std::string &job_id) {
  return call({"job", "logs", job_id}, "job logs " + job_id).out;
}

void BeakerCalls::stop_experiment(const std::string &id) {
  call({"experiment", "stop", id}, "experiment stop " + id);
}

// `beaker <kind> experiments <of> --format json` as a list (one object is wrapped).
OrderedJson BeakerCalls::experiments_of(const std::string &kind, const std::string &of) {
  const std::string what = kind + " experiments " + of;
  auto got = call_json({kind, "experiments", of, "--format", "json"}, what);
  if (got.is_object()) {
    OrderedJson wrapped = OrderedJson::array();
    wrapped.push_back(std::move(got));
    return wrapped;
  }
  if (!got.is_array()) {
    throw tool_error(fmt::format("{} {} printed JSON that is not a list", m_program, what));
  }
  return got;
}

OrderedJson BeakerCalls::group_experiments(const std::string &group) {
  return experiments_of("group", group);
}

OrderedJson BeakerCalls::workspace_experiments(const std::string &ws) {
  return experiments_of("workspace", ws);
}

std::string BeakerCalls::whoami() {
  const auto got = call_json({"account", "whoami", "--format", "json"}, "account whoami");
  const OrderedJson &account = got.is_array() && !got.empty() ? got.front() : got;
  if (account.is_object() && account.contains("name") && account["name"].is_string()) {
    return account["name"].get<std::string>();
  }
  throw tool_error(fmt::format("{} account whoami printed no account name", m_program));
}

// ---- RUN arguments ----

bool looks_like_experiment_id(std::string_view text) {
  return text.size() == 26 && std::all_of(text.begin(), text.end(), [](unsigned char c) {
           return std::isdigit(c) != 0 || std::isupper(c) != 0;
         });
}

namespace {

std::optional<std::string> string_at(const OrderedJson &object, const char *key) {
  if (object.is_object()) {
    const auto it = object.find(key);
    if (it != object.end() && it->is_string() && !it->get<std::string>().empty()) {
      return it->get<std::string>();
    }
  }
  return std::nullopt;
}

// A submit receipt (sft/rl submit, the rl half of run launch): experiment_id (newer receipts)
// or the id in beaker's stdout.
std::optional<std::string> submit_receipt_id(const OrderedJson &receipt) {
  if (auto id = string_at(receipt, "experiment_id")) {
    return id;
  }
  if (auto id = string_at(receipt, "child_experiment_id")) {
    return id;
  }
  if (const auto out = string_at(receipt, "stdout")) {
    if (auto id = beaker::parse_created_experiment_id(*out)) {
      return id;
    }
  }
  return std::nullopt;
}

} // namespace

RunTarget target_from_receipt(const OrderedJson &receipt, const std::string &where) {
  if (!receipt.is_object()) {
    throw input_error(fmt::format("{}: not a primebeaker receipt (expected a JSON object)", where));
  }
  RunTarget target;
  target.receipt = where;
  const OrderedJson *submit = &receipt;
  if (receipt.contains("rl") && receipt["rl"].is_object()) {
    submit = &receipt["rl"]; // run launch: {service_experiment_id, service, rl}
    target.service_experiment_id = string_at(receipt, "service_experiment_id").value_or("");
  }
  const auto id = submit_receipt_id(*submit);
  if (!id) {
    throw input_error(fmt::format(
        "{}: no experiment id in this receipt (looked for experiment_id, child_experiment_id "
        "and \"Experiment <ID> submitted\" in stdout)",
        where));
  }
  target.reference = *id;
  target.experiment_url = string_at(*submit, "experiment_url");
  if (submit->contains("wandb_run")) {
    target.wandb_url = string_at((*submit)["wandb_run"], "url");
  }
  // submit: recovery.controller; rl resume: controller.
  for (const OrderedJson *holder : {submit->contains("recovery") && (*submit)["recovery"].is_object()
                                        ? &(*submit)["recovery"]
                                        : nullptr,
                                    submit}) {
    if (holder != nullptr && holder->contains("controller") &&
        (*holder)["controller"].is_object()) {
      const auto &controller = (*holder)["controller"];
      target.controller_experiment_id = string_at(controller, "experiment_id").value_or("");
      target.controller_name = string_at(controller, "experiment_name").value_or("");
      break;
    }
  }
  return target;
}

std::optional<RunTarget> receipt_target(const std::string &run) {
  std::error_code ec;
  if (std::filesystem::is_regular_file(run, ec)) {
    std::ifstream in(run, std::ios::binary);
    std::stringstream buffer;
    buffer << in.rdbuf();
    auto parsed = OrderedJson::parse(buffer.str(), nullptr, false);
    if (!in || parsed.is_discarded()) {
      throw input_error(fmt::format("{}: not a JSON receipt", run));
    }
    return target_from_receipt(parsed, run);
  }
  if (text::starts_with(run, "/") || text::starts_with(run, "./") ||
      text::starts_with(run, "../") || (run.size() > 5 && run.substr(run.size() - 5) == ".json")) {
    throw input_error(fmt::format("{}: no such receipt file", run));
  }
  return std::nullopt;
}

RunTarget resolve_target(const std::string &run, BeakerCalls &beaker) {
  if (run.empty()) {
    throw usage_error("RUN is empty: give an experiment id, a name, or a receipt file");
  }
  if (auto target = receipt_target(run)) {
    return std::move(*target);
  }
  RunTarget target;
  if (looks_like_experiment_id(run) || run.find('/') != std::string::npos) {
    target.reference = run;
  } else {
    target.reference = beaker.whoami() + "/" + run;
  }
  return target;
}

std::optional<SweepTargets> resolve_sweep(const std::string &run, BeakerCalls &beaker) {
  SweepTargets sweep;
  if (text::starts_with(run, "group:")) {
    sweep.name = run.substr(6);
    const auto experiments = beaker.group_experiments(sweep.name);
    for (const auto &experiment : experiments) {
      if (const auto id = string_at(experiment, "id")) {
        RunTarget target;
        target.reference = *id;
        sweep.variants.push_back(std::move(target));
      }
    }
    if (sweep.variants.empty()) {
      throw input_error(fmt::format("{}: the group holds no experiments", run));
    }
    return sweep;
  }
  std::error_code ec;
  if (!std::filesystem::is_regular_file(run, ec)) {
    return std::nullopt;
  }
  std::ifstream in(run, std::ios::binary);
  std::stringstream buffer;
  buffer << in.rdbuf();
  const auto parsed = OrderedJson::parse(buffer.str(), nullptr, false);
  if (!parsed.is_object() || !parsed.contains("sweep") || !parsed.contains("variants") ||
      !parsed["variants"].is_array()) {
    return std::nullopt;
  }
  sweep.name = parsed["sweep"].is_string() ? parsed["sweep"].get<std::string>() : run;
  for (const auto &variant : parsed["variants"]) {
    sweep.variants.push_back(target_from_receipt(variant, run));
  }
  if (sweep.variants.empty()) {
    throw input_error(fmt::format("{}: the sweep submitted no variant", run));
  }
  return sweep;
}

} // namespace pb::runs
