// SPDX-License-Identifier: MIT
// What the Python package asks of the binary (docs/environments-runtime.md): `describe` (the
// shape Verifiers needs) and the serve engine that runs multi-turn sessions and scores them.
#pragma once

#include <primebeaker/core/json.hpp>
#include <primebeaker/environments/catalog.hpp>
#include <primebeaker/environments_runtime/serve.hpp>
#include <primebeaker/environments_runtime/tools.hpp>

#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

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
  // At once: scoring that calls no service, observe of an open session, close and release of
  // a session that holds no container, when the session's lock is free.
  std::optional<OrderedJson> handle_now(const std::string &op, OrderedJson &request) override;
  // A label score (its scorer reads the record's completion and answer only) from the request
  // line, nothing else of it built; nullopt for every other request.
  std::optional<OrderedJson> score_now(RequestLine &request) override;
  // open, observe, respond, score, close, release.
  const std::vector<std::string> &ops() const override;
  void cancel(const std::string &session) override;
  void close_all() override;

private:
  std::shared_ptr<Session> find(const std::string &session);
  std::shared_ptr<Session> open(const std::string &session, const OrderedJson &request);
  // `request` is consumed; `state` is the open session's (empty without one).
  OrderedJson score(const std::string &session,
                    OrderedJson request,
                    OrderedJson state,
                    const std::atomic<bool> *cancelled);
  // Scores a rollout record through tool_services::score_with_services.
  OrderedJson score_record(const std::string &session,
                           const environments::Environment &environment,
                           const OrderedJson &args,
                           const OrderedJson &rollout,
                           const std::atomic<bool> *cancelled);
  OrderedJson close(const std::string &op, const std::shared_ptr<Session> &session);
  // The arguments with the catalog defaults, computed once per environment and arguments
  // (every request of a run carries the same describe()d arguments).
  std::shared_ptr<const OrderedJson> full_args(const environments::Environment &environment,
                                               const OrderedJson &args);

  std::unique_ptr<ToolBackend> m_own_tools;
  ToolBackend &m_tools;
  std::mutex m_mutex;
  std::map<std::string, std::shared_ptr<Session>> m_sessions;
  struct FullArgs {
    const environments::Environment *environment;
    OrderedJson given;
    std::shared_ptr<const OrderedJson> full;
  };
  std::mutex m_args_mutex;
  std::vector<FullArgs> m_args_cache;
  // The same, by the arguments' text in a request line (score_now): nothing built on a hit.
  struct FullArgsText {
    const environments::Environment *environment;
    std::string text;
    std::shared_ptr<const OrderedJson> full;
  };
  std::vector<FullArgsText> m_args_text_cache;
};

} // namespace pb::environments_runtime
