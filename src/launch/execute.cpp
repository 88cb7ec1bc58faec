// SPDX-License-Identifier: MIT
// The effects of a launch plan, and the glue from options to a plan.
#include "ownership.hpp"
#include "paths.hpp"
#include "plan_parts.hpp"

#include <primebeaker/beaker/client.hpp>
#include <primebeaker/clusters/clusters.hpp>
#include <primebeaker/core/error.hpp>
#include <primebeaker/core/fs.hpp>
#include <primebeaker/core/text.hpp>
#include <primebeaker/launch/launch.hpp>
#include <primebeaker/staging/stage.hpp>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <unistd.h>

#include <cctype>
#include <cerrno>
#include <cstring>
#include <iostream>
#include <optional>
#include <system_error>

namespace pb::launch {

std::string normalize_path(std::string_view path) {
  const bool absolute = !path.empty() && path.front() == '/';
  std::string out = absolute ? "/" : "";
  size_t start = 0;
  while (start <= path.size()) {
    auto end = path.find('/', start);
    if (end == std::string_view::npos) {
      end = path.size();
    }
    const auto part = path.substr(start, end - start);
    if (!part.empty() && part != ".") {
      if (!out.empty() && out.back() != '/') {
        out += '/';
      }
      out += part;
    }
    start = end + 1;
  }
  return out.empty() ? "." : out;
}

bool path_is_under(std::string_view path, std::string_view root) {
  if (root == "/") {
    return !path.empty() && path.front() == '/';
  }
  if (path.size() < root.size() || path.substr(0, root.size()) != root) {
    return false;
  }
  return path.size() == root.size() || path[root.size()] == '/';
}

std::filesystem::path resolve_real_path(const std::filesystem::path &absolute_path) {
  std::error_code ec;
  auto resolved = std::filesystem::weakly_canonical(absolute_path, ec);
  if (ec) {
    return absolute_path;
  }
  return normalize_path(resolved.string());
}

namespace {

// A launch's files are its own (docs/launch.md "Files a launch writes"): written atomically, and
// one that holds something else is never replaced (only a pinned PRIMEBEAKER_LAUNCH_ID reused
// for another launch of the same name can get there).
void write_once(const std::filesystem::path &path,
                const std::string &content,
                LaunchEffects &effects) {
  if (effects.files.exists(path)) {
    if (effects.files.read_file(path) == content) {
      return; // this launch wrote it already
    }
    throw failure(fmt::format("{} already holds another launch's file, which is never replaced; "
                              "this launch id is in use (unset PRIMEBEAKER_LAUNCH_ID, or pin "
                              "another)",
                              path.string()));
  }
  effects.files.write_file_atomic(path, content);
}

// The controller of a submitted run: its spec (the run's id filled in) written and submitted.
// A failure here does not undo the run; the receipt says what failed and the caller exits 1.
OrderedJson
submit_controller(const LaunchPlan &plan, const OrderedJson &training_id, LaunchEffects &effects) {
  const ControllerPlan &controller = *plan.controller;
  OrderedJson out = OrderedJson::object();
  out["experiment_name"] = controller.experiment_name;
  out["spec_path"] = controller.spec_path.string();
  out["experiment_id"] = nullptr;
  try {
    if (!training_id.is_string()) {
      throw failure("beaker's output named no experiment id for the run to follow");
    }
    write_once(controller.spec_path,
               to_pretty_json(controller_spec_for(controller, training_id.get<std::string>())),
               effects);
    const std::string created = effects.beaker.create_experiment(
        controller.experiment_name, plan.workspace, controller.spec_path.string());
    const auto id = beaker::parse_created_experiment_id(created);
    out["experiment_id"] = id ? OrderedJson(*id) : OrderedJson(nullptr);
  } catch (const Error &error) {
    out["error"] = error.what();
  }
  return out;
}

// Why nothing can be created under `dir` from here, judged at its nearest existing ancestor
// (access(2) also sees a read-only mount, which permission bits do not show); "" when it can.
std::string why_unwritable(const std::filesystem::path &dir) {
  std::filesystem::path probe = dir;
  std::error_code ec;
  while (!std::filesystem::exists(probe, ec) && probe.has_parent_path() &&
         probe != probe.parent_path()) {
    probe = probe.parent_path();
  }
  if (!std::filesystem::is_directory(probe, ec)) {
    return fmt::format("{} is not a directory", probe.string());
  }
  if (::access(probe.c_str(), W_OK | X_OK) != 0) {
    const int err = errno;
    if (err == EACCES || err == EROFS) {
      return fmt::format("{} is not writable ({})", probe.string(), std::strerror(err));
    }
  }
  return "";
}

// A submit that cannot write under the scratch dir (a read-only mount, a stage directory owned
// by someone else) says which flag moves what it writes. --no-stage helps only when the spec
// directory can still be created.
void add_scratch_hint(Error &error, const LaunchPlan &plan, const std::filesystem::path &dir) {
  const std::string why = why_unwritable(dir);
  if (why.empty()) {
    return;
  }
  const bool spec_dir_ok = why_unwritable(plan.spec_path.parent_path()).empty();
  error.add_context(fmt::format(
      "{}: pass --scratch-dir DIR, a writable directory on the mount{}",
      why,
      dir != plan.spec_path.parent_path() && spec_dir_ok
          ? ", or --no-stage to run the image's own primebeaker instead of staging this one"
          : ""));
}

void write_spec(const LaunchPlan &plan, LaunchEffects &effects) {
  try {
    effects.files.create_directories(plan.spec_path.parent_path());
  } catch (Error &error) {
    add_scratch_hint(error, plan, plan.spec_path.parent_path());
    throw;
  }
  // The overridden TOML first: the spec names it as CONFIG_PATH.
  if (!plan.config_copy_path.empty()) {
    effects.files.create_directories(plan.config_copy_path.parent_path());
    write_once(plan.config_copy_path, plan.config_copy_text, effects);
    spdlog::info("wrote {} (--set)", plan.config_copy_path.string());
  }
  write_once(plan.spec_path, plan.spec_text, effects);
  spdlog::info("wrote {}", plan.spec_path.string());
}

} // namespace

void confirm_submit(const std::string &card, const std::string &question, bool yes) {
  const bool ask = !yes && ::isatty(STDIN_FILENO) == 1;
  if (ask || ::isatty(STDERR_FILENO) == 1) {
    std::cerr << card;
  }
  if (!ask) {
    return;
  }
  std::cerr << question << " [y/N] " << std::flush;
  std::string answer;
  if (!std::getline(std::cin, answer)) {
    std::cerr << "\n";
    answer.clear();
  }
  std::string word(text::trim(answer));
  for (char &c : word) {
    c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  }
  if (word != "y" && word != "yes") {
    throw failure("not submitted: the answer was not yes (nothing was staged, written or run; "
                  "--yes submits without asking)");
  }
}

OrderedJson execute_preview(const LaunchPlan &plan, LaunchEffects &effects) {
  if (plan.write_spec) {
    write_spec(plan, effects);
  }
  OrderedJson preview = plan.preview_json();
  if (plan.placement) {
    preview["cluster_auto"] = clusters::to_json(*plan.placement); // docs/clusters.md
  }
  return preview;
}

namespace {

// The experiment of this plan's name in its workspace, when one exists (--if-exists adopt):
// `beaker experiment get <you>/<name>`. nullopt when beaker does not find it.
std::optional<OrderedJson> existing_experiment(const LaunchPlan &plan, beaker::Client &beaker) {
  const auto who = beaker.run_checked({"account", "whoami", "--format", "json"}, "account whoami");
  const auto parsed = OrderedJson::parse(who.out, nullptr, false);
  const OrderedJson &me = parsed.is_array() && !parsed.empty() ? parsed.front() : parsed;
  if (!me.is_object() || !me.contains("name") || !me["name"].is_string()) {
    throw tool_error("beaker account whoami named nobody");
  }
  const auto got = beaker.run({"experiment",
                               "get",
                               me["name"].get<std::string>() + "/" + plan.experiment_name,
                               "--format",
                               "json"});
  if (!got.ok()) {
    return std::nullopt;
  }
  auto found = OrderedJson::parse(got.out, nullptr, false);
  if (found.is_array() && !found.empty()) {
    found = found.front();
  }
  if (!found.is_object() || !found.contains("id") || !found["id"].is_string()) {
    return std::nullopt;
  }
  return found;
}

// The receipt of an experiment adopted instead of created: nothing was staged, written or
// submitted by this launch.
OrderedJson adopted_receipt(const LaunchPlan &plan, const OrderedJson &experiment) {
  OrderedJson receipt = plan.receipt_json("");
  const std::string id = experiment["id"].get<std::string>();
  receipt["experiment_id"] = id;
  receipt["experiment_url"] = "https://beaker.org/ex/" + id;
  receipt["spec_path"] = nullptr;
  receipt["adopted"] = true;
  std::cerr << fmt::format("primebeaker: {} already exists as {}; adopted it (--if-exists adopt), "
                           "nothing submitted\n",
                           plan.experiment_name,
                           id);
  return receipt;
}

} // namespace

OrderedJson execute_submit(const LaunchPlan &plan, LaunchEffects &effects) {
  if (!plan.submit_refusal.empty()) {
    throw usage_error(plan.submit_refusal);
  }
  if (plan.if_exists == "adopt") {
    if (const auto found = existing_experiment(plan, effects.beaker)) {
      return adopted_receipt(plan, *found);
    }
  }
  // Everything the controller needs is checked and staged before the run is submitted, so that
  // a run is never left without the recovery it was promised.
  if (plan.controller) {
    if (plan.controller->beaker_stage.empty()) {
      throw tool_error("the recovery controller runs your beaker CLI staged on the mount, but "
                       "none was found here to stage (install it, or point PRIMEBEAKER_BEAKER "
                       "at it; or pass --recover terminal)");
    }
    require_controller_secrets(plan, effects.beaker);
  }
  if (!plan.stage_dir.empty()) {
    try {
      // Before the spec: it must not name a missing program. Said by default, since a first
      // stage copies ~100 MB to the mount.
      const staging::Staged staged = effects.stager.stage(plan.stage_dir);
      std::cerr << "primebeaker: " << staging::summary(staged, staging::current()) << '\n';
    } catch (Error &error) {
      add_scratch_hint(error, plan, plan.stage_dir.parent_path());
      throw;
    }
  }
  if (plan.controller) {
    effects.stager.stage_tool(
        plan.controller->beaker_stage,
        staging::Tool{"beaker", plan.controller->beaker_cli, plan.controller->beaker_cli_sha256});
  }
  // The spec first: a scratch dir it cannot be written in stops the submit before anything is
  // claimed. Then the run's checkpoint directory is claimed before Beaker hears of it
  // (docs/recovery.md "One run per output dir"), and given back when Beaker refuses the run.
  write_spec(plan, effects);
  const DirectoryClaim claimed = claim_directory(plan, effects.files);
  std::string out;
  try {
    out = effects.beaker.create_experiment(
        plan.experiment_name, plan.workspace, plan.spec_path.string());
  } catch (const Error &error) {
    release_directory(claimed, effects.files);
    if (error.code() == beaker::k_exit_already_exists && plan.if_exists == "adopt") {
      if (const auto found = existing_experiment(plan, effects.beaker)) {
        return adopted_receipt(plan, *found); // created meanwhile by a racing rerun
      }
    }
    throw;
  }
  OrderedJson receipt = plan.receipt_json(out);
  if (plan.placement) {
    receipt["cluster_auto"] = clusters::to_json(*plan.placement); // the snapshot it chose from
  }
  if (const auto id = receipt.value("experiment_id", OrderedJson()); id.is_string()) {
    record_created(plan, id.get<std::string>(), effects.files);
  }
  // `--format json` answers carry no "See progress at" text: a URL beaker's JSON gives wins over
  // the public one receipt_json falls back to.
  if (const auto created = beaker::parse_created_experiment(out); created && created->url) {
    receipt["experiment_url"] = *created->url;
  }
  if (plan.controller) {
    receipt["recovery"]["controller"] =
        submit_controller(plan, receipt.value("experiment_id", OrderedJson()), effects);
  }
  return receipt;
}

} // namespace pb::launch
