// SPDX-License-Identifier: MIT
// The evaluation commands as functions of their inputs and effects (docs/evaluation.md): load ->
// one helper call -> preview objects, or -> services, then the evaluator, with rollback.
#pragma once

#include "helper.hpp"

#include <primebeaker/beaker/client.hpp>
#include <primebeaker/core/error.hpp>
#include <primebeaker/evaluation/description.hpp>

#include <optional>
#include <string>
#include <vector>

namespace pb::staging {
class Stager;
}

namespace pb::evaluation {

// One YAML as loaded. A YAML naming a workflow primebeaker does not handle itself loads as a
// generic workflow; if that fails, the error waits until JTC (or the fallback list) has said
// whether the workflow exists at all.
struct Loaded {
  std::string source;
  std::string workflow;
  std::optional<Description> description;
  std::optional<Error> deferred;
};

Loaded load_yaml(const std::string &path_text, const LoadOptions &options);

struct Effects {
  Helper &helper;
  beaker::Client &beaker;
  staging::Stager &stager;
};

// Previews of every YAML with one helper process: one object per YAML.
std::vector<OrderedJson> preview_yamls(const std::vector<Loaded> &loaded, Effects &effects);
// Submits one YAML (or completes a rubric-judge audit without compute): the receipt.
OrderedJson submit_yaml(const Loaded &loaded, Effects &effects);

OrderedJson preview_request(const EvaluationRequest &request, Effects &effects);
OrderedJson submit_request(const EvaluationRequest &request, Effects &effects);

// `evaluation workflows`: the names and where they came from.
HelperAnswer list_workflows(Effects &effects);

} // namespace pb::evaluation
