// SPDX-License-Identifier: MIT
// The pure half of checkpoint discovery: completeness and selection over listed facts.
#include <primebeaker/checkpoints/scan.hpp>
#include <primebeaker/core/error.hpp>

#include <algorithm>

namespace pb::checkpoints {

namespace {

namespace fs = std::filesystem;

// How messages name a path: relative to the output directory when under it, else absolute.
std::string display_root(const fs::path &root, const fs::path &output_dir) {
  const fs::path relative = root.lexically_relative(output_dir);
  if (relative.empty() || *relative.begin() == "..") {
    return root.string();
  }
  return relative == "." ? std::string() : relative.string();
}

std::string joined(const std::string &root, const std::string &rest) {
  return root.empty() ? rest : root + "/" + rest;
}

// Adds `path` to `missing` unless `state` is a non-empty regular file. True when it is one.
bool require_file(const FileState &state,
                  const std::string &path,
                  std::vector<std::string> &missing) {
  switch (state.kind) {
  case EntryKind::regular:
    if (state.size > 0) {
      return true;
    }
    missing.push_back(path + " (empty)");
    return false;
  case EntryKind::missing:
    missing.push_back(path);
    return false;
  case EntryKind::dangling_symlink:
    missing.push_back(path + " (dangling symlink)");
    return false;
  case EntryKind::directory:
  case EntryKind::other:
    missing.push_back(path + " (not a regular file)");
    return false;
  }
  return false;
}

std::string join_steps(const std::vector<std::int64_t> &steps) {
  std::string text;
  for (const auto step : steps) {
    text += (text.empty() ? "" : ", ") + std::to_string(step);
  }
  return text;
}

} // namespace

StepStatus evaluate_step(const StepListing &listing, const CheckpointSource &source) {
  StepStatus status;
  status.step = listing.step;
  status.name = listing.name;
  auto &missing = status.missing;
  const std::string trainer_root = display_root(source.trainer_root, source.output_dir);
  const std::string orchestrator_root = display_root(source.orchestrator_root, source.output_dir);

  // Prime-RL opens checkpoints/step_<N> for resume_step = N; step_007 would never be read.
  const std::string canonical = "step_" + std::to_string(listing.step);
  bool name_ok = listing.name == canonical;
  if (!name_ok) {
    missing.push_back(joined(trainer_root, canonical) + " (found " + listing.name +
                      "; Prime-RL resumes step " + std::to_string(listing.step) + " from " +
                      canonical + ")");
  }

  const std::string trainer_dir = joined(trainer_root, listing.name + "/trainer");
  bool trainer_ok = false;
  if (!listing.in_trainer_root || listing.trainer_dir.kind == EntryKind::missing) {
    missing.push_back(trainer_dir);
  } else if (listing.trainer_dir.kind != EntryKind::directory) {
    missing.push_back(trainer_dir + " (not a directory)");
  } else {
    status.metadata_ok = require_file(listing.metadata, trainer_dir + "/.metadata", missing);
    bool shards_ok = true;
    for (std::size_t rank = 0; rank < listing.rank_shards.size(); ++rank) {
      const auto &shard = listing.rank_shards[rank];
      if (shard.kind != EntryKind::missing) {
        ++status.shards_found;
      }
      shards_ok =
          require_file(shard, trainer_dir + "/__" + std::to_string(rank) + "_0.distcp", missing) &&
          shards_ok;
    }
    status.shards_found += listing.extra_shards.size();
    for (const auto &extra : listing.extra_shards) {
      missing.push_back(trainer_dir + "/" + extra + " (extra shard; " +
                        std::to_string(source.expected_ranks) + " trainer ranks expected)");
    }
    trainer_ok = status.metadata_ok && shards_ok && listing.extra_shards.empty() &&
                 !listing.rank_shards.empty();
  }

  const std::string progress =
      joined(orchestrator_root, listing.name + "/orchestrator/progress.pt");
  status.progress_ok = listing.in_orchestrator_root
                           ? require_file(listing.progress, progress, missing)
                           : (missing.push_back(progress), false);
  status.complete = name_ok && trainer_ok && status.progress_ok;
  return status;
}

std::vector<StepStatus> evaluate(const TreeListing &listing) {
  std::vector<StepStatus> statuses;
  statuses.reserve(listing.steps.size());
  for (const auto &step : listing.steps) {
    statuses.push_back(evaluate_step(step, listing.source));
  }
  return statuses;
}

CheckpointRecord make_record(const StepListing &listing, const CheckpointSource &source) {
  CheckpointRecord record;
  record.step = listing.step;
  record.trainer_dir = source.trainer_root / listing.name / "trainer";
  record.trainer_metadata = record.trainer_dir / ".metadata";
  record.trainer_metadata_size = listing.metadata.size;
  record.trainer_shards.reserve(listing.rank_shards.size());
  for (std::size_t rank = 0; rank < listing.rank_shards.size(); ++rank) {
    record.trainer_shards.push_back(
        {record.trainer_dir / ("__" + std::to_string(rank) + "_0.distcp"),
         listing.rank_shards[rank].size});
  }
  record.orchestrator_progress =
      source.orchestrator_root / listing.name / "orchestrator" / "progress.pt";
  record.orchestrator_progress_size = listing.progress.size;
  return record;
}

std::optional<std::int64_t> newest_complete(const std::vector<StepStatus> &steps) {
  std::optional<std::int64_t> newest;
  for (const auto &step : steps) {
    if (step.complete && (!newest || step.step > *newest)) {
      newest = step.step;
    }
  }
  return newest;
}

const StepStatus &require_step(const std::vector<StepStatus> &steps,
                               std::optional<std::int64_t> requested) {
  std::vector<std::int64_t> complete;
  const StepStatus *newest = nullptr;
  for (const auto &step : steps) {
    if (step.complete) {
      complete.push_back(step.step);
      if (newest == nullptr || step.step > newest->step) {
        newest = &step;
      }
    }
  }
  std::sort(complete.begin(), complete.end());
  if (!requested) {
    if (newest == nullptr) {
      throw failure("no complete common checkpoint; a resumable step needs every trainer shard, "
                    "trainer .metadata and orchestrator progress.pt" +
                    std::string(steps.empty() ? " (no step directories found)" : ""));
    }
    return *newest;
  }
  for (const auto &step : steps) {
    if (step.complete && step.step == *requested) {
      return step;
    }
  }
  Error error = failure("step " + std::to_string(*requested) +
                        " is not a complete common checkpoint; available: " +
                        (complete.empty() ? std::string("none") : join_steps(complete)));
  bool listed = false;
  for (const auto &step : steps) {
    if (step.step == *requested) {
      listed = true;
      for (const auto &line : step.missing) {
        error.add_context("missing: " + line);
      }
    }
  }
  if (!listed) {
    error.add_context("no step_" + std::to_string(*requested) +
                      " directory in either checkpoint root");
  }
  throw error;
}

} // namespace pb::checkpoints
