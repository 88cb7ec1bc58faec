// SPDX-License-Identifier: MIT
// Scoring through the judge and reward-model services (docs/tool-services.md "Scoring with
// services"). The rules live in environments/scoring.cpp; this file only makes the call.
#include <primebeaker/core/error.hpp>
#include <primebeaker/tool_services/clients.hpp>
#include <primebeaker/tool_services/scoring.hpp>

#include <fmt/format.h>

#include <cmath>

namespace pb::tool_services {
namespace {

using environments::Behaviour;
using environments::Environment;

// The argument as given, else the catalog default (null for a required one).
OrderedJson argument(const Environment &environment, const OrderedJson &args, const char *name) {
  if (args.is_object() && args.contains(name) && !args.at(name).is_null()) {
    return args.at(name);
  }
  const environments::Parameter *parameter = environment.parameter(name);
  return parameter != nullptr ? parameter->default_value : OrderedJson();
}

std::string
url_argument(const Environment &environment, const OrderedJson &args, const char *name) {
  const OrderedJson value = argument(environment, args, name);
  if (!value.is_string() || value.get<std::string>().empty()) {
    throw input_error(fmt::format("{}: {} must be a URL", environment.name, name));
  }
  return value.get<std::string>();
}

Endpoint endpoint_from(const Environment &environment,
                       const OrderedJson &args,
                       std::string url,
                       const char *timeout_name,
                       const char *retries_name) {
  Endpoint endpoint;
  endpoint.url = std::move(url);
  const OrderedJson timeout = argument(environment, args, timeout_name);
  if (timeout.is_number() && std::isfinite(timeout.get<double>()) && timeout.get<double>() > 0) {
    endpoint.timeout = std::chrono::milliseconds(
        static_cast<long long>(std::llround(timeout.get<double>() * 1000)));
  }
  const OrderedJson retries = argument(environment, args, retries_name);
  if (retries.is_number_integer()) {
    endpoint.max_retries = static_cast<int>(retries.get<long long>());
  }
  return endpoint;
}

// The search judges: judge_server_url, else the search URL with /search replaced by /judge.
std::string search_judge_url(const Environment &environment, const OrderedJson &args) {
  const OrderedJson given = argument(environment, args, "judge_server_url");
  if (given.is_string() && !given.get<std::string>().empty()) {
    return given.get<std::string>();
  }
  std::string search = url_argument(environment, args, "search_server_url");
  while (!search.empty() && search.back() == '/') {
    search.pop_back();
  }
  constexpr std::string_view suffix = "/search";
  if (search.size() < suffix.size() ||
      search.compare(search.size() - suffix.size(), suffix.size(), suffix) != 0) {
    throw input_error(fmt::format("{}: judge_server_url is not set and search_server_url does not "
                                  "end in /search, so the judge URL cannot be derived",
                                  environment.name));
  }
  return search.substr(0, search.size() - suffix.size()) + "/judge";
}

ScoringService
judge_service(const Environment &environment, const OrderedJson &args, std::string url) {
  return ScoringService{
      "Judge request",
      "judge_response",
      endpoint_from(environment, args, std::move(url), "judge_timeout", "judge_max_retries")};
}

} // namespace

std::optional<ScoringService> scoring_service(const Environment &environment,
                                              const OrderedJson &args) {
  switch (environment.behaviour) {
  case Behaviour::reward_model:
    return ScoringService{"Reward model classification",
                          "reward_model_response",
                          endpoint_from(environment,
                                        args,
                                        url_argument(environment, args, "reward_server_url"),
                                        "reward_timeout",
                                        "reward_max_retries")};
  case Behaviour::rubrichub_judge:
    return judge_service(environment, args, url_argument(environment, args, "judge_server_url"));
  case Behaviour::search_agent_judge:
  case Behaviour::search_visit_agent_judge:
    return judge_service(environment, args, search_judge_url(environment, args));
  default:
    return std::nullopt;
  }
}

ServiceScore score_with_services(const Environment &environment,
                                 const OrderedJson &args,
                                 const OrderedJson &rollout,
                                 const ScoringOptions &options) {
  ServiceScore result;
  result.request = environments::service_request(environment, args, rollout);
  if (result.request.is_null()) {
    result.score = environments::score_rollout(environment, args, rollout);
    return result;
  }
  std::optional<ScoringService> service = scoring_service(environment, args);
  if (!service) {
    throw failure(environment.name + " sends a service request but names no service");
  }
  service->endpoint.initial_backoff = options.initial_backoff;
  service->endpoint.max_backoff = options.max_backoff;
  result.response = environment.behaviour == Behaviour::reward_model
                        ? classify(service->endpoint, result.request, options.control)
                        : judge_body(service->endpoint, result.request, options.control);
  OrderedJson recorded = rollout;
  if (!recorded.contains("state") || !recorded["state"].is_object()) {
    recorded["state"] = OrderedJson::object();
  }
  recorded["state"][service->state_key] = result.response;
  result.score = environments::score_rollout(environment, args, recorded);
  OrderedJson audit = {{"request", result.request}, {"response", result.response}};
  switch (environment.behaviour) {
  case Behaviour::reward_model:
    audit["score"] = result.score.metrics.value("reward_model_score", OrderedJson());
    result.info_update["reward_model"] = audit;
    break;
  case Behaviour::rubrichub_judge:
    audit["reward"] = result.score.reward;
    result.info_update["jtc_rubrichub_judge"] = audit;
    break;
  default:
    result.info_update["judge"] = audit;
    break;
  }
  return result;
}

} // namespace pb::tool_services
