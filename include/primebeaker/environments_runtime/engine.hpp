// SPDX-License-Identifier: MIT
// What the Python package asks of the binary (docs/environments-runtime.md): `describe` (the
// shape Verifiers needs) and the serve engine that runs multi-turn sessions and scores them.
#pragma once

#include <primebeaker/core/json.hpp>
#include <primebeaker/environments_runtime/serve.hpp>
#include <primebeaker/environments_runtime/tools.hpp>

#include <map>
#include <memory>
#include <mutex>
#include <string>

namespace pb::environments_runtime {

// `environments describe NAME --args JSON`: validates the arguments against the catalog (exit 3
// with every problem) and returns kind, max_turns, tool_defs, rewards with numeric weights,
// metrics, stops, cleanups, needs_setup, dataset rules and the arguments with defaults filled.
OrderedJson describe(const std::string &name, const OrderedJson &args);

struct Session; // one rollout's state (session.cpp)

// The serve engine: open/observe/respond/close run the environment's multi-turn rules per
// session, score runs the environments module's scorer (calling the judge or reward model when
// the environment does). Tool calls go through `tools`.
class EnvironmentEngine final : public Engine {
public:
  explicit EnvironmentEngine(ToolBackend &tools);
  EnvironmentEngine(); // with its own ServiceToolBackend (the tool_services clients)
  ~EnvironmentEngine() override;
  OrderedJson handle(const std::string &op, const OrderedJson &request) override;
  void cancel(const std::string &session) override;
  void close_all() override;

private:
  std::shared_ptr<Session> find(const std::string &session);
  std::shared_ptr<Session> open(const std::string &session, const OrderedJson &request);
  OrderedJson score(const std::string &session, const OrderedJson &request);

  std::unique_ptr<ToolBackend> m_own_tools;
  ToolBackend &m_tools;
  std::mutex m_mutex;
  std::map<std::string, std::shared_ptr<Session>> m_sessions;
};

} // namespace pb::environments_runtime
