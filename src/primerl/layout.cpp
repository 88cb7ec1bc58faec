// SPDX-License-Identifier: MIT
// The run layout of each Prime-RL generation (layout.hpp). Paths follow Prime-RL's own
// src/prime_rl/utils/pathing.py: v0.8.0 at 60bc2954, v0.9 at 559b4477.
#include <primebeaker/core/error.hpp>
#include <primebeaker/primerl/layout.hpp>
#include <primebeaker/primerl/v0_9.hpp>
#include <primebeaker/toml/value.hpp>

#include <initializer_list>
#include <string_view>

namespace pb::primerl {

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

fs::path normalised(fs::path path) {
  path = path.lexically_normal();
  if (!path.empty() && path.filename().empty() && path.has_parent_path()) {
    path = path.parent_path();
  }
  return path;
}

} // namespace

std::string run_dir_name(const toml::Document &document, const std::string &fallback) {
  if (const std::string *dir = string_at(document, {"run", "dir"}, "run.dir");
      dir != nullptr && !dir->empty()) {
    return *dir;
  }
  if (const std::string *name = string_at(document, {"run", "name"}, "run.name");
      name != nullptr && !name->empty()) {
    return *name;
  }
  return fallback;
}

bool names_its_run(const toml::Document &document) {
  return !run_dir_name(document, "").empty();
}

RunLayout run_layout(Generation generation,
                     const fs::path &output_dir,
                     const std::string &run_dir_name,
                     const std::optional<fs::path> &ckpt_output_dir) {
  RunLayout layout;
  layout.output_dir = normalised(output_dir);
  if (generation == Generation::v0_9) {
    const fs::path name(run_dir_name);
    if (run_dir_name.empty() || name.is_absolute() || name.has_parent_path() ||
        run_dir_name == "." || run_dir_name == "..") {
      throw input_error("a Prime-RL v0.9 run directory needs a plain name (run.dir, run.name or "
                        "the launch's experiment name), got '" +
                        run_dir_name + "'");
    }
    layout.generation = Generation::v0_9;
    layout.run_dir = layout.output_dir / name;
    // Both owners write <run_dir>/checkpoints/step_N/{trainer,orchestrator} (pathing.py).
    layout.orchestrator_checkpoints = layout.run_dir / "checkpoints";
    layout.broadcasts = layout.run_dir / "broadcasts";
    layout.step_dirs = {layout.run_dir / "rollouts", layout.broadcasts};
    layout.wandb_dirs = {layout.run_dir / "wandb"};
    layout.config_dir = layout.run_dir / "configs";
  } else {
    layout.generation = Generation::v0_8;
    layout.run_dir = layout.output_dir;
    // The orchestrator of v0.8.0 runs as the single tenant "run_default" of the trainer.
    const fs::path tenant = layout.output_dir / "run_default";
    layout.orchestrator_checkpoints = tenant / "checkpoints";
    layout.broadcasts = tenant / "broadcasts";
    layout.step_dirs = {layout.output_dir / "rollouts", tenant / "rollouts", layout.broadcasts};
    layout.wandb_dirs = {layout.output_dir / "wandb", tenant / "wandb"};
  }
  layout.trainer_checkpoints = ckpt_output_dir ? normalised(*ckpt_output_dir / "checkpoints")
                                               : layout.run_dir / "checkpoints";
  return layout;
}

std::optional<std::string> ckpt_output_dir(const toml::Document &document) {
  // The shared key first: Prime-RL propagates it onto the trainer's.
  if (const std::string *shared = string_at(document, {"ckpt", "output_dir"}, "ckpt.output_dir")) {
    return *shared;
  }
  if (const std::string *trainer =
          string_at(document, {"trainer", "ckpt", "output_dir"}, "trainer.ckpt.output_dir")) {
    return *trainer;
  }
  return std::nullopt;
}

std::optional<fs::path> ckpt_output_dir(const toml::Document &document,
                                        const fs::path &working_dir) {
  const auto written = ckpt_output_dir(document);
  if (!written) {
    return std::nullopt;
  }
  const fs::path root(*written);
  return normalised(root.is_relative() ? working_dir / root : root);
}

const ResumeKeys &resume_keys(Generation generation) {
  static const ResumeKeys v0_8{
      "ckpt.resume_step",
      {"trainer.ckpt.resume_step", "orchestrator.ckpt.resume_step"},
      {},
      {},
      "clean_output_dir",
      std::nullopt,
  };
  // Top-level [resume] is copied onto trainer.resume and orchestrator.resume (rl.py
  // auto_setup_resume); step and dir are exclusive (shared.py ResumeConfig).
  static const ResumeKeys v0_9{
      "resume.step",
      {"trainer.resume.step", "orchestrator.resume.step"},
      {"resume.dir", "trainer.resume.dir", "orchestrator.resume.dir"},
      {"resume", "trainer.resume", "orchestrator.resume"},
      "clean",
      "resume.dir",
  };
  return generation == Generation::v0_9 ? v0_9 : v0_8;
}

std::int64_t v0_9_trainer_ranks(const toml::Document &document) {
  // One reading of the deployment for the whole tool: the launch's (primerl/v0_9.hpp).
  if (document.root().find("orchestrator") != nullptr) {
    return v0_9::read_rl(document).trainer_ranks();
  }
  return v0_9::read_sft(document).trainer_ranks();
}

} // namespace pb::primerl
