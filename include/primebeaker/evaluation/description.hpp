// SPDX-License-Identifier: MIT
// Evaluation lifecycle YAMLs (docs/evaluation.md "YAML kinds"): the dispatcher and the five
// kinds, each turned into an EvaluationRequest plus the JTC workload its worker reads.
// Loading reads template files (never writes); everything else is pure.
#pragma once

#include <primebeaker/evaluation/request.hpp>
#include <primebeaker/yaml/tree.hpp>

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace pb::evaluation {

enum class Kind : std::uint8_t {
  standard,
  search_agent,
  rejection_sampling,
  workflow,
  rubric_audit
};

// The workflow names handled by primebeaker itself rather than JTC's workflow registry.
bool is_builtin_workflow(std::string_view workflow);

// The registered JTC workflow names known from Python PrimeBeaker's example YAMLs, used when JTC is
// not importable (docs/evaluation.md "Without JTC").
const std::vector<std::string> &fallback_workflow_names();

// A template a description references, and where it was found.
struct TemplateRef {
  std::string requested;                     // as written
  std::string location;                      // "file:line:col" of the value
  std::string pointer;                       // JSON pointer of the value inside the workload
  std::optional<std::filesystem::path> path; // the file found (nullopt: ask JTC's resources)
  std::string content;                       // its bytes, once found
  std::string snapshot;                      // <root>/.jtceval-inputs/templates/<sha256>.json
};

struct LoadOptions {
  std::filesystem::path cwd;
  // --template-dir entries, then PRIMEBEAKER_TEMPLATE_PATH entries, in search order.
  std::vector<std::filesystem::path> template_dirs;
  std::optional<std::string> image;    // --image
  std::optional<std::string> registry; // --registry
  bool force = false;                  // --force (rubric-judge-audit only)
  // Where the evaluation mount (/weka) is on this machine, when not at the same path
  // (--local-mount / PRIMEBEAKER_LOCAL_MOUNT): snapshots and audit receipts are written there.
  std::optional<std::filesystem::path> local_mount;
  // The default of services.shared_dir (the config's shared_dir, docs/config.md); empty: a YAML
  // that does not set it is refused, naming what to set.
  std::string shared_dir;
  // The Weka mount of the evaluator and its bucket (the config's mount_path and dataset).
  std::string mount_path = "/weka";
  std::string dataset = "oe-adapt-default";
  // The launches' scratch_dir: the evaluator's primebeaker is staged under it when it is on
  // mount_path (docs/staging.md). Not read by the loader.
  std::string scratch_dir;
};

struct Description {
  Kind kind = Kind::standard;
  std::string workflow; // the YAML's workflow value ("standard" when absent)
  std::string source;   // the YAML as named on the command line
  std::filesystem::path yaml_path;
  EvaluationRequest request;     // complete except the workload variable
  std::string workload_variable; // JTCEVAL_EVALUATION_JSON, ...
  OrderedJson workload;          // the JTC workload, template values as written
  std::vector<TemplateRef> templates;
  std::string snapshot_root;      // where template snapshots go
  bool force = false;             // rubric-judge-audit: JTCEVAL_RUBRIC_AUDIT_FORCE
  std::string audit_receipt_path; // rubric-judge-audit: outputs.receipt_path
  std::optional<std::filesystem::path> local_mount;

  // `path` (a path under the request's mount_path) as this machine sees it.
  std::filesystem::path local_path(const std::string &path) const;
};

// Loads one YAML: the dispatcher of docs/evaluation.md, strict fields with file:line:col
// messages, the --image/--registry overrides, and local template resolution (YAML directory,
// cwd, the YAML's ancestors, then options.template_dirs; a template found nowhere is left for
// JTC's packaged resources with path == nullopt). Any workflow name that is not built in loads
// as a generic registered workflow; whether JTC knows it is checked later. Throws pb::Error
// (exit 3).
Description load_description(const yaml::YamlDocument &document,
                             const std::filesystem::path &yaml_path,
                             const LoadOptions &options);

// The workload with each found template replaced by its snapshot path: the JSON the worker gets.
OrderedJson workload_with_snapshots(const Description &description, const OrderedJson &workload);

// The request with the workload variable set to `workload` (compact JSON) and validated.
EvaluationRequest finished_request(const Description &description, const OrderedJson &workload);

} // namespace pb::evaluation
