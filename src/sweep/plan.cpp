// SPDX-License-Identifier: MIT
// A sweep's plan: the base planned once for its names, then one launch plan per variant, every
// problem of every variant collected before anything is submitted (sweep.hpp).
#include <primebeaker/core/error.hpp>
#include <primebeaker/core/sha2.hpp>
#include <primebeaker/core/text.hpp>
#include <primebeaker/sweep/sweep.hpp>
#include <primebeaker/toml/value.hpp>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <map>
#include <set>

namespace pb::sweep {
namespace {

bool sets(const Overrides &overrides, const std::string &key) {
  for (const auto &[k, v] : overrides) {
    if (k == key) {
      return true;
    }
  }
  return false;
}

std::string toml_string(const std::string &text) {
  return nlohmann::json(text).dump();
}

// `line` with the "--set KEY=VALUE:" of a --grid's override (the launch module reports an
// override's problems at its argument) replaced by the grid's "GRID:LINE:COL:" of its key.
std::string at_origins(const std::string &line,
                       const Overrides &overrides,
                       const std::vector<std::string> &origins) {
  for (std::size_t j = 0; j < overrides.size() && j < origins.size(); ++j) {
    const std::string argument = "--set " + overrides[j].first + "=" + overrides[j].second + ":";
    if (const auto at = line.find(argument); at != std::string::npos) {
      return line.substr(0, at) + origins[j] + ":" + line.substr(at + argument.size());
    }
  }
  return line;
}

} // namespace

SweepPlan make_sweep_plan(const SweepOptions &options,
                          const std::vector<Overrides> &variants,
                          const launch::LaunchInputs &inputs,
                          const std::vector<std::vector<std::string>> &origins) {
  if (variants.empty()) {
    throw usage_error("a sweep needs --set KEY=V1,V2,... (or --grid FILE)");
  }
  // The base as it is: the name, generation and output dir the variants derive theirs from.
  // Not checked against this machine: only the variants launch.
  launch::LaunchInputs base_inputs = inputs;
  base_inputs.files = nullptr;
  const launch::LaunchPlan base = launch::make_plan(options.base, base_inputs);
  SweepPlan plan;
  plan.base = base.experiment_name;
  plan.name = options.group.empty() ? base.experiment_name + "-sweep" : options.group;
  const bool v0_9 = base.v0_9();
  plan.generation = v0_9 ? "v0.9" : "v0.8.0";
  std::string output_dir = "outputs"; // Prime-RL's default
  if (const toml::Value *given = inputs.document->root().find("output_dir");
      given != nullptr && given->string() != nullptr) {
    output_dir = *given->string();
  }

  std::vector<std::string> problems;
  std::map<std::string, std::string> names;     // name -> variant, for duplicates
  std::map<std::string, std::string> run_homes; // output dir (and run dir) -> variant
  for (std::size_t index = 0; index < variants.size(); ++index) {
    const Overrides &overrides = variants[index];
    Variant variant;
    variant.overrides = overrides;
    variant.name = variant_name(plan.base, overrides);
    launch::LaunchOptions o = options.base;
    o.name = variant.name;
    o.given.insert("name");
    o.given.insert("set");
    for (const auto &[key, literal] : overrides) {
      o.set.push_back(key + "=" + literal);
    }
    // Its own checkpoints and W&B run, unless the variant itself says where.
    if (v0_9) {
      if (!sets(overrides, "run.name")) {
        o.set.push_back("run.name=" + toml_string(variant.name));
      }
    } else {
      if (!sets(overrides, "output_dir")) {
        o.set.push_back("output_dir=" + toml_string(output_dir + "/" + variant_suffix(overrides)));
      }
      if (!sets(overrides, "wandb.name")) {
        o.set.push_back("wandb.name=" + toml_string(variant.name));
      }
    }
    launch::LaunchInputs own = inputs;
    own.launch_id = sha2::sha256_hex(inputs.launch_id + "/" + variant.name).substr(0, 32);
    try {
      variant.plan = launch::make_plan(o, own);
    } catch (const Error &error) {
      const auto located = [&](const std::string &line) {
        return index < origins.size() ? at_origins(line, overrides, origins[index]) : line;
      };
      problems.push_back(fmt::format("variant {}: {}", variant.name, located(error.what())));
      for (const auto &line : error.context()) {
        problems.push_back("  " + located(line));
      }
      continue;
    }
    if (const auto [it, fresh] = names.emplace(variant.plan.experiment_name, variant.name);
        !fresh) {
      problems.push_back(fmt::format("variants {} and {} have the same experiment name {}",
                                     it->second,
                                     variant.name,
                                     variant.plan.experiment_name));
    }
    // v0.9 runs of one output dir are apart when their run directories are.
    const std::string home = variant.plan.ownership.checkpoint_dir.string();
    if (const auto [it, fresh] = run_homes.emplace(home, variant.name); !fresh) {
      problems.push_back(fmt::format("variants {} and {} would share the output dir {}",
                                     it->second,
                                     variant.name,
                                     variant.plan.ownership.checkpoint_dir.string()));
    }
    plan.gpus += variant.plan.gpus();
    plan.variants.push_back(std::move(variant));
  }
  if (!problems.empty()) {
    throw Error(ExitCode::bad_input,
                fmt::format("the sweep {} cannot launch ({} variants; nothing was submitted):",
                            plan.name,
                            variants.size()),
                problems);
  }
  return plan;
}

OrderedJson SweepPlan::preview_json() const {
  OrderedJson out = OrderedJson::object();
  out["sweep"] = name;
  out["base"] = base;
  out["prime_rl_generation"] = generation;
  out["gpus"] = gpus;
  OrderedJson list = OrderedJson::array();
  for (const auto &variant : variants) {
    OrderedJson set = OrderedJson::object();
    for (const auto &[key, literal] : variant.overrides) {
      set[key] = literal;
    }
    OrderedJson each = variant.plan.preview_json();
    each["variant"] = set;
    list.push_back(std::move(each));
  }
  out["variants"] = std::move(list);
  return out;
}

std::string sweep_card(const SweepPlan &plan) {
  std::string out = fmt::format("sweep {}: {} variants of {} (Prime-RL {})\n",
                                plan.name,
                                plan.variants.size(),
                                plan.base,
                                plan.generation);
  for (const auto &variant : plan.variants) {
    std::vector<std::string> set;
    for (const auto &[key, literal] : variant.overrides) {
      set.push_back(key + " = " + literal);
    }
    const std::int64_t gpus = variant.plan.gpus();
    out += fmt::format(
        "  {}  {} GPUs  {}\n", variant.plan.experiment_name, gpus, text::join(set, ", "));
  }
  out += fmt::format("  total: {} GPUs, {} GPU-hours per hour of run time\n", plan.gpus, plan.gpus);
  return out;
}

} // namespace pb::sweep
