// SPDX-License-Identifier: MIT
#include <primebeaker/checkpoints/topology.hpp>
#include <primebeaker/core/error.hpp>
#include <primebeaker/primerl/config.hpp>
#include <primebeaker/primerl/layout.hpp>
#include <primebeaker/primerl/v0_9.hpp>

namespace pb::checkpoints {

namespace {

namespace fs = std::filesystem;

// What a launch reads from a v0.8.0 TOML, through primerl's readers as previews read it
// (docs/checkpoints.md): the trainer rank count and output_dir (Prime-RL's default when the TOML
// names none; a problem is exit 3 naming FILE:LINE:COL).
struct LaunchFacts {
  int ranks = 0;
  std::string output_dir;
};

LaunchFacts launch_facts(const toml::Document &document) {
  // As a launch reads it: no deployment.type is Prime-RL's default, single_node.
  if (document.root().find_path({"deployment", "type"}) != nullptr &&
      primerl::read_deployment_type(document) == primerl::DeploymentType::multi_node) {
    const auto rl = primerl::read_multi_node_rl(document);
    return {static_cast<int>(rl.trainer_ranks()), rl.output_dir.value};
  }
  const auto rl = primerl::read_single_node_rl(document);
  return {static_cast<int>(rl.num_train_gpus), rl.output_dir.value};
}

// v0.9's output_dir as a launch reads it (RLConfig's default is "outputs").
std::string v0_9_output_dir(const toml::Document &document) {
  return primerl::v0_9::read_rl(document).output_dir.value;
}

} // namespace

bool is_v0_9(const toml::Document &document, primerl::Generation recorded) {
  return recorded == primerl::Generation::v0_9 ||
         primerl::detect_generation(document).generation == primerl::Generation::v0_9;
}

int expected_trainer_ranks(const toml::Document &document, primerl::Generation recorded) {
  if (is_v0_9(document, recorded)) {
    return static_cast<int>(primerl::v0_9_trainer_ranks(document));
  }
  // The GPU accounting is primerl's (docs/checkpoints.md): the same numbers the launch used.
  return launch_facts(document).ranks;
}

fs::path output_dir_from_toml(const toml::Document &document,
                              const fs::path &working_dir,
                              primerl::Generation recorded) {
  // Relative to the directory the run's container worked in, as previews resolve it.
  fs::path output_dir(is_v0_9(document, recorded) ? v0_9_output_dir(document)
                                                  : launch_facts(document).output_dir);
  if (output_dir.is_relative()) {
    output_dir = working_dir / output_dir;
  }
  output_dir = output_dir.lexically_normal();
  if (!output_dir.empty() && output_dir.filename().empty()) {
    output_dir = output_dir.parent_path();
  }
  return output_dir;
}

primerl::RunLayout layout_from_toml(const toml::Document &document,
                                    const fs::path &working_dir,
                                    const std::string &run_name,
                                    primerl::Generation recorded) {
  const fs::path output_dir = output_dir_from_toml(document, working_dir, recorded);
  const bool v0_9 = is_v0_9(document, recorded);
  const std::string name = v0_9 ? primerl::run_dir_name(document, run_name) : std::string();
  if (v0_9 && name.empty()) {
    throw input_error(document.source_name() +
                      ": a Prime-RL v0.9 config without run.dir or run.name: its run directory "
                      "under " +
                      output_dir.string() + " is named after the launch's experiment");
  }
  return primerl::run_layout(v0_9 ? primerl::Generation::v0_9 : primerl::Generation::v0_8,
                             output_dir,
                             name,
                             primerl::ckpt_output_dir(document, working_dir));
}

CheckpointSource source_from_toml(const toml::Document &document,
                                  const fs::path &working_dir,
                                  const std::string &run_name) {
  const auto layout = layout_from_toml(document, working_dir, run_name);
  return source_from_layout(layout, expected_trainer_ranks(document));
}

} // namespace pb::checkpoints
