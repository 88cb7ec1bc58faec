// SPDX-License-Identifier: MIT
// The shared launch flag set and its one parser (docs/launch.md "Launch flags").
#include <primebeaker/contract/replica_env.hpp>
#include <primebeaker/core/command_tree.hpp>
#include <primebeaker/core/error.hpp>
#include <primebeaker/core/spelling.hpp>
#include <primebeaker/core/text.hpp>
#include <primebeaker/launch/launch.hpp>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>

namespace pb::launch {

namespace {

// Beaker's longest priority window is far below this; it only keeps the spec's "<N>h" sane.
constexpr std::int64_t k_max_min_runtime_hours = 24 * 365;

enum class Kind { text, optional_text, integer, list, boolean };

struct FlagInfo {
  const char *name;
  Kind kind;
  const char *help;
};

const std::vector<FlagInfo> &flag_table() {
  static const std::vector<FlagInfo> table = {
      {"toml", Kind::text, "Prime-RL training TOML; its deployment.type selects the topology"},
      {"name",
       Kind::text,
       "Beaker experiment name, e.g. to resubmit without a name clash (default: wandb.name)"},
      {"image",
       Kind::text,
       "beaker://<ref> for a Beaker image, else a Docker image (default: the catalog's image "
       "whose Prime-RL reads the TOML, for --workspace; `images default --toml`)"},
      {"prime-rl",
       Kind::text,
       "The Prime-RL version an --image the catalog does not know holds (v0.7.1.dev83, v0.8.0, "
       "v0.8.1.dev67 = v0.9); without --image, only cataloged images holding it [`config set "
       "prime_rl`]"},
      {"image-holds",
       Kind::list,
       "The pieces an --image the catalog does not know holds, for the shapes that need them: "
       "vllm-router, deepep, nixl, nixl-ucx-1.19, llm-d, mooncake [vllm-router,deepep,nixl: what "
       "Prime-RL's published images hold]"},
      {"workspace",
       Kind::text,
       "Beaker workspace (ACCOUNT/NAME) [ai2/oe-agents; `config set workspace`]"},
      {"cluster",
       Kind::list,
       "Beaker cluster; repeat for several; auto: the configured cluster with room now and the "
       "shortest queue (docs/clusters.md) [ai2/holmes; `config set clusters`]"},
      {"require-free",
       Kind::boolean,
       "With --cluster auto: refuse when the run fits on no cluster now, instead of queueing "
       "where the queue is shortest [off]"},
      {"priority", Kind::text, "normal, high or urgent [high; `config set priority`]"},
      {"min-runtime-hours", Kind::integer, "Minimum runtime in hours, >= 0 [0]"},
      {"mount-path",
       Kind::text,
       "Where the Weka dataset is mounted in the container [/weka; `config set mount_path`]"},
      {"dataset", Kind::text, "Weka dataset (bucket) mounted at --mount-path [oe-adapt-default]"},
      {"working-dir", Kind::text, "Directory the container works in [/weka]"},
      {"scratch-dir", Kind::text, "Root for spec files, rendezvous dirs and caches [/weka]"},
      {"home-dir", Kind::text, "HOME in the container [/weka]"},
      {"wandb-secret",
       Kind::optional_text,
       "Beaker secret exposed as WANDB_API_KEY; empty disables [WANDB_API_KEY]"},
      {"hf-secret",
       Kind::optional_text,
       "Beaker secret exposed as HF_TOKEN; empty disables [HF_TOKEN]"},
      {"wandb-run-id", Kind::text, "W&B run id shared by all processes (default: the launch id)"},
      {"env", Kind::list, "NAME=VALUE environment variable; repeat for several"},
      {"secret", Kind::list, "NAME=SECRET: env var NAME from Beaker secret SECRET; repeatable"},
      {"setup-command",
       Kind::optional_text,
       "Shell text run with bash -lc in the container before training"},
      {"budget", Kind::text, "Beaker budget account"},
      {"description", Kind::text, "Experiment description"},
      {"rendezvous-timeout-seconds",
       Kind::integer,
       "Multi-node: timeout of each barrier in seconds, > 0 [1800]"},
      {"registry",
       Kind::text,
       "RL: LiteRegistry URI (redis://host:port, head+redis://..., file:// or sqlite:// path); "
       "required for multi-node RL, whose replicas cannot use rediss:// (no TLS in this build)"},
      {"wandb-entity", Kind::text, "RL: W&B entity when the TOML has none"},
      {"wandb-project",
       Kind::text,
       "W&B project when the TOML's W&B table has none (set in a copy of the TOML)"},
      {"gateway-port", Kind::integer, "Multi-node RL: local tool gateway port, 1-65535 [1212]"},
      {"gateway-workers", Kind::integer, "Multi-node RL: gateway worker processes, > 0 [8]"},
      {"required-service",
       Kind::list,
       "Multi-node RL: NAME=COUNT live LiteRegistry services needed before training; "
       "repeatable"},
      {"max-recoveries",
       Kind::integer,
       "Preemptions recovered automatically (resumed from the newest complete checkpoint), "
       "0-1000; 0 = off [10]"},
      {"max-restarts-on-errors",
       Kind::integer,
       "Restarts after a failure (not a preemption), 0-10 [0]"},
      {"recover",
       Kind::text,
       "Who resubmits a preempted multi-node run: controller (a small experiment on Beaker "
       "that needs nobody), terminal (`follow --recover`, kept running by you) or off "
       "[controller]"},
      {"controller-token-secret",
       Kind::text,
       "Workspace secret holding the Beaker token the recovery controller uses [BEAKER_TOKEN]"},
      {"controller-cluster",
       Kind::list,
       "Cluster of the recovery controller; repeat for several (default: the run's clusters)"},
      {"controller-priority", Kind::text, "Priority of the recovery controller [normal]"},
      {"controller-budget", Kind::text, "Budget of the recovery controller (default: --budget)"},
      {"notify",
       Kind::text,
       "Webhook told of preemptions, resubmissions and the end (docs/notify.md): secret:NAME "
       "(a workspace secret holding the URL) or an http(s) URL; never printed [`config set "
       "notify.webhook`]"},
      {"notify-event",
       Kind::list,
       "An event the webhook is told of; repeatable [preempted, resubmitted, failed, succeeded, "
       "stopped, budget_spent]"},
      {"set",
       Kind::list,
       "KEY=VALUE: set a TOML key in a copy of --toml (written beside the spec; your file is "
       "never changed), VALUE typed as `toml set` types it; repeatable"},
      {"if-exists",
       Kind::text,
       "submit: when the workspace already has an experiment of this name, fail (exit 5) or "
       "adopt it (print its receipt, submit nothing): a CI rerun is then safe [fail]"},
      {"write-spec", Kind::boolean, "preview: also write the spec file (--no-write-spec)"},
      {"stage",
       Kind::boolean,
       "Run this binary staged under <scratch-dir>/primebeaker/bin on the Prime-RL image "
       "[on]; --no-stage runs `primebeaker` from --image (a runtime image)"},
      {"verify-stage",
       Kind::boolean,
       "submit: hash every file of a stage that is already there, not only those changed since "
       "this machine last verified them [off]"},
  };
  return table;
}

std::string kebab(std::string_view name) {
  while (!name.empty() && name.front() == '-') {
    name.remove_prefix(1);
  }
  return text::kebab_case(name);
}

const FlagInfo &find_flag(const std::string &name) {
  for (const auto &info : flag_table()) {
    if (name == info.name) {
      return info;
    }
  }
  throw usage_error(fmt::format("unknown launch setting '{}'", name));
}

// The accepted range of each integer flag, checked as it is parsed (docs/launch.md).
std::pair<std::int64_t, std::int64_t> integer_range(const std::string &flag_name) {
  if (flag_name == "gateway-port") {
    return {1, 65535};
  }
  if (flag_name == "gateway-workers") {
    return {1, contract::k_max_gateway_workers};
  }
  if (flag_name == "rendezvous-timeout-seconds") {
    return {1, contract::k_max_rendezvous_timeout_seconds};
  }
  if (flag_name == "max-recoveries") {
    return {0, contract::k_max_recoveries};
  }
  if (flag_name == "max-restarts-on-errors") {
    return {0, contract::k_max_restarts_on_errors};
  }
  return {0, k_max_min_runtime_hours}; // min-runtime-hours
}

// Whether `piece` is a whole item of list flag `flag_name`: NAME=VALUE for --env/--secret,
// NAME=COUNT for --required-service, any non-empty text for --cluster.
bool is_list_item(const std::string &flag_name, std::string_view piece) {
  const auto trimmed = text::trim(piece);
  if (trimmed.empty()) {
    return false;
  }
  if (flag_name == "cluster" || flag_name == "controller-cluster" || flag_name == "image-holds") {
    return true;
  }
  const auto eq = trimmed.find('=');
  if (eq == std::string_view::npos || eq == 0) {
    return false;
  }
  const auto name = trimmed.substr(0, eq);
  return std::all_of(name.begin(), name.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
           c == ':' || c == '-' || c == '.';
  });
}

// One rule for every list flag: a comma separates items when every comma-separated piece is a
// whole item (`--cluster a,b`, `--env A=x,B=y`); otherwise the value is one item, so
// `--env A=x,y` keeps its comma. A JSON list literal is taken as written.
std::vector<std::string> list_items(const std::string &flag_name,
                                    const std::vector<std::string> &values) {
  std::vector<std::string> items;
  if (flag_name == "set") { // a TOML value may hold commas and brackets: one item each
    return values;
  }
  for (const auto &value : values) {
    const auto trimmed = text::trim(value);
    if (!trimmed.empty() && trimmed.front() == '[') {
      const auto parsed = pb::cli::list_values(flag_name, {value});
      items.insert(items.end(), parsed.begin(), parsed.end());
      continue;
    }
    const auto pieces = text::split(value, ',');
    const bool split = pieces.size() > 1 &&
                       std::all_of(pieces.begin(), pieces.end(), [&](const std::string &piece) {
                         return is_list_item(flag_name, piece);
                       });
    if (!split) {
      items.push_back(value);
      continue;
    }
    for (const auto &piece : pieces) {
      items.emplace_back(text::trim(piece));
    }
  }
  return items;
}

std::int64_t parse_integer(const std::string &flag_name, const std::string &text) {
  const std::string_view trimmed = text::trim(text);
  const auto parsed = text::parse_integer(
      trimmed.size() > 1 && trimmed.front() == '+' ? trimmed.substr(1) : trimmed);
  if (!parsed) {
    throw usage_error(fmt::format("--{} expects a whole number, got '{}'", flag_name, text));
  }
  const std::int64_t value = *parsed;
  const auto [min, max] = integer_range(flag_name);
  if (value < min || value > max) {
    throw usage_error(fmt::format("--{} must be in {}..{}, got {}", flag_name, min, max, value));
  }
  return value;
}

bool parse_boolean(const std::string &flag_name, const std::string &text) {
  if (text == "true" || text == "True" || text == "1") {
    return true;
  }
  if (text == "false" || text == "False" || text == "0") {
    return false;
  }
  throw usage_error(fmt::format("--{} expects true or false, got '{}'", flag_name, text));
}

std::string *text_field(LaunchOptions &o, const std::string &name) {
  if (name == "image")
    return &o.image;
  if (name == "prime-rl")
    return &o.prime_rl;
  if (name == "name")
    return &o.name;
  if (name == "workspace")
    return &o.workspace;
  if (name == "priority")
    return &o.priority;
  if (name == "mount-path")
    return &o.mount_path;
  if (name == "dataset")
    return &o.dataset;
  if (name == "working-dir")
    return &o.working_dir;
  if (name == "scratch-dir")
    return &o.scratch_dir;
  if (name == "home-dir")
    return &o.home_dir;
  if (name == "wandb-run-id")
    return &o.wandb_run_id;
  if (name == "budget")
    return &o.budget;
  if (name == "description")
    return &o.description;
  if (name == "registry")
    return &o.registry;
  if (name == "wandb-entity")
    return &o.wandb_entity;
  if (name == "wandb-project")
    return &o.wandb_project;
  if (name == "recover")
    return &o.recover;
  if (name == "if-exists")
    return &o.if_exists;
  if (name == "controller-token-secret")
    return &o.controller_token_secret;
  if (name == "controller-priority")
    return &o.controller_priority;
  if (name == "controller-budget")
    return &o.controller_budget;
  if (name == "notify")
    return &o.notify;
  return nullptr;
}

} // namespace

bool LaunchOptions::was_given(std::string_view kebab_name) const {
  return given.count(std::string(kebab_name)) > 0;
}

const std::vector<std::string> &launch_flag_names() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> out;
    for (const auto &info : flag_table()) {
      out.emplace_back(info.name);
    }
    return out;
  }();
  return names;
}

void apply_setting(LaunchOptions &options,
                   std::string_view raw_name,
                   const std::vector<std::string> &values) {
  const std::string name = kebab(raw_name);
  const FlagInfo &info = find_flag(name);
  if (info.kind != Kind::list && values.size() != 1) {
    throw usage_error(fmt::format("--{} takes one value, got {}", name, values.size()));
  }
  options.given.insert(name);
  switch (info.kind) {
  case Kind::text:
    if (name == "toml") {
      options.toml = values.front();
    } else {
      *text_field(options, name) = values.front();
    }
    return;
  case Kind::optional_text:
    if (name == "wandb-secret") {
      options.wandb_secret = values.front();
    } else if (name == "hf-secret") {
      options.hf_secret = values.front();
    } else {
      options.setup_command = values.front();
    }
    return;
  case Kind::integer: {
    const auto number = parse_integer(name, values.front());
    if (name == "min-runtime-hours") {
      options.min_runtime_hours = number;
    } else if (name == "rendezvous-timeout-seconds") {
      options.rendezvous_timeout_seconds = number;
    } else if (name == "gateway-port") {
      options.gateway_port = number;
    } else if (name == "max-recoveries") {
      options.max_recoveries = number;
    } else if (name == "max-restarts-on-errors") {
      options.max_restarts_on_errors = number;
    } else {
      options.gateway_workers = number;
    }
    return;
  }
  case Kind::boolean:
    (name == "stage"          ? options.stage
     : name == "verify-stage" ? options.verify_stage
     : name == "require-free" ? options.require_free
                              : options.write_spec) = parse_boolean(name, values.front());
    return;
  case Kind::list: {
    auto items = list_items(name, values);
    auto &target = name == "cluster"              ? options.clusters
                   : name == "image-holds"        ? options.image_holds
                   : name == "controller-cluster" ? options.controller_clusters
                   : name == "env"                ? options.env
                   : name == "secret"             ? options.secrets
                   : name == "set"                ? options.set
                   : name == "notify-event"       ? options.notify_events
                                                  : options.required_services;
    target.insert(target.end(), items.begin(), items.end());
    return;
  }
  }
}

void register_launch_flags(cli::Command &app,
                           LaunchOptions &options,
                           const std::vector<std::string> &only,
                           bool toml_required) {
  for (const auto &info : flag_table()) {
    const std::string name = info.name;
    if (!only.empty() && std::find(only.begin(), only.end(), name) == only.end()) {
      continue;
    }
    if (info.kind == Kind::boolean) {
      const std::string snake = text::snake_case(name);
      const std::string names = pb::cli::flag(name) + ",!--no-" + name + ",!--no_" + snake;
      // `submit` always writes the spec (Beaker reads it from there), so --write-spec could only
      // be a no-op or a contradiction there: refused while parsing, before anything runs
      // (docs/launch.md "Output").
      if (name == "write-spec" && app.name() == "submit") {
        app.add_flag_function(
            names,
            [name](std::int64_t) {
              throw usage_error(fmt::format(
                  "--{0} and --no-{0} apply to preview only: submit always writes the spec file",
                  name));
            },
            "preview only; submit always writes the spec file (refused here)");
        continue;
      }
      app.add_flag_function(
          names,
          [&options, name](std::int64_t count) {
            apply_setting(options, name, {count > 0 ? "true" : "false"});
          },
          info.help);
      continue;
    }
    if (info.kind == Kind::list) {
      app.add_list_option_function(
          pb::cli::flag(name),
          [&options, name](const std::vector<std::string> &values) {
            apply_setting(options, name, values);
          },
          info.help);
      continue;
    }
    auto option = app.add_option_function(
        pb::cli::flag(name),
        [&options, name](const std::string &value) { apply_setting(options, name, {value}); },
        info.help);
    option.take_last();
    if (info.kind == Kind::integer) {
      option.type_name("INT"); // parsed as text by apply_setting, so CLI11 would say TEXT
    }
    if (name == "toml") {
      option.type_name("FILE");
      if (toml_required) {
        option.required();
      }
    }
  }
}

} // namespace pb::launch
