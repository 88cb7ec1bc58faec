// SPDX-License-Identifier: MIT
#include <primebeaker/checkpoints/topology.hpp>
#include <primebeaker/core/error.hpp>
#include <primebeaker/primerl/config.hpp>

namespace pb::checkpoints {

namespace {

namespace fs = std::filesystem;

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

// What a launch reads from the TOML, through primerl as previews read it (docs/checkpoints.md):
// the trainer rank count and output_dir as written (required; exit 3 naming FILE:LINE:COL).
struct LaunchFacts {
  int ranks = 0;
  std::string output_dir;
};

LaunchFacts launch_facts(const toml::Document &document) {
  if (primerl::read_deployment_type(document) == primerl::DeploymentType::multi_node) {
    const auto rl = primerl::read_multi_node_rl(document);
    return {static_cast<int>(rl.trainer_gpus), rl.output_dir.value};
  }
  const auto rl = primerl::read_single_node_rl(document);
  return {static_cast<int>(rl.num_train_gpus), rl.output_dir.value};
}

} // namespace

bool is_post_v0_8_0(const toml::Document &document) {
  return primerl::detect_generation(document).generation == primerl::Generation::v0_9;
}

int expected_trainer_ranks(const toml::Document &document) {
  // The GPU accounting is primerl's (docs/checkpoints.md): the same numbers the launch used.
  return launch_facts(document).ranks;
}

CheckpointSource source_from_toml(const toml::Document &document, const fs::path &working_dir) {
  if (is_post_v0_8_0(document)) {
    const auto info = primerl::detect_generation(document);
    throw input_error(document.source_name() + ": a post-v0.8.0 Prime-RL config (" + info.evidence +
                      "); its checkpoints live in <output_dir>/<run.name>/checkpoints/step_N/"
                      "{trainer,orchestrator}: list them with --output-dir RUN_DIR --ranks N");
  }
  const LaunchFacts facts = launch_facts(document);
  // Relative to the directory the run's container worked in, as previews resolve it.
  fs::path output_dir(facts.output_dir);
  if (output_dir.is_relative()) {
    output_dir = working_dir / output_dir;
  }
  output_dir = output_dir.lexically_normal();
  if (!output_dir.empty() && output_dir.filename().empty()) {
    output_dir = output_dir.parent_path();
  }

  CheckpointSource source;
  source.output_dir = output_dir;
  source.trainer_root = output_dir / "checkpoints";
  source.orchestrator_root = output_dir / "run_default" / "checkpoints";
  source.expected_ranks = facts.ranks;
  // ckpt.output_dir (shared, v0.8.0) or trainer.ckpt.output_dir relocates the trainer's root only.
  const std::string *relocated = string_at(document, {"ckpt", "output_dir"}, "ckpt.output_dir");
  if (relocated == nullptr) {
    relocated = string_at(document, {"trainer", "ckpt", "output_dir"}, "trainer.ckpt.output_dir");
  }
  if (relocated != nullptr) {
    fs::path root(*relocated);
    source.trainer_root =
        ((root.is_relative() ? working_dir / root : root) / "checkpoints").lexically_normal();
  }
  return source;
}

} // namespace pb::checkpoints
