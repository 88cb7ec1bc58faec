// SPDX-License-Identifier: MIT
// `primebeaker sft|rl sweep` (docs/sweep.md): N variants of one base TOML, each a launch with its
// own --set overrides, name, output dir and W&B run, checked together before any is submitted and
// submitted as one Beaker group with one receipt.
#pragma once

#include <primebeaker/core/json.hpp>
#include <primebeaker/launch/launch.hpp>

#include <string>
#include <utility>
#include <vector>

namespace pb::sweep {

// One variant: its overrides (dotted key, TOML value literal), in axis order.
using Overrides = std::vector<std::pair<std::string, std::string>>;

// An axis "KEY=V1,V2,..." split into its values: commas inside [...], {...} or quotes do not
// split. Exit 2 naming the argument when it is not KEY=VALUES.
std::pair<std::string, std::vector<std::string>> parse_axis(const std::string &argument);

// The variants of the axes: the cross product (the first axis varies slowest), or with `zip` the
// i-th value of every axis together (exit 2 when the axes' lengths differ).
std::vector<Overrides> combine(const std::vector<std::string> &axes, bool zip);

// A --grid file: a list of override sets, YAML (a sequence of mappings KEY: VALUE) or TOML
// (`[[variant]]` tables of dotted KEY = VALUE). Values become TOML literals. Exit 3 at the
// file's line:column on anything else. Pure.
std::vector<Overrides> parse_grid(const std::string &text, const std::string &source_name);

// Where each override of each variant was written: "GRID:LINE:COL" of its key in the --grid file
// (origins[i][j] for variants[i][j]).
struct Grid {
  std::vector<Overrides> variants;
  std::vector<std::vector<std::string>> origins;
};
// parse_grid with the origins.
Grid read_grid(const std::string &text, const std::string &source_name);

// The variant's short, stable name part: "<last key segment>-<value>" per override joined by
// "_", unsafe characters replaced; "lr-1e-5_kl-0.1".
std::string variant_suffix(const Overrides &overrides);
// `base` + "-" + suffix, at most 128 characters (a long one keeps its start and gains a hash of
// the whole, so names stay unique and stable).
std::string variant_name(const std::string &base, const Overrides &overrides);

struct SweepOptions {
  launch::Program program = launch::Program::rl;
  launch::LaunchOptions base;    // the launch flags every variant shares (incl. --set)
  std::vector<std::string> axes; // --set KEY=V1,V2 of the sweep
  std::string grid;              // --grid FILE
  bool zip = false;
  bool dry_run = false;
  bool yes = false;
  std::string group; // the Beaker group's name; default: the base name + "-sweep"
  int parallel = 8;  // at most this many variants submitted (beaker calls) at a time
};

struct Variant {
  std::string name;
  Overrides overrides; // the sweep's own, without the derived name/output keys
  launch::LaunchPlan plan;
};

struct SweepPlan {
  std::string name; // the sweep and its group
  std::string base; // the base experiment name
  std::string generation;
  std::vector<Variant> variants;
  std::int64_t gpus = 0; // of all variants: GPU-hours per hour of run time
  OrderedJson preview_json() const;
};

// Every variant planned; all problems of all variants in one pb::Error (each line names its
// variant, and the --set argument or, with `origins` (a --grid's), the GRID:LINE:COL that made
// the problem), before anything is submitted. Pure.
SweepPlan make_sweep_plan(const SweepOptions &options,
                          const std::vector<Overrides> &variants,
                          const launch::LaunchInputs &inputs,
                          const std::vector<std::vector<std::string>> &origins = {});

// The sweep card: each variant, its overrides and GPUs, and the total. Pure.
std::string sweep_card(const SweepPlan &plan);

// Submits: the group first, then each variant (launch::execute_submit) added to it. The receipt
// lists every variant; when variant k fails, it lists those submitted and those not, and the
// error is rethrown after the receipt is printed by the caller (`partial` is set).
struct SweepResult {
  OrderedJson receipt;
  std::optional<Error> failure;
};
// Submits the variants `parallel` at a time (each: stage check, spec, claim, create, group add);
// the receipt file is rewritten as each create returns, so it always names what was submitted.
SweepResult submit_sweep(const SweepPlan &plan, launch::LaunchEffects &effects, int parallel = 8);

} // namespace pb::sweep
