// SPDX-License-Identifier: MIT
// Pure parsers over model messages (docs/environments.md "Tool calls" and "Verdicts"):
// structured and Qwen text tool calls, thinking blocks, final verdicts, answers, pipeline
// stages. Messages are OpenAI-style JSON objects.
#pragma once

#include <primebeaker/core/json.hpp>

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace pb::environments {

struct ToolCall {
  std::string id; // empty when the call had none
  std::string name;
  OrderedJson arguments = OrderedJson::object();
};
OrderedJson to_json(const ToolCall &call);

// message.tool_calls in the OpenAI ({id, type, function: {name, arguments}}) or Verifiers
// ({id, name, arguments}) shape. nullopt when there are none, or when any one call is malformed
// (the whole structured parse is then discarded).
std::optional<std::vector<ToolCall>> parse_structured_calls(const OrderedJson &message);
// Qwen text: JSON-in-tag blocks; if none parse, Qwen3-Coder XML function blocks.
std::vector<ToolCall> parse_qwen_json_calls(std::string_view text);
std::vector<ToolCall> parse_qwen_xml_calls(std::string_view text);
std::vector<ToolCall> parse_qwen_tool_calls(std::string_view text);
// `environments parse-tool-calls`: `input` is a message object (JSON) or plain text; `format`
// is auto|qwen-json|qwen-xml|structured. {"format", "calls", "reasoning", "visible_content"}.
OrderedJson tool_call_report(std::string_view input, std::string_view format);

// The tool-label family: structured calls, else the Qwen text of message.content.
std::vector<ToolCall> extract_tool_calls(const OrderedJson &message);

// Text of a message's content (a string, or the text parts of a content list).
std::string message_text(const OrderedJson &message);
// The reasoning of a message: reasoning_content / reasoning fields, else parse_qwen_thinking.
std::string message_reasoning(const OrderedJson &message);

std::string parse_qwen_thinking(std::string_view text);
std::string strip_qwen_special_blocks(std::string_view text);

struct Verdict {
  std::string feedback;
  std::string label;
};
// Permissive: strip special blocks, take the first JSON value (a fenced block, the whole text,
// then each balanced {...} / [...] span), require exactly {feedback, label} non-blank strings.
std::optional<Verdict> parse_final_verdict(std::string_view text);
// Strict: the stripped text itself is exactly such an object.
std::optional<Verdict> parse_strict_verdict(std::string_view text);

// XML label environments: the inner texts (trimmed) of every <tag>...</tag>, case-insensitive,
// non-greedy, spanning newlines.
std::vector<std::string> find_tag_bodies(std::string_view text, std::string_view tag);
// Exactly one non-empty <feedback> and one non-empty <label>; returns the label.
std::optional<std::string> parse_xml_verdict(std::string_view text);
// code-tool-label: the completion is exactly one <code> tag around a python/py fence.
bool is_code_request(std::string_view text);
std::string extract_code(std::string_view text);

// Search agents: the content ends with a fenced json block holding {"answer": non-empty str}.
std::optional<std::string> parse_final_answer(std::string_view text);
// The last standalone capital letter A-J, or nullopt.
std::optional<char> last_choice_letter(std::string_view text);

// Pipeline stage names of a terminal command: quote-aware, separators | || ; ;; && & ( ) and any
// token made only of |;&(); each stage's name is the basename of its first token. On a quoting
// error, just the first whitespace-separated word.
std::vector<std::string> pipeline_stage_names(std::string_view command);
// POSIX shell split (shlex.split); nullopt on unbalanced quotes.
std::optional<std::vector<std::string>> shell_split(std::string_view command);
// http(s) URLs in text, trailing .,;!? removed.
std::vector<std::string> extract_urls(std::string_view text);

} // namespace pb::environments
