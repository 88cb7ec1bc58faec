// SPDX-License-Identifier: MIT
// Service-backed scoring (docs/tool-services.md "Scoring with services"): reward-model,
// rubrichub-judge and the judge-scored search agents call their service, record the response in
// the rollout's state and score through the environments module's pure scorer; RubricHub's
// optional shadow judge runs a second, observational judgment. The one place every scorer goes
// through: `environments score`, `environments serve` and `environments rollout`.
#pragma once

#include <primebeaker/core/fs.hpp>
#include <primebeaker/core/json.hpp>
#include <primebeaker/environments/catalog.hpp>
#include <primebeaker/environments/scoring.hpp>
#include <primebeaker/tool_services/transport.hpp>

#include <chrono>
#include <functional>
#include <optional>
#include <string>

namespace pb::tool_services {

// Which service an environment's scoring calls, from its (defaults-filled) arguments:
// reward_server_url / reward_timeout / reward_max_retries, judge_server_url / judge_timeout /
// judge_max_retries, and for the search judges a judge URL derived from search_server_url
// (".../search" -> ".../judge"; anything else is pb::Error exit 3). nullopt: no service.
struct ScoringService {
  std::string request_name; // "Judge request" or "Reward model classification"
  std::string state_key;    // where the response is recorded: judge_response, reward_model_response
  Endpoint endpoint;
};
std::optional<ScoringService> scoring_service(const environments::Environment &environment,
                                              const OrderedJson &args);
// Whether scoring this environment may call a service at all (reward-model, rubrichub-judge,
// the two search judges); the others score from the record alone, in microseconds.
bool scores_with_services(const environments::Environment &environment);

// One call a scorer makes, and who makes it: by default the judge / classify clients over HTTP;
// serve routes it through its tool backend (so tests fake it). A caller fails with ServiceError,
// as the clients do.
struct ScoringCall {
  std::string service; // "judge" or "classify"
  std::string request_name;
  Endpoint endpoint;
  OrderedJson body;
};
using ScoringCaller = std::function<OrderedJson(const ScoringCall &)>;

struct ScoringOptions {
  CallControl control;
  std::chrono::milliseconds initial_backoff{500}; // tests shrink the back-off
  std::chrono::milliseconds max_backoff{8000};
  ScoringCaller caller;            // empty: the HTTP clients with `control` and the back-off
  fs::FileSystem *files = nullptr; // shadow-judge audit files; null: the real file system
};

struct ServiceScore {
  environments::Score score;
  OrderedJson request;  // the body sent, or null when no call was needed
  OrderedJson response; // the service's answer, or null
  // What Python PrimeBeaker records under state.info: {"reward_model": {...}} or {"judge": {...}}
  // or {"jtc_rubrichub_judge": {...}} (and "jtc_rubrichub_shadow_judge" when the shadow judge
  // is enabled); {} without a call.
  OrderedJson info_update = OrderedJson::object();
  // Metrics beyond the environment's rewards and metrics: the shadow judge's
  // (shadow_judge_sampled, shadow_judge_error, shadow_judge_<rate> ...).
  OrderedJson metrics = OrderedJson::object();
};

// Scores `rollout` (environments::score_rollout's record shape), calling the service first when
// environments::service_request says the environment sends one. Throws ServiceError when the
// service fails (serve: error.kind "infra"; "cancelled" for a cancelled call) and pb::Error
// (exit 3) when the record or the service's answer breaks a scoring rule. The shadow judge never
// fails the score: its failures are recorded in its audit (a cancelled call still cancels).
// For the shadow judge the record may carry `trajectory_id`, `example_id` and `cache_salt`
// (serve's score fields), or `state.trajectory_id`, `state.example_id` and
// `state.sampling_args.extra_body.cache_salt` (a recorded Verifiers state).
ServiceScore score_with_services(const environments::Environment &environment,
                                 const OrderedJson &args,
                                 const OrderedJson &rollout,
                                 const ScoringOptions &options = {});

} // namespace pb::tool_services
