// SPDX-License-Identifier: MIT
// The catalog of the 16 bundled environments (16 names, 15 legacy aliases, 13 behaviours),
// name resolution and the parameter tables `environments show` and validation use.
// See docs/environments.md.
#pragma once

#include <primebeaker/core/json.hpp>

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace pb::environments {

// The 13 distinct behaviours (three modules re-export another module's factory).
enum class Behaviour {
  label,
  code_tool_label,
  tool_label,
  articulated_harness,
  podman_terminal,
  terminal_tool_label,
  reward_model,
  multiple_choice_accuracy,
  rubrichub_judge,
  search_agent,
  search_agent_judge,
  search_visit_agent,
  search_visit_agent_judge,
};
std::string_view behaviour_name(Behaviour behaviour);

enum class ParamType {
  string,
  integer,
  number, // integer or float
  boolean,
  string_list, // list of strings
  int_or_none, // integer, or the string "None" (code_output_truncation)
  any,         // any JSON value
};
std::string_view param_type_name(ParamType type);

struct Parameter {
  std::string name;
  ParamType type = ParamType::string;
  OrderedJson default_value; // null: Python None (or required)
  bool required = false;
  bool nullable = false;  // None is accepted (JSON null; TOML has no null)
  std::string constraint; // human text; the checks live in validate.cpp
};

// What a factory does with keyword arguments it does not declare.
enum class UnknownArgs { reject, forward, ignore };

struct RewardTerm {
  RewardTerm(std::string term_name,
             double default_weight,
             std::string parameter,
             std::string text,
             std::string legacy_parameter = {})
      : name(std::move(term_name)), weight(default_weight), weight_parameter(std::move(parameter)),
        meaning(std::move(text)), legacy_weight_parameter(std::move(legacy_parameter)) {}

  std::string name;
  double weight = 1.0;          // the weight, or the default of weight_parameter
  std::string weight_parameter; // the argument that sets the weight; empty: fixed
  std::string meaning;
  std::string legacy_weight_parameter; // an older alias that wins when given (podman)
  // "1.0", or "reward_file_weight (1.0)" for `environments show`.
  std::string weight_text() const;
  // The weight under these (defaults-filled) arguments.
  double weight_for(const OrderedJson &args) const;
};

// Verifiers' max_turns: a fixed number, or budget_parameter + 1 (an explicit max_turns
// argument wins).
struct TurnLimit {
  long long fixed = 1;
  std::string budget_parameter; // e.g. max_tool_calls; empty: `fixed`
};

struct Environment {
  std::string name;   // primary registry name
  std::string module; // module stem in primebeaker.environments
  std::vector<std::string> aliases;
  Behaviour behaviour = Behaviour::label;
  std::string env_class;
  TurnLimit max_turns;
  std::vector<std::string> tools;
  std::vector<RewardTerm> rewards;
  std::vector<std::string> metrics;
  std::vector<std::string> services;
  UnknownArgs unknown_args = UnknownArgs::reject;
  std::vector<Parameter> parameters;
  std::string summary;

  const Parameter *parameter(std::string_view name) const;
  // "2", or "max_tool_calls + 1 (65)" with the budget parameter's default.
  std::string max_turns_text() const;
  // The turn limit under these (defaults-filled) arguments; -1 when there is none.
  long long turn_limit(const OrderedJson &args) const;
  std::string entry_point() const; // primebeaker.environments.<module>:load_environment
};

// All 16 environments, in the order of docs/environments.md.
const std::vector<Environment> &catalog();

// The 31 registry keys (names and aliases) sorted by code point, as `environments list` prints.
std::vector<std::string> registry_keys();

// Library resolution: strip one trailing ".py", map '_' to '-', look up the 31 keys; else accept
// an exact module stem. nullptr when unknown.
const Environment *find_environment(std::string_view name);
// What a user may type for an environment (`environments resolve|show|score`): whatever
// find_environment takes, and the module forms TOMLs and files use: a dotted module path whose
// last component is a stem (`primebeaker.environments.jtc_label_env`, as environment_for_id), a
// file path or stem with ".py" (`primebeaker/environments/jtc_label_env.py`), either followed by
// ":load_environment". nullptr when unknown.
const Environment *lookup_environment(std::string_view typed);
// As lookup_environment, but an unknown name is pb::Error (exit 3) "unknown environment 'X'"
// with the closest name, alias or module (in the form typed) and where to find them all.
const Environment &resolve(std::string_view name);

// The environment a Prime-RL TOML id names: a registry name or stem, a dotted module path whose
// last component is a stem (`primebeaker.environments.jtc_label_env`), optionally followed by
// ":load_environment". nullptr for third-party ids.
const Environment *environment_for_id(std::string_view id);
// The environment a Verifiers v1 taskset id names (Prime-RL v0.9: `env.taskset.id`), resolved
// as Verifiers resolves ids (owner/ and @version stripped, '-' as '_', lowercase) to one of the
// bundled `primebeaker_<name>` modules (docs/environments-runtime.md). nullptr for any other.
const Environment *environment_for_taskset(std::string_view id);

// `environments show --json`: parameters with defaults and constraints, tools, rewards, services.
OrderedJson describe(const Environment &environment);

} // namespace pb::environments
