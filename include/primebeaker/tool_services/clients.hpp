// SPDX-License-Identifier: MIT
// One client per tool service, as Python PrimeBeaker's environments call them
// (docs/tool-services.md "Clients"): terminal, python, the Podman gateway, fetch, the web terminal,
// judge, reward model, search, and the in-memory submit store. Every HTTP call goes through
// transport.hpp, so every failure is a ServiceError; outputs are the service's JSON objects,
// unchanged, because the renderers (environments/render.hpp) read their fields exactly.
#pragma once

#include <primebeaker/core/json.hpp>
#include <primebeaker/tool_services/transport.hpp>

#include <chrono>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace pb::tool_services {

// ---- terminal: POST {terminal_server_url} ----------------------------------------------------
// Body {"contents", "command", "truncation"}; contents null becomes "". Returns
// {stdout, stderr, success, exit_code, execution_time, truncated, truncated_characters}.
struct TerminalCall {
  std::string command;
  std::optional<std::string> contents; // stdin text
  std::optional<long long> truncation; // null when absent
};
OrderedJson terminal_execute(const Endpoint &endpoint,
                             const TerminalCall &call,
                             const CallControl &control = {});
// The same under another request name for messages (the web terminal's "Asset terminal
// execution").
OrderedJson terminal_request(const Endpoint &endpoint,
                             const TerminalCall &call,
                             const std::string &request_name,
                             const CallControl &control = {});

// ---- python: POST {code_server_url} ----------------------------------------------------------
// Body {"code", "context_payload", "max_runtime", "model": "python"}. Returns {stdout, stderr,
// success, ...}.
struct PythonCall {
  std::string code;
  OrderedJson context_payload; // any JSON, usually the judged output
  long long max_runtime = 2;
};
OrderedJson
python_execute(const Endpoint &endpoint, const PythonCall &call, const CallControl &control = {});

// ---- Podman gateway: POST {base}/affinity/{handshake,podman,close} ---------------------------
struct PodmanConfig {
  Endpoint gateway{"http://127.0.0.1:1212", std::chrono::milliseconds(150000), 3}; // url: base
  std::chrono::milliseconds handshake_timeout{600000};
  std::string service = "podman";
  std::string workdir = "/workspace";
};

// docs/environments.md "Podman": trimmed; no '/' -> docker.io/library/<image>; a first
// component that is localhost or holds '.' or ':' stays; else docker.io/<image>. An empty name
// is a ServiceError (invalid_argument, ValueError).
std::string qualify_image(std::string_view image);

// One container session. Operations are serialised by a mutex, except that cancellation flags
// given in CallControl end a blocked call early. start twice, or execute before start, is a
// ServiceError (invalid_argument, RuntimeError).
class PodmanSession {
public:
  explicit PodmanSession(PodmanConfig config);
  // handshake: {"image", "client_id"?, "service"} with the handshake timeout; affinity_id and
  // container_id must be equal non-empty strings (bad_response otherwise). Returns the id.
  std::string start(const std::string &qualified_image,
                    const std::optional<std::string> &client_id,
                    const CallControl &control = {});
  // {"affinity_id", "command" (non-empty), "stdin", "timeout" (> 0 seconds), "workdir",
  // "service"} with the client timeout. Returns the terminal-style output.
  OrderedJson execute(const std::string &command,
                      const std::string &stdin_text,
                      double timeout_seconds,
                      const CallControl &control = {});
  // {"affinity_id", "service"}; the response must hold "removed": true. The ids are cleared
  // whatever the outcome. Returns the response.
  OrderedJson close(const CallControl &control = {});
  bool started() const;
  std::string affinity_id() const;

private:
  PodmanConfig m_config;
  mutable std::mutex m_mutex;
  std::string m_affinity_id;
};

// ---- fetch ------------------------------------------------------------------------------------
// Gateway mode when `gateway` is set (local_search_server_url): POST {"mode": "url", "url",
// "model_path"?}, the response used as is. Otherwise Jina mode: GET {jina_url}/<url> with an
// API key (jina_api_key, else $JINA_API_KEY; missing is invalid_argument) and the result
// {"success", "mode": "url", "data": {title, content, url}} or {"success": false, ..., "error"}.
struct FetchConfig {
  std::optional<Endpoint> gateway;
  std::optional<std::string> model_path; // local_search_model_path
  Endpoint jina{"https://r.jina.ai", std::chrono::milliseconds(65000), 3};
  std::optional<std::string> jina_api_key;
  OrderedJson jina_parameters = OrderedJson::object(); // extra request headers
  std::optional<size_t> max_content_length;            // Jina content cut (characters)
};
OrderedJson
fetch_url(const FetchConfig &config, const std::string &url, const CallControl &control = {});

// ---- web terminal: client-side composition over terminal + fetch ------------------------------
struct WebAsset {
  std::string id; // asset_<32 hex>
  std::string url;
  std::optional<std::string> content; // cached content; nullopt until fetched or seeded
  OrderedJson to_json() const;        // {"id", "url", "content"} (content null when absent)
};

// The rollout's URL-indexed asset store: one asset per URL.
class WebAssetStore {
public:
  // web_pages {url: markdown | serialised URL-fetch envelope}; envelopes are unwrapped to
  // data.content or data.text, and an envelope without a body is a cache miss.
  void seed(const OrderedJson &web_pages);
  WebAsset &register_url(const std::string &url); // existing asset or a new id
  WebAsset *find(const std::string &id);
  std::optional<std::string> seeded(const std::string &url) const;
  size_t size() const { return m_assets.size(); }

private:
  std::map<std::string, WebAsset> m_assets; // by id
  std::map<std::string, std::string> m_ids; // url -> id
  std::map<std::string, std::string> m_seeded;
};

struct WebTerminalConfig {
  Endpoint terminal;
  FetchConfig fetch;
  std::optional<long long> truncation;
  bool capture_web_assets = false;
};
// `cat <id>... [| pipeline]`, `browse <url> [| pipeline]`, else the plain terminal with
// `contents`. Errors of this layer (missing asset, failed fetch) are terminal-style outputs
// (success false, exit_code 1, stderr); service failures still throw ServiceError.
OrderedJson web_terminal_execute(const WebTerminalConfig &config,
                                 WebAssetStore &store,
                                 const std::string &command,
                                 const std::string &contents,
                                 const CallControl &control = {});

// ---- judge: POST {judge_server_url} -----------------------------------------------------------
// Body {"input", "output", "rubrics" (non-empty list of non-empty strings), "model",
// "model_path"}; a bad rubrics value is invalid_argument (TypeError for a non-list, ValueError
// otherwise). The response must hold a "judgments" list (bad_response otherwise).
struct JudgeCall {
  std::string input;
  std::string output;
  std::vector<std::string> rubrics;
  OrderedJson model; // the judging LLM's path
  std::string model_path = "judge";
};
OrderedJson judge(const Endpoint &endpoint, const JudgeCall &call, const CallControl &control = {});
// The same with a prepared body (environments::service_request builds it for scoring).
OrderedJson
judge_body(const Endpoint &endpoint, const OrderedJson &body, const CallControl &control = {});

// ---- reward model: POST {reward_server_url} ---------------------------------------------------
// Body {"model", "messages": [{role, content, name?}], "add_generation_prompt": false,
// "chat_template_kwargs"?}; every message needs a non-blank role and a content key
// (invalid_argument). The response must have exactly one item in "data" (bad_response).
OrderedJson
classify(const Endpoint &endpoint, const OrderedJson &body, const CallControl &control = {});

// ---- search: POST {search_server_url} ---------------------------------------------------------
// Body {"mode": "query", "query" (non-empty), "num_results", "parameters", "model_path"?}.
struct SearchCall {
  std::string query;
  long long num_results = 10;
  OrderedJson parameters = OrderedJson::object();
  std::optional<std::string> model_path;
};
OrderedJson
search(const Endpoint &endpoint, const SearchCall &call, const CallControl &control = {});

// ---- submit: in memory (server URL memory://submit) ------------------------------------------
class SubmissionStore {
public:
  explicit SubmissionStore(std::vector<std::string> expected_ids = {});
  // rubric_id: string or integer (not boolean), trimmed, non-empty, one of the expected ids
  // when any are expected; feedback and label non-empty after trimming. Errors are
  // invalid_argument ValueErrors. Returns {"success": true, "stdout": <status JSON>,
  // "stderr": "", "exit_code": 0, "data": status}.
  OrderedJson
  submit(const OrderedJson &rubric_id, const OrderedJson &feedback, const OrderedJson &label);
  // {accepted_rubric_id, replaced, completed_rubric_ids, waiting_rubric_ids, all_completed}
  // without accepted_rubric_id/replaced.
  OrderedJson status() const;
  // For state.jtc_submit_submissions: {rubric_id: {"feedback", "label"}} in submission order.
  OrderedJson submissions() const;
  const std::vector<std::string> &expected_ids() const { return m_expected; }

private:
  std::vector<std::string> m_expected;
  OrderedJson m_submissions = OrderedJson::object();
};

} // namespace pb::tool_services
