// SPDX-License-Identifier: MIT
// make_plan, part 1: the launch flags (docs/launch.md "Validation order").
#include "paths.hpp"
#include "plan_parts.hpp"

#include <primebeaker/beaker/client.hpp>
#include <primebeaker/core/error.hpp>
#include <primebeaker/core/spelling.hpp>
#include <primebeaker/core/text.hpp>
#include <primebeaker/images/catalog.hpp>
#include <primebeaker/images/choose.hpp>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <tuple>

namespace pb::launch::detail {

namespace {

bool is_env_name(std::string_view name) {
  if (name.empty() || (name.front() >= '0' && name.front() <= '9')) {
    return false;
  }
  return std::all_of(name.begin(), name.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
  });
}

// NAME=VALUE items of --env / --secret: split at the first '=', later duplicates win.
std::map<std::string, std::string> parse_assignments(const std::vector<std::string> &items,
                                                     std::string_view flag,
                                                     std::string_view shape) {
  std::map<std::string, std::string> out;
  for (const auto &item : items) {
    const auto eq = item.find('=');
    if (eq == std::string::npos || eq == 0 || eq + 1 == item.size()) {
      throw usage_error(fmt::format("--{} expects {}, got '{}'", flag, shape, item));
    }
    const std::string name = item.substr(0, eq);
    if (!is_env_name(name)) {
      throw usage_error(fmt::format("--{}: '{}' is not an environment variable name (letters, "
                                    "digits and '_', not starting with a digit)",
                                    flag,
                                    name));
    }
    out[name] = item.substr(eq + 1);
  }
  return out;
}

// NAME=COUNT items of --required-service, with the replica's count limit.
contract::RequiredServices parse_required_services(const std::vector<std::string> &items) {
  contract::RequiredServices out;
  for (const auto &item : items) {
    const auto eq = item.find('=');
    if (eq == std::string::npos || eq == 0 || eq + 1 == item.size()) {
      throw usage_error(fmt::format("--required-service expects NAME=COUNT, got '{}'", item));
    }
    const std::string count_text = item.substr(eq + 1);
    const auto parsed = text::parse_integer(count_text);
    const std::int64_t count = parsed.value_or(0);
    if (!parsed) {
      throw usage_error(fmt::format(
          "--required-service expects NAME=COUNT, got {}='{}'", item.substr(0, eq), count_text));
    }
    if (count < 1) {
      throw usage_error(fmt::format("--required-service counts must be positive, got '{}'", item));
    }
    if (count > contract::k_max_service_count) {
      throw usage_error(fmt::format("--required-service counts must be at most {}, got '{}'",
                                    contract::k_max_service_count,
                                    item));
    }
    out[item.substr(0, eq)] = count;
  }
  return out;
}

bool disables_secret(const std::string &value) {
  return value.empty() || value == "None" || value == "none" || value == "null" ||
         value == "False" || value == "false";
}

std::string require_absolute_flag(const std::string &flag, const std::string &value) {
  if (value.empty() || value.front() != '/') {
    throw usage_error(
        fmt::format("--{} must be an absolute container path, got '{}'", flag, value));
  }
  return normalize_path(value);
}

// The flags that only some topologies use, and which (docs/launch.md "Launch flags"). A given
// flag the chosen topology would ignore is an error naming it, not silence.
void refuse_inapplicable_flags(const LaunchOptions &options, Program program, bool multi) {
  struct Scope {
    const char *flag;
    bool rl_only;
    bool multi_only;
    const char *applies_to;
  };
  static const Scope scopes[] = {
      {"registry", true, false, "RL"},
      {"wandb-entity", true, false, "RL"},
      {"gateway-port", true, true, "multi-node RL"},
      {"gateway-workers", true, true, "multi-node RL"},
      {"required-service", true, true, "multi-node RL"},
      {"rendezvous-timeout-seconds", false, true, "multi-node launches"},
  };
  std::vector<std::string> refused;
  std::string applies_to;
  for (const auto &scope : scopes) {
    const bool applies = (!scope.rl_only || program == Program::rl) && (!scope.multi_only || multi);
    if (!applies && options.was_given(scope.flag)) {
      refused.push_back(fmt::format("--{} (only for {})", scope.flag, scope.applies_to));
    }
  }
  if (refused.empty()) {
    return;
  }
  throw usage_error(fmt::format("{} {} not apply to {} {}: remove {}",
                                fmt::join(refused, ", "),
                                refused.size() == 1 ? "does" : "do",
                                multi ? "multi-node" : "single-node",
                                program == Program::sft ? "SFT" : "RL",
                                refused.size() == 1 ? "it" : "them"));
}

void check_range(const char *flag, std::int64_t value, std::int64_t min, std::int64_t max) {
  if (value < min) {
    throw usage_error(fmt::format("--{} must be {}, got {}",
                                  flag,
                                  min == 1 ? std::string("> 0") : fmt::format(">= {}", min),
                                  value));
  }
  if (value > max) {
    throw usage_error(fmt::format("--{} must be at most {}, got {}", flag, max, value));
  }
}

} // namespace

void check_basic_flags(const LaunchOptions &options, ValidatedFlags &flags) {
  if (options.priority != "normal" && options.priority != "high" && options.priority != "urgent") {
    const std::string meant = text::closest_match(options.priority, {"normal", "high", "urgent"});
    throw usage_error(fmt::format("--priority must be normal, high, or urgent, got '{}'{}",
                                  options.priority,
                                  meant.empty() ? "" : "; did you mean '" + meant + "'?"));
  }
  if (!beaker::is_workspace_name(options.workspace)) {
    throw usage_error(
        fmt::format("--workspace must look like ACCOUNT/NAME, got '{}'", options.workspace));
  }
  if (options.min_runtime_hours < 0) {
    throw usage_error(
        fmt::format("--min-runtime-hours must be >= 0, got {}", options.min_runtime_hours));
  }
  check_range("max-recoveries", options.max_recoveries, 0, contract::k_max_recoveries);
  check_range("max-restarts-on-errors",
              options.max_restarts_on_errors,
              0,
              contract::k_max_restarts_on_errors);
  if (!options.name.empty() && !primerl::is_experiment_name(options.name)) {
    throw usage_error(fmt::format("--name '{}' cannot be a Beaker experiment name: use letters, "
                                  "digits, '.', '_' and '-' (at most 128)",
                                  options.name));
  }
  if (options.dataset.empty()) {
    throw usage_error("--dataset cannot be empty");
  }
  flags.mount = require_absolute_flag("mount-path", options.mount_path);
  flags.working_dir = require_absolute_flag("working-dir", options.working_dir);
  flags.scratch_dir = require_absolute_flag("scratch-dir", options.scratch_dir);
  flags.home_dir = require_absolute_flag("home-dir", options.home_dir);
}

void check_flags(const LaunchOptions &options,
                 Program program,
                 bool multi,
                 const images::ImageChoice &image,
                 ValidatedFlags &flags) {
  refuse_inapplicable_flags(options, program, multi);
  // The image was chosen with the Prime-RL that reads the TOML (images/choose.hpp); here only
  // what a preview shows and a submit refuses when the catalog has none for the workspace.
  flags.image_ref = image.reference;
  if (!image.missing.empty()) {
    if (options.stage) {
      flags.image_ref = k_missing_prime_rl_image;
      flags.submit_refusal = fmt::format(
          "{}: pass --image (`primebeaker images list` shows the cataloged images)", image.missing);
    } else {
      flags.image_ref = k_missing_runtime_image;
      flags.submit_refusal = fmt::format(
          "--no-stage: no {} image is cataloged for workspace '{}', and the Prime-RL images do "
          "not contain primebeaker: build one from images/Dockerfile.runtime and pass --image "
          "beaker://<ID> --prime-rl VERSION (images/README.md, \"The runtime image\"), or drop "
          "--no-stage",
          images::k_runtime_role,
          options.workspace);
    }
  }
  flags.clusters =
      options.clusters.empty() ? std::vector<std::string>{"ai2/holmes"} : options.clusters;
  flags.user_env = parse_assignments(options.env, "env", "NAME=VALUE");
  auto &secrets = flags.secrets;
  secrets = parse_assignments(options.secrets, "secret", "NAME=SECRETNAME");
  if (multi) {
    check_range("rendezvous-timeout-seconds",
                options.rendezvous_timeout_seconds,
                1,
                contract::k_max_rendezvous_timeout_seconds);
  }
  flags.required_services = parse_required_services(options.required_services);
  if (multi && program == Program::rl) {
    if (options.gateway_port < 1 || options.gateway_port > 65535) {
      throw usage_error(
          fmt::format("--gateway-port must be in 1..65535, got {}", options.gateway_port));
    }
    check_range("gateway-workers", options.gateway_workers, 1, contract::k_max_gateway_workers);
  }
  if (program == Program::rl && !options.registry.empty()) {
    // The replica parses REGISTRY in its working directory with its HOME; multi-node replicas
    // also open it natively, which rediss:// cannot be (contract::parse_registry).
    flags.registry = contract::parse_registry(
        options.registry, {flags.working_dir, flags.home_dir}, "--registry", multi);
  }
  for (const auto &[variable, flag, chosen] :
       {std::tuple{"WANDB_API_KEY", "wandb-secret", options.wandb_secret},
        std::tuple{"HF_TOKEN", "hf-secret", options.hf_secret}}) {
    const bool user_secret = secrets.count(variable) > 0;
    if (!chosen) {
      if (!user_secret) {
        secrets[variable] = variable; // the default secret name equals the variable name
      }
    } else if (!disables_secret(*chosen)) {
      if (user_secret) {
        throw usage_error(fmt::format("--secret {}={} and --{}={} both set {}; keep one (or "
                                      "pass --{}='' to use --secret)",
                                      variable,
                                      secrets[variable],
                                      flag,
                                      *chosen,
                                      variable,
                                      flag));
      }
      secrets[variable] = *chosen;
    }
  }
}

std::string recover_mode(const LaunchOptions &options, Program program, bool multi) {
  const std::string &given = options.recover;
  if (!given.empty() && given != "controller" && given != "terminal" && given != "off") {
    throw usage_error(
        fmt::format("--recover must be controller, terminal or off, got '{}'", given));
  }
  if (!multi) {
    return given == "off" ? "off" : "beaker"; // Beaker restarts a single task by itself
  }
  if (program != Program::rl) {
    return "off"; // `rl resume` relaunches multi-node RL only
  }
  if (options.max_recoveries == 0 && options.max_restarts_on_errors == 0) {
    return "off"; // nothing to recover: no controller either
  }
  if (given.empty()) {
    // The controller runs the staged binary; without a stage the user's follower is all there is.
    return options.stage ? "controller" : "terminal";
  }
  return given;
}

OrderedJson recovery_policy(const LaunchOptions &options, Program program, bool multi) {
  const std::string mode = recover_mode(options, program, multi);
  OrderedJson out = OrderedJson::object();
  out["mode"] = mode;
  out["max_recoveries"] = options.max_recoveries;
  out["max_restarts_on_errors"] = options.max_restarts_on_errors;
  OrderedJson beaker = OrderedJson::object();
  beaker["auto_resume"] = auto_resume(options, multi);
  beaker["allowed_task_retries"] = allowed_task_retries(options, multi);
  out["beaker"] = std::move(beaker);
  // Beaker does not restart a replicated task's replicas together (docs/recovery.md): a
  // multi-node run is resubmitted whole, by its controller or by a `follow --recover` the user
  // keeps running; true only for the latter.
  out["follow_recover"] = mode == "terminal";
  out["ledger"] = nullptr; // the plan fills in the run's real path
  return out;
}

bool auto_resume(const LaunchOptions &options, bool multi) {
  return !multi && options.max_recoveries > 0 && options.recover != "off";
}

std::int64_t allowed_task_retries(const LaunchOptions &options, bool multi) {
  return multi || options.recover == "off" ? 0 : options.max_restarts_on_errors;
}

} // namespace pb::launch::detail
