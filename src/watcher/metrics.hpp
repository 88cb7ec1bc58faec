// SPDX-License-Identifier: MIT
// Live W&B metrics for /api/models/{id}/metrics (docs/watcher.md "Live metrics"): histories
// fetched through W&B's GraphQL API on demand, never stored, merged across attempts by step.
#pragma once

#include "database.hpp"

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace pb::watcher::detail {

struct Attempt {
  std::string stage, entity, project, run_id;
  std::optional<std::string> name, url;
  std::string path() const { return entity + "/" + project + "/" + run_id; }
};

// Distinct W&B links of the checkpoint's training runs with entity, project and run id (rl first).
std::vector<Attempt> metric_attempts(Database &db, std::int64_t model_id);

// History rows of one run as JSON objects ({"step": 3, "val/loss": 0.5, ...}).
struct RunHistory {
  std::optional<std::string> state;
  std::vector<nlohmann::json> rows;
};

// The W&B side, behind an interface so that aggregation is testable without a server.
class HistorySource {
public:
  virtual ~HistorySource() = default;
  // Throws pb::Error (the message becomes the source's error) when the run cannot be read.
  virtual std::optional<std::string> run_state(const Attempt &attempt) = 0;
  virtual std::vector<nlohmann::json> history(const Attempt &attempt,
                                              const std::vector<std::string> &keys,
                                              const std::string &x_axis) = 0;
};

// W&B's public GraphQL API: POST <base>/graphql with basic auth api:<key>.
class GraphqlHistorySource final : public HistorySource {
public:
  GraphqlHistorySource(std::string base_url,
                       std::string api_key,
                       std::chrono::milliseconds timeout);
  std::optional<std::string> run_state(const Attempt &attempt) override;
  std::vector<nlohmann::json> history(const Attempt &attempt,
                                      const std::vector<std::string> &keys,
                                      const std::string &x_axis) override;

private:
  nlohmann::json query(const std::string &graphql, const nlohmann::json &variables);
  std::string m_base_url, m_api_key;
  std::chrono::milliseconds m_timeout;
};

// {"fetched_at", "sources", "charts"}: one failing attempt is reported in its source record
// and never fails the whole answer.
OrderedJson fetch_charts(const std::vector<Attempt> &attempts, HistorySource &source);

} // namespace pb::watcher::detail
