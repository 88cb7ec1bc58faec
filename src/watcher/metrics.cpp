// SPDX-License-Identifier: MIT
#include "metrics.hpp"

#include <primebeaker/core/error.hpp>
#include <primebeaker/registry/http.hpp>

#include <algorithm>
#include <cmath>
#include <map>
#include <set>

namespace pb::watcher::detail {
namespace {

using nlohmann::json;

struct ChartSpec {
  const char *id;
  const char *title;
  const char *stage;
  const char *format;
  std::vector<std::string> metrics; // aliases, tried in order; the first is the requested one
};

const std::vector<ChartSpec> &chart_specs() {
  static const std::vector<ChartSpec> specs = {
      {"sft_validation_loss", "SFT validation loss", "sft", "number", {"val/loss"}},
      {"eval_accuracy",
       "Eval accuracy",
       "rl",
       "percent",
       // Prime-RL logs the series under eval/; the requested val/ spelling is tried first.
       {"val/jtc-tool-label-terminal-eval/all/metrics/correct_final_label/mean",
        "eval/jtc-tool-label-terminal-eval/all/metrics/correct_final_label/mean"}},
  };
  return specs;
}

std::optional<double> finite_number(const json &row, const std::string &key) {
  const auto it = row.find(key);
  if (it == row.end() || !it->is_number()) {
    return std::nullopt; // booleans and strings are not numbers here
  }
  const double value = it->get<double>();
  return std::isfinite(value) ? std::optional<double>(value) : std::nullopt;
}

using Series = std::vector<std::pair<double, double>>;

Series extract(const std::vector<json> &rows, const std::string &metric) {
  Series points;
  for (const auto &row : rows) {
    auto step = finite_number(row, "step");
    if (!step) {
      step = finite_number(row, "_step");
    }
    const auto value = finite_number(row, metric);
    if (step && value) {
      points.emplace_back(*step, *value);
    }
  }
  return points;
}

OrderedJson aggregate(const std::vector<std::pair<std::string, Series>> &series) {
  // A restarted attempt can log a step twice: its last value wins. Attempts then merge per
  // step into a mean with a min-max band.
  std::map<double, std::map<std::string, double>> buckets;
  for (const auto &[attempt, points] : series) {
    for (const auto &[step, value] : points) {
      buckets[step][attempt] = value;
    }
  }
  OrderedJson points = OrderedJson::array();
  for (const auto &[step, values] : buckets) {
    double sum = 0, low = INFINITY, high = -INFINITY;
    OrderedJson attempts = OrderedJson::array();
    for (const auto &[attempt, value] : values) {
      sum += value;
      low = std::min(low, value);
      high = std::max(high, value);
      attempts.push_back(attempt);
    }
    OrderedJson point = OrderedJson::object();
    if (step == std::floor(step) && std::fabs(step) < 9e15) {
      point["step"] = static_cast<std::int64_t>(step);
    } else {
      point["step"] = step;
    }
    point["value"] = sum / static_cast<double>(values.size());
    point["min"] = low;
    point["max"] = high;
    point["samples"] = values.size();
    point["attempts"] = attempts;
    points.push_back(std::move(point));
  }
  return points;
}

OrderedJson optional_json(const std::optional<std::string> &value) {
  return value ? OrderedJson(*value) : OrderedJson(nullptr);
}

} // namespace

std::vector<Attempt> metric_attempts(Database &db, std::int64_t model_id) {
  std::vector<Attempt> attempts;
  for (const auto &row :
       db.rows("SELECT DISTINCT tr.stage, w.entity, w.project, w.run_id, w.name, w.url "
               "FROM training_runs tr JOIN wandb_runs w ON w.training_run_id = tr.id "
               "WHERE tr.model_id = ? AND w.entity IS NOT NULL AND w.project IS NOT NULL AND "
               "w.run_id IS NOT NULL ORDER BY CASE tr.stage WHEN 'rl' THEN 0 ELSE 1 END, "
               "w.entity, w.project, w.run_id",
               {model_id})) {
    Attempt attempt;
    attempt.stage = row["stage"].get<std::string>();
    attempt.entity = row["entity"].get<std::string>();
    attempt.project = row["project"].get<std::string>();
    attempt.run_id = row["run_id"].get<std::string>();
    if (row["name"].is_string()) {
      attempt.name = row["name"].get<std::string>();
    }
    if (row["url"].is_string()) {
      attempt.url = row["url"].get<std::string>();
    }
    attempts.push_back(std::move(attempt));
  }
  return attempts;
}

GraphqlHistorySource::GraphqlHistorySource(std::string base_url,
                                           std::string api_key,
                                           std::chrono::milliseconds timeout)
    : m_base_url(std::move(base_url)), m_api_key(std::move(api_key)), m_timeout(timeout) {
  while (!m_base_url.empty() && m_base_url.back() == '/') {
    m_base_url.pop_back();
  }
}

json GraphqlHistorySource::query(const std::string &graphql, const json &variables) {
  registry::HttpRequest request;
  request.method = "POST";
  request.url = m_base_url + "/graphql";
  request.headers = {"Content-Type: application/json", "Accept: application/json"};
  request.body = json{{"query", graphql}, {"variables", variables}}.dump();
  request.basic_auth = "api:" + m_api_key;
  request.timeout = m_timeout;
  request.use_proxy = true;
  request.max_body = 64 * 1024 * 1024;
  const auto response = registry::http_request(request, "W&B metrics");
  if (!response.error.empty()) {
    throw failure("W&B request failed: " + response.error);
  }
  if (response.status != 200) {
    throw failure("W&B returned HTTP " + std::to_string(response.status) + ": " +
                  response.body.substr(0, 200));
  }
  auto body = json::parse(response.body, nullptr, false);
  if (!body.is_object()) {
    throw failure("W&B returned a response that is not JSON");
  }
  if (body.contains("errors") && body["errors"].is_array() && !body["errors"].empty()) {
    const auto &first = body["errors"][0];
    throw failure("W&B GraphQL error: " + (first.contains("message") && first["message"].is_string()
                                               ? first["message"].get<std::string>()
                                               : first.dump()));
  }
  const json *run = nullptr;
  if (body.contains("data") && body["data"].is_object() && body["data"].contains("project") &&
      body["data"]["project"].is_object() && body["data"]["project"].contains("run")) {
    run = &body["data"]["project"]["run"];
  }
  if (run == nullptr || !run->is_object()) {
    throw failure("W&B run not found: " + variables["entity"].get<std::string>() + "/" +
                  variables["project"].get<std::string>() + "/" +
                  variables["name"].get<std::string>());
  }
  return *run;
}

std::optional<std::string> GraphqlHistorySource::run_state(const Attempt &attempt) {
  const json run =
      query("query RunState($entity: String!, $project: String!, $name: String!) "
            "{ project(name: $project, entityName: $entity) { run(name: $name) { state } } }",
            {{"entity", attempt.entity}, {"project", attempt.project}, {"name", attempt.run_id}});
  if (run.contains("state") && run["state"].is_string()) {
    return run["state"].get<std::string>();
  }
  return std::nullopt;
}

std::vector<json> GraphqlHistorySource::history(const Attempt &attempt,
                                                const std::vector<std::string> &keys,
                                                const std::string &x_axis) {
  json spec_keys = json::array({x_axis});
  for (const auto &key : keys) {
    spec_keys.push_back(key);
  }
  const json spec = {{"keys", spec_keys}, {"samples", 10000}};
  const json run = query("query RunHistory($entity: String!, $project: String!, $name: String!, "
                         "$specs: [JSONString!]!) { project(name: $project, entityName: $entity) "
                         "{ run(name: $name) { sampledHistory(specs: $specs) } } }",
                         {{"entity", attempt.entity},
                          {"project", attempt.project},
                          {"name", attempt.run_id},
                          {"specs", json::array({spec.dump()})}});
  std::vector<json> rows;
  const auto it = run.find("sampledHistory");
  if (it == run.end() || !it->is_array()) {
    throw failure("W&B answered without sampledHistory");
  }
  for (const auto &group : *it) {
    if (!group.is_array()) {
      continue;
    }
    for (const auto &row : group) {
      if (row.is_object()) {
        rows.push_back(row);
      }
    }
  }
  return rows;
}

OrderedJson fetch_charts(const std::vector<Attempt> &attempts, HistorySource &source) {
  std::map<std::string, std::vector<std::pair<std::string, Series>>> chart_series;
  std::map<std::string, std::set<std::string>> metrics_used;
  OrderedJson sources = OrderedJson::array();
  for (const auto &attempt : attempts) {
    OrderedJson record = OrderedJson::object();
    record["stage"] = attempt.stage;
    record["entity"] = attempt.entity;
    record["project"] = attempt.project;
    record["run_id"] = attempt.run_id;
    record["name"] = optional_json(attempt.name);
    record["url"] = optional_json(attempt.url);
    record["path"] = attempt.path();
    record["state"] = nullptr;
    record["metrics"] = OrderedJson::array();
    record["error"] = nullptr;
    try {
      record["state"] = optional_json(source.run_state(attempt));
      for (const auto &spec : chart_specs()) {
        if (attempt.stage != spec.stage) {
          continue;
        }
        // Aliases are asked one at a time: sampled history intersects requested keys, so a
        // missing val/ key would otherwise hide the eval/ series that exists.
        for (const auto &metric : spec.metrics) {
          std::vector<json> rows;
          try {
            rows = source.history(attempt, {metric}, "step");
          } catch (const Error &) {
            rows = source.history(attempt, {metric}, "_step"); // older runs: internal step only
          }
          Series points = extract(rows, metric);
          if (!points.empty()) {
            chart_series[spec.id].emplace_back(attempt.path(), std::move(points));
            metrics_used[spec.id].insert(metric);
            record["metrics"].push_back(spec.id);
            break;
          }
        }
      }
    } catch (const std::exception &error) {
      std::string message = error.what();
      if (message.size() > 240) {
        message.resize(240);
      }
      record["error"] = "WandbError: " + message;
    }
    sources.push_back(std::move(record));
  }
  OrderedJson charts = OrderedJson::array();
  for (const auto &spec : chart_specs()) {
    const auto &series = chart_series[spec.id];
    OrderedJson chart = OrderedJson::object();
    chart["id"] = spec.id;
    chart["title"] = spec.title;
    chart["stage"] = spec.stage;
    chart["format"] = spec.format;
    chart["requested_metric"] = spec.metrics.front();
    chart["metrics_used"] = metrics_used[spec.id];
    chart["attempt_count"] = series.size();
    chart["source_count"] = std::count_if(
        attempts.begin(), attempts.end(), [&](const Attempt &a) { return a.stage == spec.stage; });
    chart["points"] = aggregate(series);
    charts.push_back(std::move(chart));
  }
  OrderedJson out = OrderedJson::object();
  out["fetched_at"] = utc_now_iso();
  out["sources"] = sources;
  out["charts"] = charts;
  return out;
}

} // namespace pb::watcher::detail
