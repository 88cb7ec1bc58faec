// SPDX-License-Identifier: MIT
// The stream forms of `environments score` and `environments parse-tool-calls`, shared by the
// commands and the benchmark driver (docs/environments.md "Commands").
#include <primebeaker/core/error.hpp>
#include <primebeaker/environments/parsing.hpp>
#include <primebeaker/environments/python.hpp>
#include <primebeaker/environments/scoring.hpp>

#include <fmt/format.h>

#include <istream>
#include <ostream>

namespace pb::environments {

OrderedJson tool_call_report(std::string_view input, std::string_view format) {
  OrderedJson message;
  auto parsed = py::try_loads(input);
  if (parsed && parsed->is_object()) {
    message = std::move(*parsed);
  } else {
    message = {{"role", "assistant"}, {"content", input}};
  }
  const std::string text = message_text(message);
  std::vector<ToolCall> calls;
  std::string source = "none";
  if (format == "structured" || format == "auto") {
    if (auto structured = parse_structured_calls(message)) {
      calls = std::move(*structured);
      source = "structured";
    }
  }
  if (source == "none" && (format == "qwen-json" || format == "auto")) {
    calls = parse_qwen_json_calls(text);
    source = calls.empty() ? "none" : "qwen-json";
  }
  if (source == "none" && (format == "qwen-xml" || format == "auto")) {
    calls = parse_qwen_xml_calls(text);
    source = calls.empty() ? "none" : "qwen-xml";
  }
  OrderedJson out = OrderedJson::object();
  out["format"] = source;
  OrderedJson list = OrderedJson::array();
  for (const auto &call : calls) {
    list.push_back(to_json(call));
  }
  out["calls"] = std::move(list);
  out["reasoning"] = message_reasoning(message);
  out["visible_content"] = strip_qwen_special_blocks(text);
  return out;
}

size_t score_lines(const Environment &environment,
                   const OrderedJson &args,
                   std::istream &in,
                   std::ostream &out,
                   bool requests,
                   const std::string &source,
                   size_t &total) {
  std::string line;
  std::string buffer;
  size_t index = 0;
  size_t failed = 0;
  while (std::getline(in, line)) {
    if (line.find_first_not_of(" \t\r") == std::string::npos) {
      continue;
    }
    OrderedJson result = OrderedJson::object();
    result["index"] = index;
    try {
      const OrderedJson rollout = py::loads(line);
      if (requests) {
        result["request"] = service_request(environment, args, rollout);
      } else {
        const Score score = score_rollout(environment, args, rollout);
        result["reward"] = score.reward;
        result["metrics"] = score.metrics;
      }
    } catch (const py::JsonError &error) {
      result["error"] =
          fmt::format("{}: line {}: invalid JSON: {}", source, index + 1, error.what());
      ++failed;
    } catch (const Error &error) {
      result["error"] = error.what();
      ++failed;
    }
    buffer += py::dumps(result);
    buffer += '\n';
    if (buffer.size() > (1U << 16)) {
      out << buffer;
      buffer.clear();
    }
    ++index;
  }
  out << buffer;
  out.flush();
  total = index;
  return failed;
}

} // namespace pb::environments
