// SPDX-License-Identifier: MIT
// The managed evaluation request (docs/evaluation.md "The request"): one Python module run by
// `primebeaker evaluation worker` next to a LiteRegistry service stack, and the Beaker spec of
// the evaluator task that carries it. Everything here is pure.
#pragma once

#include <primebeaker/beaker/spec.hpp>
#include <primebeaker/core/json.hpp>

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace pb::evaluation {

// The service experiment ID shown in previews, before the services exist.
inline constexpr std::string_view k_service_id_placeholder = "<created-at-launch>";

struct EvaluationRequest {
  std::string module;
  std::vector<std::string> arguments;
  std::string image;
  std::string run_dir;
  OrderedJson services = OrderedJson::object(); // LiteRegistry BaseDeploymentConfig fields
  // Where each services field was written ("file:line:col"), for the launcher's messages.
  std::map<std::string, std::string> service_origins;
  std::map<std::string, std::int64_t> required_services;
  std::string workspace = "ai2/oe-agents";
  std::string evaluation_cluster = "ai2/jupiter";
  std::string priority = "high";
  std::int64_t min_runtime_hours = 0;
  std::string mount_path = "/weka";
  std::string dataset = "oe-adapt-default";
  std::map<std::string, std::string> environment;
  std::map<std::string, std::string> secrets;
  std::optional<std::string> beaker_token_secret = "BEAKER_TOKEN";
  bool keep_services = false;
  double readiness_timeout_seconds = 7200;
  std::string experiment_name = "jtceval";
  std::optional<std::string> budget = "ai2/oe-omai";
  // The primebeaker the evaluator runs: this build staged on the mount (docs/staging.md), set
  // by the command glue; empty: `primebeaker` from the image (--no-stage). Not a JSON field.
  std::string staged_worker;
};

// The evaluator task's command: the worker of this same binary (docs/evaluation.md).
std::vector<std::string> worker_command(const EvaluationRequest &request);

// A request from JSON (request-preview / request-submit): unknown keys and wrong types are
// refused, then validate() runs. `source` names the input in messages. Throws pb::Error (exit 3).
EvaluationRequest request_from_json(const OrderedJson &json, const std::string &source);

// Every constraint of the request (module path, string arguments, run_dir under mount_path,
// positive required services, token secret, priorities, timeouts...). Throws pb::Error (exit 3).
void validate(const EvaluationRequest &request);

// "a.b_c" is a dotted Python module path; "bash -lc eval" is not.
bool is_python_module_path(std::string_view text);

// The services with the scheduler-owned workspace and budget reconciled. Throws pb::Error
// (exit 3) "services.<key> conflicts with evaluation scheduler value".
OrderedJson service_config(const EvaluationRequest &request);

// <services.shared_dir>/.literegistry-coop/<service experiment name>; exit 3 without a shared_dir.
std::string coordination_root(const OrderedJson &service_config, const std::string &service_name);

// <experiment_name>-<last 10 characters of the service experiment name>.
std::string evaluation_experiment_name(const EvaluationRequest &request,
                                       const std::string &service_name);

// The evaluator task (one CPU task running worker_command(request)). Throws pb::Error (exit 3) for
// colliding environment names.
beaker::Experiment evaluator_experiment(const EvaluationRequest &request,
                                        const OrderedJson &service_config,
                                        const std::string &coordination_root,
                                        const std::string &service_experiment_id);
// Its JSON, in Python PrimeBeaker's key order, without a resources block.
OrderedJson evaluator_spec_json(const beaker::Experiment &experiment);

// {service, evaluation_experiment_name, coordination_root, evaluation_spec} from the service
// stack's preview ({experiment_name, config, spec}).
OrderedJson preview_json(const EvaluationRequest &request, const OrderedJson &service_preview);

// The experiment IDs a Beaker create receipt names ("beaker" key if present; experiment_id,
// experimentId or id of each record; then its experiment/experiments), deduplicated.
std::vector<std::string> receipt_experiment_ids(const OrderedJson &receipt);
// The one ID, else pb::Error (exit 4) "Beaker receipt did not contain exactly one experiment ID".
std::string single_experiment_id(const OrderedJson &receipt);

// Python's repr of a float ("7200.0", "0.5", "1e+16").
std::string python_float(double value);

} // namespace pb::evaluation
