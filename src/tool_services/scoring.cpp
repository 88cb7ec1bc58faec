// SPDX-License-Identifier: MIT
// Scoring through the judge and reward-model services (docs/tool-services.md "Scoring with
// services"). The rules live in environments/scoring.cpp; this file only makes the call.
#include <primebeaker/core/error.hpp>
#include <primebeaker/core/json.hpp>
#include <primebeaker/core/sha2.hpp>
#include <primebeaker/environments/python.hpp>
#include <primebeaker/environments/random.hpp>
#include <primebeaker/tool_services/clients.hpp>
#include <primebeaker/tool_services/scoring.hpp>

#include <fmt/format.h>

#include <cmath>
#include <filesystem>

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

bool scores_with_services(const Environment &environment) {
  switch (environment.behaviour) {
  case Behaviour::reward_model:
  case Behaviour::rubrichub_judge:
  case Behaviour::search_agent_judge:
  case Behaviour::search_visit_agent_judge:
    return true;
  default:
    return false;
  }
}

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

namespace {

using J = OrderedJson;

const J &field(const J &object, const char *key) {
  static const J null_value;
  return object.is_object() && object.contains(key) ? object.at(key) : null_value;
}

std::string non_blank_string(const J &value) {
  return value.is_string() && !environments::py::strip(value.get<std::string>()).empty()
             ? environments::py::strip(value.get<std::string>())
             : std::string();
}

// Letters, digits and "._-" stay; any other character of a file name becomes "_".
std::string safe_name(std::string_view text) {
  std::string out;
  for (size_t i = 0; i < text.size();) {
    const auto c = static_cast<unsigned char>(text[i]);
    size_t length = 1;
    if (c >= 0xF0) {
      length = 4;
    } else if (c >= 0xE0) {
      length = 3;
    } else if (c >= 0xC0) {
      length = 2;
    }
    if (std::isalnum(c) || c == '.' || c == '_' || c == '-') {
      out += static_cast<char>(c);
    } else {
      out += '_';
    }
    i += std::min(length, text.size() - i);
  }
  return out;
}

struct Shadow {
  const Environment &environment;
  const J &args;
  const J &rollout;
  const ServiceScore &primary;
  const ScoringCaller &call;
  fs::FileSystem &files;

  J arg(const char *name) const { return argument(environment, args, name); }

  std::string policy_version() const {
    for (const J *place : {&field(rollout, "state"), &rollout}) {
      const J &salt = field(field(field(*place, "sampling_args"), "extra_body"), "cache_salt");
      if (!salt.is_null()) {
        return environments::py::str(salt);
      }
    }
    const J &salt = field(rollout, "cache_salt");
    return salt.is_null() ? "unknown" : environments::py::str(salt);
  }

  std::string trajectory_id() const {
    const J &state = field(rollout, "state");
    for (const J *value : {&field(state, "trajectory_id"),
                           &field(rollout, "trajectory_id"),
                           &field(state, "example_id"),
                           &field(rollout, "example_id")}) {
      if (truthy(*value)) {
        return environments::py::str(*value);
      }
    }
    return sha2::sha256_hex(environments::py::str(field(primary.request, "output")));
  }

  // The sampled rubrics as the primary judge saw them: {original_index, text, weight}.
  J selected(const std::string &record_id, const J &answer) const {
    const J &rubrics = field(answer, "rubrics");
    const auto picked = environments::py::rubrichub_select(
        arg("rubric_sample_seed").get<long long>(),
        record_id,
        rubrics.size(),
        static_cast<std::uint64_t>(std::max<long long>(1, arg("max_rubrics").get<long long>())));
    J out = J::array();
    for (const auto index : picked) {
      const J &rubric = rubrics.at(index);
      const J &original = field(rubric, "original_index");
      out.push_back({{"original_index", original.is_null() ? J(index) : original},
                     {"text", field(rubric, "text")},
                     {"weight", field(rubric, "weight").get<double>()}});
    }
    return out;
  }

  // The judgments by request index, labels normalised (already validated by the scorer).
  static std::vector<J> by_index(const J &response, size_t count) {
    std::vector<J> out(count);
    for (const auto &judgment : field(response, "judgments")) {
      const auto index = static_cast<size_t>(field(judgment, "rubric_index").get<long long>());
      out.at(index) = {{"label",
                        environments::py::casefold(environments::py::strip(
                            environments::py::str(field(judgment, "label"))))},
                       {"feedback", field(judgment, "feedback")}};
    }
    return out;
  }

  // The audit and the metrics; throws only ServiceError{cancelled}.
  void run(ServiceScore &result) const {
    const J answer = environments::py::loads(field(rollout, "answer").get<std::string>());
    const std::string record_id = environments::py::str(field(answer, "record_id"));
    const std::string policy = policy_version();
    const std::string trajectory = trajectory_id();
    const double rate = arg("shadow_judge_sample_rate").get<double>();
    const long long seed = arg("shadow_judge_sample_seed").get<long long>();
    J audit = {{"status", "not_sampled"},
               {"sample_rate", rate},
               {"sample_seed", seed},
               {"policy_version", policy},
               {"trajectory_id", trajectory}};
    if (!environments::py::shadow_sampled(seed, policy, trajectory, record_id, rate)) {
      result.info_update["jtc_rubrichub_shadow_judge"] = audit;
      result.metrics["shadow_judge_sampled"] = 0.0;
      result.metrics["shadow_judge_error"] = 0.0;
      return;
    }
    const double primary_score = primary.score.metrics.value("jtc_weighted_score", 0.0);
    audit["status"] = "failed";
    audit["source_record_id"] = record_id;
    audit["primary_judge_model_path"] = arg("judge_model_path");
    audit["shadow_judge_model_path"] = non_blank_string(arg("shadow_judge_model_path"));
    audit["shadow_judge_service_model_path"] = arg("shadow_judge_service_model_path");
    audit["primary_rubric_score"] = primary_score;
    try {
      ScoringCall shadow_call;
      shadow_call.service = "judge";
      shadow_call.request_name = "Judge request";
      const std::string url = non_blank_string(arg("shadow_judge_server_url"));
      shadow_call.endpoint = endpoint_from(environment,
                                           args,
                                           url.empty() ? primary_url() : url,
                                           "shadow_judge_timeout",
                                           "shadow_judge_max_retries");
      shadow_call.body = primary.request;
      shadow_call.body["model"] = audit["shadow_judge_model_path"];
      shadow_call.body["model_path"] = audit["shadow_judge_service_model_path"];
      const J response = call(shadow_call);
      // The scorer validates the shadow's judgments exactly as the primary's, and its weighted
      // score is the shadow's rubric score.
      J recorded = rollout;
      recorded["state"]["judge_response"] = response;
      const environments::Score shadow = environments::score_rollout(environment, args, recorded);
      const J rubrics = selected(record_id, answer);
      const auto primary_judgments = by_index(primary.response, rubrics.size());
      const auto shadow_judgments = by_index(response, rubrics.size());
      J pairs = J::array();
      double agreements = 0, weighted_agreements = 0, absolute_weights = 0;
      double primary_passes = 0, shadow_passes = 0, pass_fail = 0, fail_pass = 0;
      for (size_t i = 0; i < rubrics.size(); ++i) {
        const bool primary_pass = primary_judgments[i]["label"] == "pass";
        const bool shadow_pass = shadow_judgments[i]["label"] == "pass";
        const double weight = rubrics[i]["weight"].get<double>();
        const bool agree = primary_pass == shadow_pass;
        agreements += agree ? 1 : 0;
        weighted_agreements += agree ? std::fabs(weight) : 0;
        absolute_weights += std::fabs(weight);
        primary_passes += primary_pass ? 1 : 0;
        shadow_passes += shadow_pass ? 1 : 0;
        pass_fail += primary_pass && !shadow_pass ? 1 : 0;
        fail_pass += !primary_pass && shadow_pass ? 1 : 0;
        pairs.push_back({{"request_index", i},
                         {"original_index", rubrics[i]["original_index"]},
                         {"text", rubrics[i]["text"]},
                         {"weight", weight},
                         {"agreement", agree},
                         {"primary", primary_judgments[i]},
                         {"shadow", shadow_judgments[i]}});
      }
      const auto count = static_cast<double>(rubrics.size());
      const double shadow_score = shadow.metrics.value("jtc_weighted_score", 0.0);
      audit["status"] = "ok";
      audit["shadow_judge_record_id"] = field(response, "record_id");
      audit["shadow_judge_profile"] = field(response, "profile");
      audit["pairs"] = pairs;
      audit["num_judgments"] = rubrics.size();
      audit["label_agreement"] = agreements / count;
      audit["weighted_label_agreement"] = weighted_agreements / absolute_weights;
      audit["primary_pass_rate"] = primary_passes / count;
      audit["shadow_pass_rate"] = shadow_passes / count;
      audit["primary_pass_shadow_fail_rate"] = pass_fail / count;
      audit["primary_fail_shadow_pass_rate"] = fail_pass / count;
      audit["shadow_rubric_score"] = shadow_score;
      audit["shadow_minus_primary_score"] = shadow_score - primary_score;
    } catch (const ServiceError &error) {
      if (error.kind() == FailureKind::cancelled) {
        throw;
      }
      audit["error"] = error.detail();
    } catch (const Error &error) {
      audit["error"] = std::string("RuntimeError: ") + error.what();
    }
    persist(audit);
    result.info_update["jtc_rubrichub_shadow_judge"] = audit;
    result.metrics["shadow_judge_sampled"] = 1.0;
    result.metrics["shadow_judge_error"] = audit["status"] == "failed" ? 1.0 : 0.0;
    if (audit["status"] == "ok") {
      for (const char *key : {"label_agreement",
                              "weighted_label_agreement",
                              "primary_pass_rate",
                              "shadow_pass_rate",
                              "primary_pass_shadow_fail_rate",
                              "primary_fail_shadow_pass_rate",
                              "primary_rubric_score",
                              "shadow_rubric_score",
                              "shadow_minus_primary_score"}) {
        result.metrics[std::string("shadow_judge_") + key] = audit[key];
      }
    }
  }

  std::string primary_url() const { return url_argument(environment, args, "judge_server_url"); }

  // <audit_dir>/policy_version=<policy>/<trajectory>.json, written atomically; a failure is
  // noted in the audit, never raised.
  void persist(J &audit) const {
    const std::string directory = non_blank_string(arg("shadow_judge_audit_dir"));
    if (directory.empty()) {
      return;
    }
    try {
      const std::filesystem::path folder =
          std::filesystem::path(directory) /
          ("policy_version=" + safe_name(audit["policy_version"].get<std::string>()));
      std::filesystem::create_directories(folder);
      files.write_file_atomic(folder /
                                  (safe_name(audit["trajectory_id"].get<std::string>()) + ".json"),
                              to_pretty_json(audit));
    } catch (const std::exception &error) {
      audit["audit_persistence_error"] = std::string("OSError: ") + error.what();
    }
  }
};

} // namespace

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
  const bool classifying = environment.behaviour == Behaviour::reward_model;
  const ScoringCaller call =
      options.caller ? options.caller : ScoringCaller([&options](const ScoringCall &request) {
        Endpoint endpoint = request.endpoint;
        endpoint.initial_backoff = options.initial_backoff;
        endpoint.max_backoff = options.max_backoff;
        return request.service == "classify" ? classify(endpoint, request.body, options.control)
                                             : judge_body(endpoint, request.body, options.control);
      });
  result.response = call({classifying ? "classify" : "judge",
                          service->request_name,
                          service->endpoint,
                          result.request});
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
    if (!non_blank_string(argument(environment, args, "shadow_judge_model_path")).empty()) {
      fs::RealFileSystem real;
      Shadow{environment, args, recorded, result, call, options.files ? *options.files : real}.run(
          result);
    }
    break;
  default:
    result.info_update["judge"] = audit;
    break;
  }
  return result;
}

} // namespace pb::tool_services
