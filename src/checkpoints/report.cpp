// SPDX-License-Identifier: MIT
#include <primebeaker/checkpoints/report.hpp>

#include <sstream>

namespace pb::checkpoints {

namespace {

// Rows show at most this many missing items; --json has them all.
constexpr std::size_t k_table_missing_items = 4;

} // namespace

OrderedJson listing_json(const TreeListing &listing, const std::vector<StepStatus> &statuses) {
  OrderedJson out = OrderedJson::object();
  const auto selected = newest_complete(statuses);
  out["selected_step"] = selected ? OrderedJson(*selected) : OrderedJson(nullptr);
  out["expected_ranks"] = listing.source.expected_ranks;
  out["layout"] = layout_name(listing.source.layout);
  out["output_dir"] = listing.source.output_dir.string();
  out["trainer_root"] = listing.source.trainer_root.string();
  out["orchestrator_root"] = listing.source.orchestrator_root.string();
  out["trainer_root_exists"] = listing.trainer_root_exists;
  out["orchestrator_root_exists"] = listing.orchestrator_root_exists;
  OrderedJson steps = OrderedJson::array();
  for (const auto &status : statuses) {
    OrderedJson step = OrderedJson::object();
    step["step"] = status.step;
    step["name"] = status.name;
    step["complete"] = status.complete;
    step["missing"] = status.missing;
    step["trainer_shards"] = status.shards_found;
    step["trainer_metadata"] = status.metadata_ok;
    step["orchestrator_progress"] = status.progress_ok;
    steps.push_back(std::move(step));
  }
  out["steps"] = std::move(steps);
  out["ignored"] = listing.ignored;
  out["scan"] = {{"stat_calls", listing.stats.stat_calls},
                 {"directories_read", listing.stats.directories_read}};
  return out;
}

std::string listing_table(const TreeListing &listing, const std::vector<StepStatus> &statuses) {
  std::ostringstream out;
  const auto &source = listing.source;
  out << "Checkpoints in " << source.output_dir.string() << " (Prime-RL "
      << layout_name(source.layout) << " layout), " << source.expected_ranks << " trainer rank"
      << (source.expected_ranks == 1 ? "" : "s") << " per step\n";
  if (!listing.trainer_root_exists) {
    out << "No trainer checkpoint root (yet): " << source.trainer_root.string() << "\n";
  }
  if (!listing.orchestrator_root_exists && source.orchestrator_root != source.trainer_root) {
    out << "No orchestrator checkpoint root: " << source.orchestrator_root.string() << "\n";
  }
  if (statuses.empty()) {
    out << "No step directories.\n";
  } else {
    std::size_t step_width = 4;
    for (const auto &status : statuses) {
      step_width = std::max(step_width, std::to_string(status.step).size());
    }
    const auto pad_left = [](const std::string &text, std::size_t width) {
      return std::string(width > text.size() ? width - text.size() : 0, ' ') + text;
    };
    const auto pad_right = [](const std::string &text, std::size_t width) {
      return text + std::string(width > text.size() ? width - text.size() : 0, ' ');
    };
    out << pad_left("STEP", step_width) << "  " << pad_right("SHARDS", 11)
        << "  METADATA  PROGRESS  STATUS\n";
    for (const auto &status : statuses) {
      const std::string shards =
          std::to_string(status.shards_found) + "/" + std::to_string(source.expected_ranks);
      out << pad_left(std::to_string(status.step), step_width) << "  " << pad_right(shards, 11)
          << "  " << pad_right(status.metadata_ok ? "yes" : "no", 8) << "  "
          << pad_right(status.progress_ok ? "yes" : "no", 8) << "  "
          << (status.complete ? "complete" : "incomplete") << "\n";
      const std::string indent(step_width + 2, ' ');
      for (std::size_t i = 0; i < status.missing.size() && i < k_table_missing_items; ++i) {
        out << indent << "missing: " << status.missing[i] << "\n";
      }
      if (status.missing.size() > k_table_missing_items) {
        out << indent << "... and " << status.missing.size() - k_table_missing_items
            << " more (see --json)\n";
      }
    }
  }
  if (!listing.ignored.empty()) {
    out << "Ignored " << listing.ignored.size() << " entr"
        << (listing.ignored.size() == 1 ? "y" : "ies") << " that are not step_<N> directories\n";
  }
  const auto selected = newest_complete(statuses);
  if (selected) {
    out << "A resume would use step " << *selected << ".\n";
  } else {
    out << "No step is complete for both trainer and orchestrator: a resume would refuse.\n";
  }
  return out.str();
}

OrderedJson record_json(const CheckpointRecord &record) {
  OrderedJson out = OrderedJson::object();
  out["step"] = record.step;
  out["trainer_dir"] = record.trainer_dir.string();
  out["trainer_metadata"] = record.trainer_metadata.string();
  out["trainer_metadata_size"] = record.trainer_metadata_size;
  OrderedJson shards = OrderedJson::array();
  for (const auto &shard : record.trainer_shards) {
    shards.push_back({{"path", shard.path.string()}, {"size", shard.size}});
  }
  out["trainer_shards"] = std::move(shards);
  out["orchestrator_progress"] = record.orchestrator_progress.string();
  out["orchestrator_progress_size"] = record.orchestrator_progress_size;
  return out;
}

} // namespace pb::checkpoints
