// SPDX-License-Identifier: MIT
// Submitting a sweep: one Beaker group, each variant submitted by the launch module and added to
// it, one receipt that always says which variants were submitted (sweep.hpp).
#include <primebeaker/beaker/client.hpp>
#include <primebeaker/core/concurrent.hpp>
#include <primebeaker/core/error.hpp>
#include <primebeaker/core/fs.hpp>
#include <primebeaker/core/text.hpp>
#include <primebeaker/staging/stage.hpp>
#include <primebeaker/sweep/sweep.hpp>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <iostream>
#include <mutex>
#include <optional>
#include <vector>

namespace pb::sweep {
namespace {

// The id in `beaker group create --format json`'s answer (an array of groups, or one), else the
// last word of its text when that spells a Beaker id (26 upper-case letters and digits); "" when
// there is none.
std::string group_id(const std::string &out) {
  const auto parsed = OrderedJson::parse(out, nullptr, false);
  if (!parsed.is_discarded()) {
    const OrderedJson &group = parsed.is_array() && !parsed.empty() ? parsed.front() : parsed;
    if (group.is_object() && group.contains("id") && group["id"].is_string()) {
      return std::string(text::trim(group["id"].get<std::string>()));
    }
    return {};
  }
  const auto words = text::split(std::string(text::trim(out)), ' ');
  const std::string last = words.empty() ? std::string() : words.back();
  const bool id = last.size() == 26 && std::all_of(last.begin(), last.end(), [](char c) {
                    return (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
                  });
  return id ? last : std::string();
}

} // namespace

SweepResult submit_sweep(const SweepPlan &plan, launch::LaunchEffects &effects, int parallel) {
  SweepResult result;
  OrderedJson &receipt = result.receipt;
  receipt["sweep"] = plan.name;
  receipt["base"] = plan.base;
  const std::string &workspace = plan.variants.front().plan.workspace;
  // Every variant runs the same stage: made or checked once, said once, before anything is
  // created (a mount that refuses it leaves no empty group behind).
  const launch::LaunchPlan &first = plan.variants.front().plan;
  if (!first.stage_dir.empty()) {
    const staging::Staged staged = effects.stager.stage(first.stage_dir);
    std::cerr << "primebeaker: " << staging::summary(staged, staging::current()) << '\n';
  }
  // Then the group: a sweep whose group cannot be made submits nothing.
  const auto created = effects.beaker.run_checked(
      {"group", "create", "--workspace", workspace, "--format", "json", plan.name}, "group create");
  const std::string group = group_id(created.out);
  if (group.empty()) {
    // Nothing to add the variants to, and a receipt without a group id cannot be followed.
    throw tool_error(fmt::format(
        "beaker group create {} answered no group id ({}); no variant was submitted",
        plan.name,
        text::trim(created.out).empty()
            ? std::string("it printed nothing")
            : "it printed '" + std::string(text::trim(created.out)).substr(0, 200) + "'"));
  }
  receipt["group"] = {{"name", plan.name}, {"id", group}, {"workspace", workspace}};
  receipt["gpus"] = plan.gpus;
  // Beside the specs, for `status|stop|list` later; rewritten as each create returns.
  const auto spec_dir = plan.variants.front().plan.spec_path.parent_path();
  const auto path = spec_dir.parent_path() / "sweeps" / (plan.name + ".json");
  receipt["receipt_path"] = path.string();

  std::mutex mutex; // guards what follows, the receipt file and the first failure
  std::vector<std::optional<OrderedJson>> rows(plan.variants.size());
  bool stopped = false;
  const auto write_receipt = [&] {
    OrderedJson written = receipt;
    OrderedJson submitted = OrderedJson::array();
    OrderedJson not_submitted = OrderedJson::array();
    for (std::size_t i = 0; i < rows.size(); ++i) {
      if (rows[i]) {
        submitted.push_back(*rows[i]);
      } else {
        not_submitted.push_back(plan.variants[i].plan.experiment_name);
      }
    }
    written["complete"] = !result.failure.has_value() && not_submitted.empty();
    written["variants"] = std::move(submitted);
    written["not_submitted"] = std::move(not_submitted);
    try {
      effects.files.create_directories(path.parent_path());
      effects.files.write_file_atomic(path, written.dump(2) + "\n");
    } catch (const Error &error) {
      spdlog::warn(
          "the sweep's receipt could not be written to {}: {}", path.string(), error.what());
    }
    return written;
  };
  concurrent::for_each_index(
      plan.variants.size(), static_cast<std::size_t>(std::max(parallel, 1)), [&](std::size_t i) {
        const Variant &variant = plan.variants[i];
        {
          const std::lock_guard<std::mutex> lock(mutex);
          if (stopped) {
            return; // after a failure, nothing more is started
          }
        }
        launch::LaunchPlan staged = variant.plan;
        staged.stage_dir.clear(); // staged above, for all of them
        OrderedJson each;
        try {
          each = launch::execute_submit(staged, effects);
        } catch (const Error &error) {
          const std::lock_guard<std::mutex> lock(mutex);
          if (!result.failure) {
            result.failure = Error(error.code(),
                                   fmt::format("variant {} of the sweep {} was not submitted: {}",
                                               variant.plan.experiment_name,
                                               plan.name,
                                               error.what()),
                                   error.context());
          }
          stopped = true;
          return;
        }
        OrderedJson set = OrderedJson::object();
        for (const auto &[key, literal] : variant.overrides) {
          set[key] = literal;
        }
        each["variant"] = set;
        const auto id = each.value("experiment_id", OrderedJson());
        if (id.is_string()) {
          const auto added = effects.beaker.run({"group", "add", group, id.get<std::string>()});
          if (!added.ok()) {
            each["group_error"] =
                std::string(text::trim(added.err.empty() ? added.out : added.err));
            spdlog::warn("{} was submitted but not added to the group {}: {}",
                         id.get<std::string>(),
                         plan.name,
                         each["group_error"].get<std::string>());
          }
        }
        const std::lock_guard<std::mutex> lock(mutex);
        rows[i] = std::move(each);
        write_receipt();
      });
  receipt = write_receipt();
  if (result.failure) {
    result.failure->add_context(
        fmt::format("{} of {} variants were submitted (the receipt lists them); not submitted: {}",
                    receipt["variants"].size(),
                    plan.variants.size(),
                    text::join(receipt["not_submitted"].get<std::vector<std::string>>(), ", ")));
  }
  return result;
}

} // namespace pb::sweep
