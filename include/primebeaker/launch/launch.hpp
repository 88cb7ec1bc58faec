// SPDX-License-Identifier: MIT
// The public launch API: the shared launch flag set (docs/launch.md "Launch flags ... are one
// shared set with one parser"), the pure plan of an `sft`/`rl` launch (spec JSON, output JSON,
// beaker argv), and its execution (write the spec atomically, submit). Used by `sft`/`rl`
// preview|submit, `rl resume` (multi-node RL relaunch) and `run` (RL after services).
#pragma once

#include <primebeaker/beaker/spec.hpp>
#include <primebeaker/contract/replica_env.hpp>
#include <primebeaker/core/json.hpp>
#include <primebeaker/core/process.hpp>

#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

namespace pb::cli {
class Command;
}
namespace pb::fs {
class FileSystem;
}
namespace pb::toml {
class Document;
}
namespace pb::beaker {
class Client;
}
namespace pb::images {
struct Catalog;
}
namespace pb::staging {
struct Identity;
class Stager;
} // namespace pb::staging

namespace pb::config {
class Settings;
}
namespace pb::clusters {
struct Snapshot;
struct Placement;
} // namespace pb::clusters

namespace pb::launch {

enum class Program { sft, rl };
enum class Topology { single_node, multi_node };

std::string_view program_name(Program program); // "sft" / "rl"

// Every launch flag, with Python PrimeBeaker's defaults (docs/launch.md). Values are kept as given;
// make_plan() validates them. Optional fields distinguish "not given" from any given value.
struct LaunchOptions {
  std::filesystem::path toml;
  std::string name;  // Beaker experiment name; empty: wandb.name
  std::string image; // empty: the catalog's Prime-RL image for the workspace (docs/staging.md)
  // The Prime-RL version --image holds when the catalog does not know it; without --image, only
  // cataloged images holding it (images/choose.hpp). Empty: the catalog says.
  std::string prime_rl;
  // --image-holds: the pieces an uncataloged --image holds (primerl/pieces.hpp); given or not is
  // was_given("image-holds").
  std::vector<std::string> image_holds;
  std::string workspace = "ai2/oe-agents";
  std::vector<std::string> clusters; // empty: {"ai2/holmes"}
  std::string priority = "high";
  std::int64_t min_runtime_hours = 0;
  std::string mount_path = "/weka";
  std::string dataset = "oe-adapt-default";
  std::string working_dir = "/weka";
  std::string scratch_dir = "/weka";
  std::string home_dir = "/weka";
  // nullopt: the default secret name (WANDB_API_KEY / HF_TOKEN), which an explicit
  // `--secret WANDB_API_KEY=...` replaces. Empty: disabled. A given name conflicting with a
  // `--secret` of the same variable is an error naming both flags.
  std::optional<std::string> wandb_secret;
  std::optional<std::string> hf_secret;
  std::string wandb_run_id;                 // empty: the launch id
  std::vector<std::string> env;             // NAME=VALUE, later duplicates win
  std::vector<std::string> secrets;         // NAME=SECRETNAME, later duplicates win
  std::optional<std::string> setup_command; // shell text, run with `bash -lc` in the container
  std::string budget;
  std::string description;                        // empty: "PrimeBeaker [multi-node ]SFT|RL <name>"
  std::int64_t rendezvous_timeout_seconds = 1800; // multi-node
  std::string registry;                           // RL; required for multi-node RL
  std::string wandb_entity;                       // RL: fallback W&B entity
  std::string wandb_project;                      // W&B project when the TOML's W&B table has none
  std::int64_t gateway_port = 1212;               // multi-node RL
  std::int64_t gateway_workers = 8;               // multi-node RL
  std::vector<std::string> required_services;     // multi-node RL: NAME=COUNT
  // KEY=VALUE overrides of the TOML (docs/launch.md "Overrides"), applied to a copy of it.
  std::vector<std::string> set;
  bool write_spec = false; // preview: also write the spec file
  // submit, when the workspace already has an experiment of this name: "fail" (exit 5) or
  // "adopt" (its receipt, nothing submitted).
  std::string if_exists = "fail";
  // Run the binary staged on the mount (docs/staging.md); false: `primebeaker` from the image's
  // PATH, which then must be a runtime image (images/Dockerfile.runtime).
  bool stage = true;
  bool verify_stage = false; // submit: hash a reused stage in full (docs/staging.md "Reuse")
  // The recovery policy (docs/recovery.md): preemptions recovered automatically (0 = off) and
  // restarts after errors, enforced by the runtime from the attempt ledger.
  std::int64_t max_recoveries = 10;
  std::int64_t max_restarts_on_errors = 0;
  // Who resubmits a preempted multi-node run (docs/recovery.md "The controller"): "controller"
  // (a small experiment on Beaker), "terminal" (`follow --recover` kept running by the user) or
  // "off". Empty: controller for multi-node; single-node runs are restarted by Beaker.
  std::string recover;
  std::string controller_token_secret = "BEAKER_TOKEN"; // workspace secret: its Beaker token
  std::vector<std::string> controller_clusters;         // empty: the run's clusters
  std::string controller_priority = "normal";
  std::string controller_budget; // empty: --budget
  // The run's controller already runs (rl resume by a recovering actor): its name is carried in
  // the new spec and no controller is submitted.
  std::string controller_name;
  // With --cluster auto: refuse when the run fits on no cluster now (docs/clusters.md).
  bool require_free = false;
  // The webhook (docs/notify.md): "secret:NAME" or a URL (never printed), and its events.
  std::string notify;
  std::vector<std::string> notify_events;

  // Kebab names of the flags that were given (filled by the CLI registration and by
  // apply_setting), for callers whose defaults come from elsewhere (rl resume).
  std::set<std::string> given;
  bool was_given(std::string_view kebab_name) const;
  // Where each configurable setting came from (kebab flag name -> "flag", "env:NAME",
  // "file:PATH:LINE", "beaker:PATH", "built-in"), filled by apply_config() (docs/config.md).
  std::map<std::string, std::string> origins;
};

// Fills every setting the command line did not give from the user's defaults (docs/config.md:
// PRIMEBEAKER_*, the project file, the user file, beaker's default workspace) and records the
// origin of each in options.origins. Given flags are left alone and stay the only `given`.
void apply_config(LaunchOptions &options, const config::Settings &settings);

// Kebab names of every launch flag, in help order ("toml", "image", ..., "write-spec").
const std::vector<std::string> &launch_flag_names();

// Adds the launch flags named in `only` (all of launch_flag_names() when empty) to `app`:
// kebab-case and snake_case spellings, `--flag value` and `--flag=value`, list flags that
// accumulate and accept one JSON list literal, `--write-spec/--no-write-spec`. Values go
// through apply_setting(), so the CLI and YAML callers share one parser. `--toml` is required
// when registered unless `toml_required` is false.
void register_launch_flags(cli::Command &app,
                           LaunchOptions &options,
                           const std::vector<std::string> &only = {},
                           bool toml_required = true);

// The one parser: sets the launch setting `name` (kebab or snake_case) from text values (one
// for scalars; list settings append each value). Integers must be whole numbers; booleans
// true/false. Records the name in options.given. Unknown names and bad values throw pb::Error
// exit 2 naming the flag ("--min-runtime-hours expects a whole number, got 'x'").
void apply_setting(LaunchOptions &options,
                   std::string_view name,
                   const std::vector<std::string> &values);

// Resolves a path the way the mount check needs it (absolute, symlinks followed where they
// exist). The real one is resolve_real_path; tests may pass their own.
using PathResolver = std::function<std::filesystem::path(const std::filesystem::path &)>;
std::filesystem::path resolve_real_path(const std::filesystem::path &absolute_path);

// Everything make_plan needs besides the options, already loaded: no I/O happens in make_plan.
struct LaunchInputs {
  Program program = Program::rl;
  const toml::Document *document = nullptr; // the training TOML (required)
  // The TOML path as the container will see it (CONFIG_PATH): normally options.toml made
  // absolute; rl resume passes its generated TOML path (which need not exist yet).
  std::filesystem::path config_path;
  std::filesystem::path cwd;                      // relative paths are checked against it
  std::map<std::string, std::string> environment; // the caller's environment snapshot
  std::string launch_id;                          // see choose_launch_id()
  std::optional<std::string> experiment_name;     // replaces wandb.name (rl resume)
  // The TOML's output_dir is the run's, as written (rl resume: a relaunch of an existing run);
  // otherwise a v0.8.0-generation TOML without one gets outputs/<run name>.
  bool output_dir_as_written = false;
  // Real paths (symlinks followed) of the paths the mount check compares, keyed by the
  // absolute normalized path: filled by the glue (resolve_launch_paths) so make_plan stays
  // pure. A path missing here is taken as written.
  std::map<std::string, std::string> real_paths;
  // Where the runtime image comes from when --image is not given; nullptr: the built-in
  // catalog (the glue passes images::Catalog::from_environment).
  const images::Catalog *catalog = nullptr;
  // Which build the stage holds; nullptr: this binary (staging::current()).
  const staging::Identity *stage_identity = nullptr;
  // The `beaker` CLI a recovery controller runs, staged beside the binary (content-addressed):
  // found and hashed by the glue; empty when there is none here (preview says so).
  std::filesystem::path beaker_cli;
  std::string beaker_cli_sha256;
  // What the plan may read of this machine to check it (read only): who claims its checkpoint
  // directory, whether the dataset files its environments name exist. Every front end that
  // launches passes one, so all of them refuse alike (docs/launch.md "Checks"); nullptr checks
  // nothing there (a sweep's base, unit tests of the rendering).
  fs::FileSystem *files = nullptr;
  // With --cluster auto: the clusters as gather found them (docs/clusters.md); make_plan ranks
  // them and puts the chosen one in the spec. nullptr: no auto.
  const clusters::Snapshot *clusters = nullptr;
};

// The recovery controller of a multi-node run (docs/recovery.md "The controller"): one small
// CPU-only experiment that runs the staged `primebeaker follow <training experiment>
// --controller`, submitted right after the training experiment.
struct ControllerPlan {
  std::string experiment_name; // "<training name>-recovery"
  std::filesystem::path spec_path;
  // Its experiment and spec; the training experiment's id, known only once it is created, is
  // written as k_training_id_placeholder.
  beaker::Experiment experiment;
  OrderedJson spec;
  std::string token_secret;
  std::string image;                // the catalog's controller image
  std::filesystem::path beaker_cli; // what is staged (empty: none found here)
  std::string beaker_cli_sha256;
  std::filesystem::path beaker_stage; // <scratch>/primebeaker/tools/beaker-<sha16>
};
inline constexpr std::string_view k_training_id_placeholder = "<training experiment id>";

// The glue step for a recovery controller: finds the beaker CLI (PRIMEBEAKER_BEAKER, else PATH, in
// inputs.environment) and sets inputs.beaker_cli and its SHA-256; leaves both empty when there is
// none. Reads the file once (hashing).
void find_beaker_cli(LaunchInputs &inputs);

// The absolute normalized paths make_plan compares against the mount (the mount, the
// container directories, the TOML and its path keys). Pure; stops quietly at the first invalid
// flag or key, which make_plan then reports.
std::vector<std::string> launch_paths(const LaunchOptions &options, const LaunchInputs &inputs);

// The glue step: inputs.real_paths[p] = resolve(p) for every launch_paths() entry.
void resolve_launch_paths(const LaunchOptions &options,
                          LaunchInputs &inputs,
                          const PathResolver &resolve = resolve_real_path);

// PRIMEBEAKER_LAUNCH_ID from `environment` when set (it must be 1-64 of [A-Za-z0-9_-], else
// pb::Error exit 2), otherwise `random_id` (callers pass 32 random lowercase hex). Pure.
std::string choose_launch_id(const std::map<std::string, std::string> &environment,
                             const std::string &random_id);

// 32 lowercase hex characters from the system's random device (the only non-pure helper).
std::string random_hex_id();

struct LaunchPlan {
  Program program = Program::rl;
  Topology topology = Topology::single_node;
  std::string experiment_name;
  std::string workspace;
  std::string launch_id; // shown in the output for multi-node only
  std::filesystem::path spec_path;
  // What was decided, as values: the experiment and what each of its replicas is told. Code
  // that needs a decision reads these, never the JSON rendered from them.
  beaker::Experiment experiment;
  contract::ReplicaEnv replica;
  OrderedJson spec;          // the Beaker spec (docs/launch.md): beaker::to_json(experiment)
  std::string spec_text;     // the spec file's bytes (JSON, 2-space indent, trailing newline)
  proc::Argv submit_command; // {"beaker", "experiment", "create", "--name", ...}
  OrderedJson wandb_run;     // {run_id, project, entity, name, offline, url}
  bool write_spec = false;
  std::string if_exists = "fail"; // LaunchOptions::if_exists, checked
  // Non-empty when submitting this plan must be refused (no runtime image for the workspace
  // and no --image): the one-line reason. Preview still renders the spec and warns.
  std::string submit_refusal;
  // What the user may want to know but need not act on (how the image was chosen, what Prime-RL
  // defaults the launch took): logged at info level (-v).
  std::vector<std::string> notes;
  // The version of the Prime-RL that reads the TOML, as the image holds it, and the image's
  // name: the card's "Prime-RL v0.8.0 (ghcr.io/...)" line (images/choose.hpp).
  std::string prime_rl;
  std::string image_name;
  // What the shape needs that the launch cannot provide, as card lines (label, text): of the
  // hosts ("hosts": DeepEP across nodes, with the clusters to ask for) and of the image ("image":
  // NIXL built against UCX 1.19 for prefill->decode KV transfer). Never a value that changes the
  // experiment.
  std::vector<std::pair<std::string, std::string>> shape_cautions;
  // Prime-RL's placement: the port its NCCL weight broadcast listens on (weight_broadcast.port).
  std::int64_t weight_broadcast_port = 29501;
  // Keys the TOML leaves to Prime-RL's defaults that the launch also reads: "output_dir =
  // \"outputs\" (Prime-RL's default)"; shown on the card and with -v.
  std::vector<std::string> defaulted;
  // Settings that came from the user's defaults rather than a flag (docs/config.md), as
  // {flag name, origin}, and those left at the built-in default; for the card and -v.
  std::vector<std::pair<std::string, std::string>> from_config;
  std::vector<std::string> built_in;
  // The stage submit makes or checks, and the wrapper in it that the spec runs; both empty with
  // --no-stage (the spec runs `primebeaker` from the image).
  std::filesystem::path stage_dir;
  std::filesystem::path staged_program;
  // Where the run's checkpoints live and who may write them (docs/recovery.md "One run per
  // output dir"), as absolute paths in the container (the mount is at the same path here).
  struct Ownership {
    std::filesystem::path output_dir;     // <working dir>/<output_dir>
    std::filesystem::path checkpoint_dir; // output_dir; v0.9: its run directory
    std::filesystem::path owner_path;     // owner.json, or owner-<run dir>.json (v0.9)
    std::filesystem::path ledger_dir;     // <output_dir>/primebeaker_recovery/ledger/<run key>
    std::filesystem::path index_path;     // this user's launch index entry for checkpoint_dir
    std::filesystem::path mount;          // the shared mount output_dir lives under
    std::string run_id;                   // the W&B run id every start of the run carries
    bool v0_9 = false;
    // The output dir was not in the TOML: the launch gave it (v0.8.0: outputs/<run name>).
    bool defaulted = false;
  };
  Ownership ownership;
  // The recovery policy as the receipt shows it (docs/recovery.md): {max_recoveries,
  // max_restarts_on_errors, beaker: {auto_resume, allowed_task_retries}, follow_recover}.
  OrderedJson recovery;
  // "controller", "terminal", "off" (multi-node) or "beaker" (single-node: autoResume).
  std::string recover_mode;
  std::optional<ControllerPlan> controller;
  // With --set: the TOML the container reads, a copy of --toml with the overrides applied,
  // written beside the spec by submit (the user's file is never touched); and the overrides.
  std::filesystem::path config_copy_path;
  std::string config_copy_text;
  std::vector<std::pair<std::string, std::string>> overrides; // key, value literal
  // With --cluster auto: the ranking, the choice and the snapshot it came from (the card shows
  // them, the receipt records them; docs/clusters.md).
  std::shared_ptr<const clusters::Placement> placement;

  // GPUs the experiment asks for: replicas x GPUs of every task.
  std::int64_t gpus() const;
  bool v0_9() const { return replica.generation == primerl::Generation::v0_9; }

  // The preview object of docs/launch.md (experiment_name, [launch_id], spec_path, spec,
  // submit_command, wandb_run).
  OrderedJson preview_json() const;
  // The submit receipt: experiment_name, [launch_id], experiment_id, experiment_url, spec_path,
  // stdout, wandb_run, staged_program (null with --no-stage).
  OrderedJson receipt_json(const std::string &beaker_stdout) const;
  // {"overrides": {"set": {key: literal}, "config_path": copy}} with --set; nothing without.
  void add_overrides(OrderedJson &out) const;
};

// The whole launch as a value: reads the TOML's launch keys (primerl), validates every flag
// and key (docs/launch.md; errors name the flag or the TOML key with line:column) and
// renders the spec of the topology deployment.type asks for. Pure; throws pb::Error
// (2 for flags, 3 for the TOML).
LaunchPlan make_plan(const LaunchOptions &options, const LaunchInputs &inputs);

// `plan` with a value learned at run time written where the plan holds `placeholder` (every
// string of the spec and of the controller's spec; the spec file's bytes again). For a launch
// planned before something it names exists (`run launch`'s service experiment). Pure.
LaunchPlan with_value(LaunchPlan plan, std::string_view placeholder, const std::string &value);
// Every occurrence of `placeholder` in the strings of `json` replaced by `value`.
OrderedJson with_value(OrderedJson json, std::string_view placeholder, const std::string &value);

// The launch card (docs/launch.md "The launch card"): a short human summary of what the plan
// will hold and run — nodes and each GPU's role (trainer ranks, inference workers, tp/dp), the
// processes and ports of each replica, image, staged program, output dir and resume step, W&B
// run, registry, recovery budget and GPU-hours per hour of run time. Text ending in a newline;
// read from the plan and the replica contract its spec carries. Pure.
std::string launch_card(const LaunchPlan &plan);

struct LaunchEffects {
  fs::FileSystem &files;
  beaker::Client &beaker;
  staging::Stager &stager;
};

// preview: writes the spec only when plan.write_spec, returns preview_json(). Never runs
// beaker.
OrderedJson execute_preview(const LaunchPlan &plan, LaunchEffects &effects);

// submit: refuses plan.submit_refusal (pb::Error exit 2, nothing written or run), stages the
// binary (plan.stage_dir), writes the spec atomically (parents created), then runs `beaker
// experiment create`; returns the receipt. beaker failing or missing throws pb::Error exit 4 with
// its stderr.
OrderedJson execute_submit(const LaunchPlan &plan, LaunchEffects &effects);

// What a launch read from this machine (docs/launch.md "The pipeline"): `inputs` points into
// the TOML, catalog and filesystem held here.
struct Gathered {
  std::shared_ptr<const toml::Document> document;
  std::shared_ptr<const images::Catalog> catalog;
  std::shared_ptr<fs::FileSystem> files;
  LaunchInputs inputs;
  std::shared_ptr<const clusters::Snapshot> clusters; // --cluster auto only
};
// Step one of every launch: reads the TOML named by options.toml, snapshots the environment and
// cwd, picks the launch id, reads the image catalog, resolves the real paths, finds and hashes
// the beaker CLI when a recovery controller may stage it, and gives the plan this machine's
// filesystem to check against. Throws pb::Error for a missing or unreadable TOML.
Gathered gather(Program program, const LaunchOptions &options);

// Before a submit, the one question every launching command asks: shows `card` on a terminal
// (stderr) and, unless `yes` or stdin is no terminal, asks `question` [y/N]. Only y or yes (any
// case) goes on; anything else refuses with pb::Error exit 1 saying nothing was done.
void confirm_submit(const std::string &card, const std::string &question, bool yes);

// gather() then make_plan(): what `sft|rl preview|submit` run (and tests).
LaunchPlan plan_from_options(Program program, const LaunchOptions &options);

} // namespace pb::launch
