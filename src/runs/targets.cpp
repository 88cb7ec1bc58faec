// SPDX-License-Identifier: MIT
// What a RUN argument names: an experiment id, a receipt file, a sweep (docs/runs.md "RUN").
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

namespace pb::runs {

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
  for (const OrderedJson *holder :
       {submit->contains("recovery") && (*submit)["recovery"].is_object() ? &(*submit)["recovery"]
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

RunTarget resolve_target(const std::string &run, beaker::Client &beaker) {
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

std::optional<SweepTargets> resolve_sweep(const std::string &run, beaker::Client &beaker) {
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
