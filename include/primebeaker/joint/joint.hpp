// SPDX-License-Identifier: MIT
// `primebeaker run preview|launch --config run.yaml` (docs/run.md): a LiteRegistry
// service stack and the RL experiment that uses it, from one strict primebeaker.run/v1 file.
#pragma once

#include <primebeaker/contract/replica_env.hpp>
#include <primebeaker/core/json.hpp>
#include <primebeaker/launch/launch.hpp>
#include <primebeaker/services/launcher.hpp>
#include <primebeaker/yaml/tree.hpp>

#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace pb::toml {
class Document;
}
namespace pb::beaker {
class Client;
}

namespace pb::joint {

inline constexpr std::string_view k_run_schema = "primebeaker.run/v1";
inline constexpr std::string_view k_managed_id_env = contract::var::managed_service_experiment_id;
inline constexpr std::string_view k_managed_token_env = contract::var::beaker_token;
// The service experiment in the RL plan until `run launch` has created it: a fact of the plan,
// filled in at run time (launch::with_value), shown as it is by `run preview`.
inline constexpr std::string_view k_service_id_fact = "${service_experiment_id}";

// A validated run YAML: the service config for LiteRegistry's base launcher, the RL launch
// options (aliases converted, registry derived; the lifecycle not yet injected) and the lifecycle.
struct RunConfig {
  std::filesystem::path config_path;             // the YAML, absolute
  services::Stack stack = services::Stack::base; // service_stack: (a primebeaker extension)
  services::LauncherConfig service;
  launch::LaunchOptions rl;
  std::string rl_toml_location; // "run.yaml:L:C" of rl.toml, for messages
  bool cleanup_service_on_training_exit = true;
  std::string beaker_token_secret = "BEAKER_TOKEN";
};

// Checks and converts a parsed run YAML (schema, keys, $VAR expansion, rl aliases, rl.toml
// relative to the YAML's directory, registry derivation). `yaml_path` is absolute. Every error
// names the file and line:column (pb::Error exit 3). Pure.
RunConfig load_run_config(const yaml::YamlDocument &document,
                          const std::filesystem::path &yaml_path,
                          const std::map<std::string, std::string> &env);

// rl.registry when the YAML gives none: service.registry verbatim, else head+<head_registry>
// (unless already head+...), else nothing. Pure.
std::optional<std::string> derive_registry(const services::LauncherConfig &service);

// A joint run lives in one workspace under one budget: a service: that names neither takes the
// RL side's, as resolved from the YAML's rl:, then the user's config (docs/run.md), instead of
// LiteRegistry's own defaults. Call after launch::apply_config(config.rl, ...). Pure.
void share_placement_with_services(RunConfig &config);

// The RL options with trainer-owned cleanup injected: PRIMEBEAKER_MANAGED_SERVICE_EXPERIMENT_ID
// and the BEAKER_TOKEN secret when the lifecycle asks for it, after checking that the TOML is
// multi-node and that the YAML does not set either itself. Throws pb::Error exit 3. Pure.
launch::LaunchOptions rl_options_with_lifecycle(const RunConfig &config,
                                                const toml::Document &rl_toml,
                                                const std::string &service_experiment_id);

// The service experiment IDs in a LiteRegistry launch receipt (docs/run.md):
// under "beaker" (or the receipt itself), records' experiment_id / experimentId / id, then
// "experiment" / "experiments"; de-duplicated in order. Pure.
std::vector<std::string> receipt_experiment_ids(const OrderedJson &receipt);

// The joint run as one value: the service config LiteRegistry launches and the RL plan, whose
// spec names the service experiment as k_service_id_fact.
struct RunPlan {
  services::LauncherConfig service;
  launch::LaunchPlan rl;
};

// What run launch talks to.
struct RunEffects {
  services::LiteRegistry &services;
  launch::LaunchEffects &launch;
  beaker::Client &beaker; // rollback: beaker experiment stop
};

// Everything besides the config: the loaded TOML and the launch inputs (environment, cwd,
// launch id) the RL plan is made from.
struct RunInputs {
  const toml::Document *rl_toml = nullptr;
  launch::LaunchInputs launch;
};

// The run's plan, made once: the RL half checked (a flag error from the launch layer becomes
// exit 3 naming the rl: section, whose keys are the flags). Pure.
RunPlan plan_run(const RunConfig &config, const RunInputs &inputs);

// preview: the service preview, then the RL preview with k_service_id_fact; submits nothing
// and writes nothing (unless rl.write_spec). Returns {"service": ..., "rl": ...}.
OrderedJson run_preview(const RunPlan &plan, RunEffects &effects);

// launch: the plan (already checked, so a typo in the RL settings never creates a service
// experiment) is staged, the services launched, the one service experiment ID read from the
// receipt (an error naming what was launched if it cannot) and filled into the RL plan, RL
// submitted, and the service experiment stopped if that fails (both errors reported if the stop
// fails too). Returns {"service_experiment_id", "service", "rl"}.
OrderedJson run_launch(const RunPlan &plan, RunEffects &effects);

} // namespace pb::joint
