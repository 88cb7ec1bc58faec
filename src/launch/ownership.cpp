// SPDX-License-Identifier: MIT
#include "ownership.hpp"

#include "paths.hpp"

#include <primebeaker/core/error.hpp>
#include <primebeaker/core/fs.hpp>
#include <primebeaker/core/json.hpp>
#include <primebeaker/core/sha2.hpp>
#include <primebeaker/recovery/ledger.hpp>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <chrono>
#include <optional>

namespace pb::launch {

namespace {

namespace ledger = recovery::ledger;
namespace stdfs = std::filesystem;

double now_unix() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

// The index entry of a directory, nullopt when none (or unreadable: a warning, never a refusal
// of its own).
std::optional<OrderedJson> read_index(fs::FileSystem &files, const stdfs::path &path) {
  std::string text;
  try {
    if (!files.exists(path)) {
      return std::nullopt;
    }
    text = files.read_file(path);
  } catch (const Error &) {
    return std::nullopt;
  }
  auto parsed = OrderedJson::parse(text, nullptr, false);
  if (parsed.is_discarded() || !parsed.is_object() || !parsed.contains("run_id") ||
      !parsed["run_id"].is_string()) {
    spdlog::warn("{}: not a launch index entry; ignored", path.string());
    return std::nullopt;
  }
  return parsed;
}

OrderedJson index_entry(const LaunchPlan &plan, const std::string &experiment_id) {
  OrderedJson j = OrderedJson::object();
  j["schema_version"] = 1;
  j["checkpoint_dir"] = plan.ownership.checkpoint_dir.string();
  j["run_id"] = plan.ownership.run_id;
  j["experiment_name"] = plan.experiment_name;
  j["experiment_id"] = experiment_id.empty() ? OrderedJson(nullptr) : OrderedJson(experiment_id);
  j["workspace"] = plan.workspace;
  j["launch_id"] = plan.launch_id;
  j["submitted_at"] = ledger::utc_text(now_unix());
  return j;
}

std::string refusal(const LaunchPlan &plan,
                    const stdfs::path &source,
                    const ledger::Owner &owner) {
  return ledger::ownership_refusal(source,
                                   plan.ownership.checkpoint_dir,
                                   owner,
                                   plan.ownership.run_id,
                                   plan.ownership.v0_9);
}

// A v0.8.0 output dir holds one run's checkpoints, so another run's ledger there claims it too
// (runs started before owner files existed have only that). v0.9 runs share an output dir, each
// in its own run directory, so their ledgers say nothing of ownership.
std::optional<ledger::Owner> other_ledger(fs::FileSystem &files,
                                         const LaunchPlan &plan,
                                         stdfs::path &where) {
  if (plan.ownership.v0_9) {
    return std::nullopt;
  }
  const stdfs::path root = plan.ownership.ledger_dir.parent_path();
  const std::string mine = ledger::run_key(plan.ownership.run_id);
  for (const auto &key : files.list_directory(root)) {
    if (key != mine && files.is_directory(root / key) && !files.list_directory(root / key).empty()) {
      where = root / key;
      return ledger::Owner{key, "", ""};
    }
  }
  return std::nullopt;
}

std::optional<std::string> index_problem(fs::FileSystem &files,
                                         const LaunchPlan &plan,
                                         const stdfs::path &path) {
  const auto entry = read_index(files, path);
  if (!entry || (*entry)["run_id"].get<std::string>() == plan.ownership.run_id) {
    return std::nullopt;
  }
  const auto &j = *entry;
  const std::string id = j.value("experiment_id", OrderedJson()).is_string()
                             ? j["experiment_id"].get<std::string>()
                             : j.value("experiment_name", std::string());
  return refusal(
      plan,
      path,
      ledger::Owner{j["run_id"].get<std::string>(), id, j.value("submitted_at", std::string())});
}

} // namespace

stdfs::path launch_index_path(const stdfs::path &scratch_dir, const stdfs::path &checkpoint_dir) {
  const std::string key = sha2::sha256_hex(checkpoint_dir.lexically_normal().string()).substr(0, 16);
  return scratch_dir / "primebeaker" / "launch_index" / (key + ".json");
}

std::optional<std::string> claimed_directory_problem(const LaunchPlan &plan,
                                                     fs::FileSystem &files) {
  const auto &own = plan.ownership;
  if (own.run_id.empty() || own.checkpoint_dir.empty()) {
    return std::nullopt;
  }
  std::optional<ledger::Owner> owner;
  try {
    if (files.exists(own.owner_path)) {
      owner = ledger::parse_owner(files.read_file(own.owner_path), own.owner_path);
    }
  } catch (const Error &error) {
    spdlog::warn("{}", error.what()); // an unreadable owner file: the node refuses it at start
  }
  if (owner && owner->run_id != own.run_id) {
    return refusal(plan, own.owner_path, *owner);
  }
  stdfs::path where;
  if (const auto other = other_ledger(files, plan, where)) {
    return refusal(plan, where, *other);
  }
  if (!own.index_path.empty()) {
    return index_problem(files, plan, own.index_path);
  }
  return std::nullopt;
}

void refuse_claimed_directory(const LaunchPlan &plan, fs::FileSystem &files) {
  if (const auto problem = claimed_directory_problem(plan, files)) {
    throw input_error(*problem);
  }
}

DirectoryClaim claim_directory(const LaunchPlan &plan, fs::FileSystem &files) {
  refuse_claimed_directory(plan, files);
  DirectoryClaim claimed;
  const auto &own = plan.ownership;
  if (own.run_id.empty() || own.checkpoint_dir.empty()) {
    return claimed;
  }
  // The index first: it is ours (under the scratch dir), so a race with another submit of this
  // user is settled by its exclusive create.
  if (!own.index_path.empty()) {
    try {
      if (files.create_exclusive(own.index_path, index_entry(plan, "").dump(2) + "\n")) {
        claimed.index = own.index_path;
      } else {
        // Taken: by another run, refused; by this run (a rerun), passed.
        if (const auto problem = index_problem(files, plan, own.index_path)) {
          throw input_error(*problem);
        }
      }
    } catch (const Error &error) {
      if (error.code() == static_cast<int>(ExitCode::bad_input)) {
        throw; // the refusal
      }
      spdlog::warn("the launch index cannot be written ({}); only the owner file guards {}",
                   error.what(),
                   own.checkpoint_dir.string());
    }
  }
  // The owner file, where the mount is here and writable (the node claims it at its first start
  // otherwise): a submit from a machine without the mount creates nothing in its place.
  const bool on_mount = !own.mount.empty() && files.is_directory(own.mount) &&
                        path_is_under(own.output_dir.string(), own.mount.string());
  if (on_mount && !files.exists(own.owner_path)) {
    const ledger::Owner mine{own.run_id, plan.experiment_name, ledger::utc_text(now_unix())};
    std::optional<ledger::Owner> owner;
    try {
      owner = files.create_exclusive(own.owner_path, ledger::owner_text(mine))
                  ? mine
                  : ledger::parse_owner(files.read_file(own.owner_path), own.owner_path);
    } catch (const Error &error) {
      spdlog::warn("{}", error.what()); // not writable from here: the node claims it at start
    }
    if (owner && owner->run_id != own.run_id) {
      release_directory(claimed, files);
      throw input_error(refusal(plan, own.owner_path, *owner));
    }
    if (owner && owner->claimed_at == mine.claimed_at && owner->experiment == mine.experiment) {
      claimed.owner = own.owner_path;
    }
  }
  return claimed;
}

void release_directory(const DirectoryClaim &claim, fs::FileSystem &files) {
  for (const auto &path : {claim.owner, claim.index}) {
    if (!path.empty()) {
      files.remove(path);
    }
  }
}

void record_created(const LaunchPlan &plan, const std::string &experiment_id, fs::FileSystem &files) {
  const auto &path = plan.ownership.index_path;
  if (path.empty() || plan.ownership.run_id.empty()) {
    return;
  }
  const auto entry = read_index(files, path);
  if (entry && (*entry)["run_id"].get<std::string>() != plan.ownership.run_id) {
    return; // not ours
  }
  try {
    files.write_file_atomic(path, index_entry(plan, experiment_id).dump(2) + "\n");
  } catch (const Error &error) {
    spdlog::warn("the launch index entry {} could not be completed: {}", path.string(), error.what());
  }
}

} // namespace pb::launch
