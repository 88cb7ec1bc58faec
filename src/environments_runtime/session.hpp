// SPDX-License-Identifier: MIT
// One rollout's state in the serve engine, and the multi-turn rules of every family
// (docs/environments-runtime.md "The rollout engine"). Private to environments_runtime.
#pragma once

#include <primebeaker/core/json.hpp>
#include <primebeaker/environments/catalog.hpp>
#include <primebeaker/environments/parsing.hpp>
#include <primebeaker/environments_runtime/tools.hpp>
#include <primebeaker/tool_services/clients.hpp>

#include <atomic>
#include <mutex>
#include <string>
#include <vector>

namespace pb::environments_runtime {

// The catalog arguments with the defaults filled in (describe's `args`).
OrderedJson with_defaults(const environments::Environment &environment, const OrderedJson &args);
// The model-facing tool definitions of an environment with these (full) arguments.
OrderedJson tool_defs(const environments::Environment &environment, const OrderedJson &args);

struct Session {
  Session(std::string id,
          const environments::Environment &environment,
          OrderedJson args,
          OrderedJson row,
          ToolBackend &tools);

  // open: Podman starts its container here; the others only initialise their state.
  void setup();
  // observe: route the newest assistant message and decide whether the episode stops.
  OrderedJson observe(long long turn, const OrderedJson &message);
  // respond: run the observed turn's tool calls; messages, amend_last_tool, final.
  OrderedJson respond(const OrderedJson &request);
  // close: free the container; keep what scoring needs.
  void close();

  // The keys Python mirrors into the Verifiers state (counters, podman_*; no long lists).
  OrderedJson public_state() const;
  // Ends the request in flight soon: sets `cancelled` and the flag of each tool call it runs.
  void cancel();

  const std::string id;
  const environments::Environment &environment;
  const OrderedJson args;
  const OrderedJson row;
  OrderedJson state = OrderedJson::object(); // everything, incl. histories; read by score
  std::mutex mutex;                          // one request at a time
  std::atomic<bool> cancelled{false};
  bool opened = false; // setup ran

private:
  // One service call, cancelled by `flag` (a concurrent tool call's own) or else `cancelled`.
  OrderedJson call_service(const std::string &service,
                           const std::string &url,
                           OrderedJson body,
                           double timeout,
                           long long retries,
                           const std::atomic<bool> *flag = nullptr);
  void check_cancelled() const;
  void bump(const char *counter, long long by = 1);

  // tool-label family (tool-label, articulated-harness, podman-terminal)
  OrderedJson observe_tool_label(const OrderedJson &message);
  OrderedJson respond_tool_label();
  OrderedJson run_tool_label_call(const environments::ToolCall &call,
                                  bool &model_caused,
                                  const std::atomic<bool> *flag = nullptr);
  // The outputs of a batch's advertised calls, in the model's order (null for the others).
  std::vector<OrderedJson> run_tool_label_batch(const std::vector<environments::ToolCall> &calls,
                                                std::vector<char> &model_caused);
  OrderedJson submit(const OrderedJson &arguments);
  void count_terminal_command(const environments::ToolCall &call, const OrderedJson &output);
  std::string final_warning() const;
  // Podman
  void podman_setup();
  void podman_after_response(size_t first_new_entry, bool &final);
  void podman_grade();
  OrderedJson
  podman_execute(const std::string &command, double timeout, const std::string &stdin_text);
  void podman_failure(const std::string &phase, const std::string &detail);
  void podman_close();
  // terminal-tool-label
  OrderedJson observe_terminal(const OrderedJson &message);
  OrderedJson respond_terminal();
  // code-tool-label
  OrderedJson observe_code(long long turn, const OrderedJson &message);
  OrderedJson respond_code();
  // search agents
  OrderedJson observe_search(const OrderedJson &message);
  OrderedJson respond_search(const OrderedJson &request);
  std::string run_search_call(const std::string &name, const OrderedJson &arguments);

  ToolBackend &m_tools;
  std::vector<std::string> m_advertised;
  OrderedJson m_output;        // the judged output (row, row.info, <output> of the prompt)
  OrderedJson m_message;       // the newest observed assistant message
  std::string m_route;         // the newest route
  bool m_overrun = false;      // the observed batch would overrun the budget
  bool m_warning_sent = false; // the final warning was sent
  bool m_sent_tool_message = false;
  bool m_token_warned = false;
  bool m_turn_warned = false;
  tool_services::SubmissionStore m_submissions;
  std::string m_affinity_id; // Podman: a live container
  std::mutex m_flags_mutex;  // the cancel flags of the tool calls running concurrently
  std::vector<std::atomic<bool> *> m_call_flags;
};

} // namespace pb::environments_runtime
