// SPDX-License-Identifier: MIT
// `rl resume` as options -> pure plan -> effects (docs/resume.md).
#pragma once

#include "source.hpp"

#include <primebeaker/checkpoints/scan.hpp>
#include <primebeaker/core/json.hpp>
#include <primebeaker/launch/launch.hpp>
#include <primebeaker/primerl/layout.hpp>

#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace pb::toml {
class Document;
}

namespace pb::resume {

struct ResumeOptions {
  std::string from_experiment;
  std::string config; // --config: TOML instead of the source's CONFIG_PATH
  std::optional<std::int64_t> resume_step;
  std::string experiment_name; // base of the new name (default: the source's)
  std::string attempt_id;      // default: PRIMEBEAKER_LAUNCH_ID, else random
  // The new experiment's exact name (a recovering `follow` fixes it in its ledger claim, so a
  // takeover finds or submits the same one); empty: experiment_name's rule.
  std::string child_name;
  // The run's recovery controller already runs under this name (a recovering `follow`): the new
  // spec names it and no controller is submitted. Empty: a controller is submitted when the
  // run's recovery mode (the source's, or --recover) says so.
  std::string controller_name;
  bool dry_run = false;
  // With no complete checkpoint at all (a run preempted before its first one), relaunch the run
  // from the start in the same output dir with the same W&B run id instead of refusing: what a
  // recovery does (docs/recovery.md "Recovery from any point"). Never with --resume-step.
  bool from_start_if_none = false;
  bool inherit_managed_service = false; // off unless asked (docs/resume.md)
  // --image, --workspace, --cluster, --priority, --min-runtime-hours, --budget, --registry;
  // `given` says which were set (the rest come from the source).
  launch::LaunchOptions overrides;
};

// The resume overrides among the shared launch flags.
const std::vector<std::string> &override_flag_names();

// Everything make_plan needs, already loaded by the glue.
struct ResumeInputs {
  SourceExperiment source;
  const toml::Document *config = nullptr;           // the training TOML
  std::filesystem::path config_path;                // absolute
  std::filesystem::path resolved_config_output_dir; // symlinks followed
  std::filesystem::path resolved_source_output_dir;
  primerl::RunLayout layout;        // of the TOML (v0.9: its run directory resolved)
  checkpoints::TreeListing listing; // of the TOML's checkpoint source
  std::string attempt_id;
  std::string random_run_id; // W&B run id when the source recorded none
  std::filesystem::path cwd;
  std::map<std::string, std::string> environment;
  launch::PathResolver resolve = launch::resolve_real_path;
  // The beaker CLI to stage for a new recovery controller (launch::LaunchInputs).
  std::filesystem::path beaker_cli;
  std::string beaker_cli_sha256;
};

struct ResumePlan {
  std::string source_id;
  std::string source_name;
  std::vector<std::string> source_job_ids;
  checkpoints::CheckpointSource checkpoints;
  std::string step_name; // the selected step's directory name; empty: from the start
  checkpoints::CheckpointRecord record;
  // No complete checkpoint existed and --from-start-if-none was given: the relaunch trains from
  // the start (step_name empty, record unset).
  bool from_start = false;
  std::filesystem::path source_config_path;
  std::filesystem::path generated_config_path;
  std::filesystem::path manifest_path;
  std::filesystem::path broadcasts_dir;    // the layout's broadcasts (v0.9: <run>/broadcasts)
  std::filesystem::path broadcast_archive; // where it is moved
  std::string experiment_name;
  std::string attempt_id;
  std::string generated_config;                               // the resume TOML's text
  std::vector<std::string> edited_keys;                       // what the TOML edit changed or added
  std::vector<std::pair<std::string, std::string>> overrides; // --set: key, value literal
  std::vector<std::pair<std::string, std::string>> not_inherited;
  launch::LaunchPlan launch;

  // The `resume` object of docs/resume.md (also the body of the manifest).
  OrderedJson resume_json() const;
};

// The new experiment name: sanitised base + "-resume-step<K>-<attempt[:8]>", at most 128
// characters (docs/resume.md). Pure.
std::string
resume_experiment_name(const std::string &base, std::int64_t step, const std::string &attempt_id);

// The whole resume as a value: output_dir match, checkpoint selection, max_steps, registry,
// name and artifact paths, the resume TOML (lossless edit) and the launch plan. Pure; throws
// pb::Error (1 refusals, 2 flags, 3 TOML).
ResumePlan make_plan(const ResumeOptions &options, const ResumeInputs &inputs);

} // namespace pb::resume
