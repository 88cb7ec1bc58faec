// SPDX-License-Identifier: MIT
#include "ownership.hpp"

#include <primebeaker/checkpoints/ledger.hpp>
#include <primebeaker/core/fs.hpp>
#include <primebeaker/core/error.hpp>
#include <primebeaker/core/json.hpp>
#include <primebeaker/core/sha2.hpp>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <chrono>
#include <fstream>
#include <optional>
#include <sstream>

namespace pb::launch {

namespace {

namespace ledger = checkpoints::ledger;
namespace stdfs = std::filesystem;

double now_unix() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

// The index entry of a directory, nullopt when none (or unreadable: a warning, never a refusal
// of its own).
std::optional<OrderedJson> read_index(const stdfs::path &path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    return std::nullopt;
  }
  std::stringstream text;
  text << in.rdbuf();
  auto parsed = OrderedJson::parse(text.str(), nullptr, false);
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

[[noreturn]] void refuse(const LaunchPlan &plan,
                         const stdfs::path &source,
                         const ledger::Owner &owner) {
  throw input_error(ledger::ownership_refusal(source,
                                              plan.ownership.checkpoint_dir,
                                              owner,
                                              plan.ownership.run_id,
                                              plan.ownership.v0_9));
}

// A v0.8.0 output dir holds one run's checkpoints, so another run's ledger there claims it too
// (runs started before owner files existed have only that). v0.9 runs share an output dir, each
// in its own run directory, so their ledgers say nothing of ownership.
std::optional<ledger::Owner> other_ledger(const LaunchPlan &plan, stdfs::path &where) {
  if (plan.ownership.v0_9) {
    return std::nullopt;
  }
  const stdfs::path root = plan.ownership.ledger_dir.parent_path();
  const std::string mine = ledger::run_key(plan.ownership.run_id);
  std::error_code ec;
  for (const auto &entry : stdfs::directory_iterator(root, ec)) {
    const std::string key = entry.path().filename().string();
    if (key != mine && entry.is_directory(ec) && !stdfs::is_empty(entry.path(), ec)) {
      where = entry.path();
      return ledger::Owner{key, "", ""};
    }
  }
  return std::nullopt;
}

void refuse_by_index(const LaunchPlan &plan, const stdfs::path &path) {
  const auto entry = read_index(path);
  if (!entry || (*entry)["run_id"].get<std::string>() == plan.ownership.run_id) {
    return;
  }
  const auto &j = *entry;
  const std::string id = j.value("experiment_id", OrderedJson()).is_string()
                             ? j["experiment_id"].get<std::string>()
                             : j.value("experiment_name", std::string());
  refuse(plan,
         path,
         ledger::Owner{j["run_id"].get<std::string>(), id, j.value("submitted_at", std::string())});
}

} // namespace

stdfs::path launch_index_path(const stdfs::path &scratch_dir, const stdfs::path &checkpoint_dir) {
  const std::string key = sha2::sha256_hex(checkpoint_dir.lexically_normal().string()).substr(0, 16);
  return scratch_dir / "primebeaker" / "launch_index" / (key + ".json");
}

void refuse_claimed_directory(const LaunchPlan &plan) {
  const auto &own = plan.ownership;
  if (own.run_id.empty() || own.checkpoint_dir.empty()) {
    return;
  }
  std::optional<ledger::Owner> owner;
  try {
    owner = ledger::read_owner(own.owner_path);
  } catch (const Error &error) {
    spdlog::warn("{}", error.what()); // an unreadable owner file: the node refuses it at start
  }
  if (owner && owner->run_id != own.run_id) {
    refuse(plan, own.owner_path, *owner);
  }
  stdfs::path where;
  if (const auto other = other_ledger(plan, where)) {
    refuse(plan, where, *other);
  }
  if (!own.index_path.empty()) {
    refuse_by_index(plan, own.index_path);
  }
}

DirectoryClaim claim_directory(const LaunchPlan &plan) {
  refuse_claimed_directory(plan);
  DirectoryClaim claimed;
  const auto &own = plan.ownership;
  if (own.run_id.empty() || own.checkpoint_dir.empty()) {
    return claimed;
  }
  // The index first: it is ours (under the scratch dir), so a race with another submit of this
  // user is settled by its exclusive create.
  if (!own.index_path.empty()) {
    std::error_code ec;
    stdfs::create_directories(own.index_path.parent_path(), ec);
    if (!ec) {
      if (ledger::create_exclusive(own.index_path, index_entry(plan, "").dump(2) + "\n")) {
        claimed.index = own.index_path;
      } else {
        refuse_by_index(plan, own.index_path); // another run won; ours passes
      }
    } else {
      spdlog::warn("the launch index {} cannot be written ({}); only the owner file guards {}",
                   own.index_path.parent_path().string(),
                   ec.message(),
                   own.checkpoint_dir.string());
    }
  }
  // The owner file, where the mount is writable from here (the node claims it at its first
  // start otherwise). Created only under an output dir whose parent exists: the mount is there.
  std::error_code ec;
  if (!stdfs::exists(own.owner_path, ec) && stdfs::is_directory(own.output_dir.parent_path(), ec)) {
    stdfs::create_directories(own.owner_path.parent_path(), ec);
    if (!ec) {
      const ledger::Owner mine{own.run_id, plan.experiment_name, ledger::utc_text(now_unix())};
      std::optional<ledger::Owner> owner;
      try {
        owner = ledger::claim(own.owner_path, mine);
      } catch (const Error &error) {
        spdlog::warn("{}", error.what());
      }
      if (owner && owner->run_id != own.run_id) {
        release_directory(claimed);
        refuse(plan, own.owner_path, *owner);
      }
      if (owner && owner->claimed_at == mine.claimed_at && owner->experiment == mine.experiment) {
        claimed.owner = own.owner_path;
      }
    }
  }
  return claimed;
}

void release_directory(const DirectoryClaim &claim) {
  std::error_code ec;
  for (const auto &path : {claim.owner, claim.index}) {
    if (!path.empty()) {
      stdfs::remove(path, ec);
    }
  }
}

void record_created(const LaunchPlan &plan, const std::string &experiment_id) {
  const auto &path = plan.ownership.index_path;
  if (path.empty() || plan.ownership.run_id.empty()) {
    return;
  }
  const auto entry = read_index(path);
  if (entry && (*entry)["run_id"].get<std::string>() != plan.ownership.run_id) {
    return; // not ours
  }
  try {
    fs::write_file_atomic(path, index_entry(plan, experiment_id).dump(2) + "\n");
  } catch (const Error &error) {
    spdlog::warn("the launch index entry {} could not be completed: {}", path.string(), error.what());
  }
}

} // namespace pb::launch
