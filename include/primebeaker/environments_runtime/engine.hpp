// SPDX-License-Identifier: MIT
// What the Python package asks of the binary (docs/environments-runtime.md): `describe` (the
// shape Verifiers needs) and the serve engine that runs sessions and scores them.
#pragma once

#include <primebeaker/core/json.hpp>
#include <primebeaker/environments_runtime/serve.hpp>

#include <map>
#include <memory>
#include <mutex>
#include <string>

namespace pb::environments_runtime {

// `environments describe NAME --args JSON`: validates the arguments against the catalog (exit 3
// with every problem) and returns kind, max_turns, tool_defs, rewards with numeric weights,
// metrics, stops, cleanups, needs_setup, dataset rules and the arguments with defaults filled.
OrderedJson describe(const std::string &name, const OrderedJson &args);

// The serve engine. Scoring runs the environments module's scorer on the request's rollout;
// multi-turn sessions (open/observe/respond) are refused with a clear message until the rollout
// engine lands (docs/environments-runtime.md, "Status").
class EnvironmentEngine final : public Engine {
public:
  nlohmann::json handle(const std::string &op, const nlohmann::json &request) override;
  void cancel(const std::string &session) override;
  void close_all() override;

private:
  std::mutex m_mutex;
  std::map<std::string, OrderedJson> m_sessions; // session -> recorded state
};

} // namespace pb::environments_runtime
