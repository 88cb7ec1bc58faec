// SPDX-License-Identifier: MIT
// `primebeaker environments rollout`: one rollout against an OpenAI-compatible chat-completions
// endpoint and the tool services, driven through the same engine serve uses, in Verifiers'
// order (docs/environments-runtime.md "environments rollout"). For debugging without Prime-RL.
#include <primebeaker/core/error.hpp>
#include <primebeaker/core/json.hpp>
#include <primebeaker/environments/python.hpp>
#include <primebeaker/environments/render.hpp>
#include <primebeaker/environments_runtime/engine.hpp>
#include <primebeaker/environments_runtime/rollout.hpp>
#include <primebeaker/registry/http.hpp>

#include <fmt/format.h>

#include <optional>
#include <random>

namespace pb::environments_runtime {
namespace {

using J = OrderedJson;

J parse_object(const std::string &text, const char *flag) {
  J value;
  try {
    value = J::parse(text);
  } catch (const nlohmann::json::parse_error &error) {
    throw usage_error(fmt::format("--{} is not JSON: {}", flag, error.what()));
  }
  if (!value.is_object()) {
    throw usage_error(fmt::format("--{} must be a JSON object", flag));
  }
  return value;
}

// The prompt messages: the row's prompt, a string prompt as one user message, or (search
// agents) the template rendered with the row's question.
J prompt_of(const J &row, const J &args) {
  const J prompt = row.value("prompt", J());
  if (prompt.is_array()) {
    return prompt;
  }
  if (prompt.is_string()) {
    return J::array({{{"role", "user"}, {"content", prompt}}});
  }
  if (row.value("question", J()).is_string() && args.contains("template_path")) {
    return environments::render_template(
        environments::load_template(args["template_path"].get<std::string>()),
        {{"question", row["question"]}});
  }
  throw input_error("--row needs a prompt (a list of messages or a string)");
}

struct Answer {
  J message;
  J usage;                // the answer's `usage` object, or null
  bool truncated = false; // finish_reason "length"
};

Answer chat_completion(const RolloutOptions &options, const J &messages, const J &tool_defs) {
  J body = {{"model", options.model}, {"messages", messages}};
  if (!tool_defs.empty()) {
    J tools = J::array();
    for (const auto &def : tool_defs) {
      tools.push_back({{"type", "function"}, {"function", def}});
    }
    body["tools"] = tools;
  }
  std::string url = options.endpoint;
  while (!url.empty() && url.back() == '/') {
    url.pop_back();
  }
  url += "/chat/completions";
  registry::HttpRequest request;
  request.method = "POST";
  request.url = url;
  request.headers = {"Content-Type: application/json"};
  if (const char *key = std::getenv("OPENAI_API_KEY"); key != nullptr && *key != '\0') {
    request.headers.push_back(std::string("Authorization: Bearer ") + key);
  }
  request.body = body.dump(-1, ' ', false, J::error_handler_t::replace);
  request.timeout = std::chrono::milliseconds(static_cast<long long>(options.timeout * 1000));
  request.max_body = 64u << 20;
  const registry::HttpResponse response = registry::http_request(request, "environments rollout");
  if (!response.error.empty()) {
    throw failure(fmt::format("the model endpoint {} did not answer: {}", url, response.error));
  }
  if (response.status != 200) {
    throw failure(fmt::format("the model endpoint {} answered HTTP {}: {}",
                              url,
                              response.status,
                              response.body.substr(0, 300)));
  }
  const J reply = J::parse(response.body, nullptr, false);
  if (!reply.is_object() || !reply.contains("choices") || !reply["choices"].is_array() ||
      reply["choices"].empty() || !reply["choices"][0].value("message", J()).is_object()) {
    throw failure(fmt::format("the model endpoint {} did not return choices[0].message", url));
  }
  Answer answer;
  answer.message = reply["choices"][0]["message"];
  answer.message["role"] = "assistant";
  answer.usage = reply.value("usage", J());
  answer.truncated = reply["choices"][0].value("finish_reason", J()) == "length";
  return answer;
}

// Tokens of one usage object: OpenAI's completion_tokens / prompt_tokens, or the
// output_tokens / input_tokens other servers report.
std::optional<long long> tokens(const J &usage, const char *name, const char *other) {
  for (const char *key : {name, other}) {
    const J value = usage.is_object() ? usage.value(key, J()) : J();
    if (value.is_number()) {
      return static_cast<long long>(value.get<double>());
    }
  }
  return std::nullopt;
}

void merge_state(J &state, const J &reply) {
  if (reply.contains("state") && reply["state"].is_object()) {
    for (const auto &[key, value] : reply["state"].items()) {
      state[key] = value;
    }
  }
}

} // namespace

OrderedJson run_rollout(const RolloutOptions &options, ToolBackend &tools) {
  const J args = parse_object(options.args, "args");
  const J row = parse_object(options.row, "row");
  const J shape = describe(options.name, args);
  EnvironmentEngine engine(tools);
  std::mt19937_64 random{std::random_device{}()};
  const std::string session = fmt::format("rollout-{:016x}", random());
  const J open_fields = {{"env", shape["name"]}, {"args", shape["args"]}, {"row", row}};
  bool opened = false;
  auto request = [&](const std::string &op, J fields) {
    fields["op"] = op;
    fields["session"] = session;
    if (!opened) {
      opened = true;
      fields.update(open_fields);
    }
    return engine.handle(op, fields);
  };

  const J prompt = prompt_of(row, shape["args"]);
  J completion = J::array();
  J state = J::object();
  const bool multi_turn = shape["kind"] == "multi_turn";
  if (multi_turn && shape.value("needs_setup", false)) {
    merge_state(state, request("open", J::object()));
  }
  const long long max_turns = shape.value("max_turns", -1LL);
  const long long token_budget = options.max_total_completion_tokens.value_or(-1);
  long long turns = 0;
  std::optional<long long> prompt_tokens;
  std::optional<long long> completion_tokens;
  bool truncated = false;
  std::string stop_condition;
  for (;;) {
    for (const auto &stop : shape.value("stops", J::array())) {
      if (stop.value("kind", "") == "state") {
        if (truthy(state.value(stop.value("key", ""), J()))) {
          stop_condition = stop["name"];
          break;
        }
      } else if (turns > 0) {
        J last = completion.back();
        for (auto it = completion.rbegin(); it != completion.rend(); ++it) {
          if ((*it).value("role", "") == "assistant") {
            last = *it;
            break;
          }
        }
        const J reply = request("observe", {{"turn", turns}, {"message", last}});
        merge_state(state, reply);
        if (reply.value("stop", false)) {
          stop_condition = stop["name"];
          break;
        }
      }
    }
    if (stop_condition.empty() && max_turns > 0 && turns >= max_turns) {
      stop_condition = "has_reached_max_turns";
    }
    if (stop_condition.empty() && token_budget > 0 &&
        completion_tokens.value_or(0) >= token_budget) {
      stop_condition = "max_total_completion_tokens_reached";
    }
    if (!stop_condition.empty()) {
      break;
    }
    if (turns > 0) {
      const J reply =
          request("respond",
                  {{"turn", turns},
                   {"trajectory_len", turns},
                   {"max_turns", max_turns},
                   {"completion_tokens", completion_tokens ? J(*completion_tokens) : J()},
                   {"max_total_completion_tokens", token_budget > 0 ? J(token_budget) : J()}});
      merge_state(state, reply);
      if (reply.value("amend_last_tool", J()).is_string()) {
        for (auto it = completion.rbegin(); it != completion.rend(); ++it) {
          if ((*it).value("role", "") == "tool") {
            (*it)["content"] =
                (*it).value("content", "") + "\n\n" + reply["amend_last_tool"].get<std::string>();
            break;
          }
        }
      }
      for (const auto &message : reply.value("messages", J::array())) {
        J clean = J::object();
        for (const auto &[key, value] : message.items()) {
          if (!value.is_null()) {
            clean[key] = value;
          }
        }
        completion.push_back(clean);
      }
      if (reply.value("final", false)) {
        stop_condition = "final_env_response";
        break;
      }
    }
    J messages = prompt;
    for (const auto &message : completion) {
      messages.push_back(message);
    }
    Answer answer = chat_completion(options, messages, shape["tool_defs"]);
    if (const auto used = tokens(answer.usage, "completion_tokens", "output_tokens")) {
      completion_tokens = completion_tokens.value_or(0) + *used;
    }
    if (const auto used = tokens(answer.usage, "prompt_tokens", "input_tokens")) {
      prompt_tokens = prompt_tokens.value_or(0) + *used;
    }
    truncated = answer.truncated;
    completion.push_back(std::move(answer.message));
    ++turns;
  }
  if (multi_turn && opened) {
    merge_state(state, engine.handle("close", {{"op", "close"}, {"session", session}}));
  }
  const J scored = engine.handle("score",
                                 {{"op", "score"},
                                  {"session", session},
                                  {"env", shape["name"]},
                                  {"args", shape["args"]},
                                  {"row", row},
                                  {"prompt", prompt},
                                  {"completion", completion},
                                  {"answer", row.value("answer", J())},
                                  {"info", row.value("info", J::object())},
                                  {"is_truncated",
                                   truncated || stop_condition == "has_reached_max_turns" ||
                                       stop_condition == "max_total_completion_tokens_reached"},
                                  {"trajectory_id", session}});
  engine.handle("release", {{"op", "release"}, {"session", session}});
  double reward = 0.0;
  for (const auto &term : shape["rewards"]) {
    const J value = scored["values"].value(term["name"].get<std::string>(), J(0.0));
    reward += term["weight"].get<double>() * (value.is_number() ? value.get<double>() : 0.0);
  }
  J transcript = prompt;
  for (const auto &message : completion) {
    transcript.push_back(message);
  }
  return {{"env", shape["name"]},
          {"turns", turns},
          {"stop_condition", stop_condition},
          {"transcript", transcript},
          {"state", state},
          {"values", scored["values"]},
          {"info_update", scored["info_update"]},
          {"usage",
           {{"prompt_tokens", prompt_tokens ? J(*prompt_tokens) : J()},
            {"completion_tokens", completion_tokens ? J(*completion_tokens) : J()}}},
          {"reward", std::isfinite(reward) ? reward : 0.0}};
}

} // namespace pb::environments_runtime
