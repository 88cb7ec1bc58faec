// SPDX-License-Identifier: MIT
#include <primebeaker/checkpoints/topology.hpp>
#include <primebeaker/core/error.hpp>

namespace pb::checkpoints {

namespace {

namespace fs = std::filesystem;

// A positive integer at `path`, or `fallback` when absent; anything else is a clear exit 3.
std::int64_t positive_integer(const toml::Document &document,
                              std::initializer_list<std::string_view> path,
                              std::int64_t fallback) {
  const toml::Value *value = document.root().find_path(path);
  std::string dotted;
  for (const auto key : path) {
    dotted += (dotted.empty() ? "" : ".") + std::string(key);
  }
  if (value == nullptr) {
    return fallback;
  }
  const auto number = value->integer();
  if (!number) {
    throw input_error(document.location(*value) + ": " + dotted +
                      " must be a positive integer, not a " +
                      std::string(toml::type_name(value->type())));
  }
  if (*number < 1) {
    throw input_error(document.location(*value) + ": " + dotted +
                      " must be a positive integer, got " + std::to_string(*number));
  }
  return *number;
}

const std::string *string_at(const toml::Document &document,
                             std::initializer_list<std::string_view> path,
                             const char *dotted) {
  const toml::Value *value = document.root().find_path(path);
  if (value == nullptr) {
    return nullptr;
  }
  if (value->string() == nullptr) {
    throw input_error(document.location(*value) + ": " + dotted + " must be a string");
  }
  return value->string();
}

} // namespace

bool is_post_v0_8_0(const toml::Document &document) {
  const auto &root = document.root();
  const auto is_table = [&](std::string_view key) {
    const auto *value = root.find(key);
    return value != nullptr && value->is(toml::Type::table);
  };
  return is_table("resume") || is_table("monitors") || is_table("run") ||
         (root.find("clean") != nullptr && root.find("deployment") != nullptr);
}

int expected_trainer_ranks(const toml::Document &document) {
  const std::string *type = string_at(document, {"deployment", "type"}, "deployment.type");
  std::int64_t ranks = 0;
  if (type != nullptr && *type == "multi_node") {
    ranks = positive_integer(document, {"trainer", "model", "cp"}, 1) *
            positive_integer(document, {"trainer", "model", "dp_replicate"}, 1);
  } else if (type == nullptr || *type == "single_node") {
    ranks = positive_integer(document, {"deployment", "num_train_gpus"}, 1);
  } else {
    const auto *value = document.root().find_path({"deployment", "type"});
    throw input_error(document.location(*value) +
                      ": deployment.type must be \"single_node\" or "
                      "\"multi_node\", got \"" +
                      *type + "\"");
  }
  if (ranks > 1 << 20) {
    throw input_error(document.source_name() + ": " + std::to_string(ranks) +
                      " trainer ranks is not a plausible trainer world size");
  }
  return static_cast<int>(ranks);
}

CheckpointSource source_from_toml(const toml::Document &document, const fs::path &cwd) {
  const int ranks = expected_trainer_ranks(document);
  const std::string *output = string_at(document, {"output_dir"}, "output_dir");
  fs::path output_dir = output != nullptr ? fs::path(*output) : fs::path("outputs");
  if (output_dir.is_relative()) {
    output_dir = cwd / output_dir;
  }
  output_dir = output_dir.lexically_normal();
  if (!output_dir.empty() && output_dir.filename().empty()) {
    output_dir = output_dir.parent_path();
  }

  if (is_post_v0_8_0(document)) {
    const std::string *run_name = string_at(document, {"run", "name"}, "run.name");
    if (run_name == nullptr) {
      throw input_error(document.source_name() +
                        ": a post-v0.8.0 Prime-RL config without run.name; pass --output-dir with "
                        "the run directory and --ranks instead");
    }
    CheckpointSource source;
    source.layout = Layout::post_v0_8_0;
    source.output_dir = output_dir / *run_name;
    source.trainer_root = source.output_dir / "checkpoints";
    source.orchestrator_root = source.trainer_root;
    source.expected_ranks = ranks;
    return source;
  }

  CheckpointSource source;
  source.output_dir = output_dir;
  source.trainer_root = output_dir / "checkpoints";
  source.orchestrator_root = output_dir / "run_default" / "checkpoints";
  source.expected_ranks = ranks;
  // ckpt.output_dir (shared, v0.8.0) or trainer.ckpt.output_dir relocates the trainer's root only.
  const std::string *relocated = string_at(document, {"ckpt", "output_dir"}, "ckpt.output_dir");
  if (relocated == nullptr) {
    relocated = string_at(document, {"trainer", "ckpt", "output_dir"}, "trainer.ckpt.output_dir");
  }
  if (relocated != nullptr) {
    fs::path root(*relocated);
    source.trainer_root =
        ((root.is_relative() ? cwd / root : root) / "checkpoints").lexically_normal();
  }
  return source;
}

} // namespace pb::checkpoints
