// SPDX-License-Identifier: MIT
// What the model sees back: tool JSON schemas, tool-result rendering (byte-exact with the
// reference's Python json.dumps formatting), error observations, truncation, chat templates
// (docs/environments.md "Rendering" and "Templates"). Pure functions over JSON values.
#pragma once

#include <primebeaker/core/json.hpp>

#include <string>
#include <string_view>
#include <vector>

namespace pb::environments {

// The six tool specs {name, description, parameters}: python, bash, terminal, webterminal,
// search, submit (our own descriptions). Throws pb::Error for an unknown name.
OrderedJson tool_spec(std::string_view name);
std::vector<std::string> tool_spec_names();
// Required arguments present, not null, and non-blank when strings (the "usable" check).
bool tool_arguments_usable(std::string_view tool, const OrderedJson &arguments);

// Truncation: text longer than `limit` code points keeps limit - len(marker) of them and
// appends the marker naming how many were omitted; limit <= 0 gives "".
std::string truncate_text(std::string_view text, long long limit);

// The 7-key terminal payload as sorted-key JSON.
std::string render_terminal_payload(const OrderedJson &output);
// ```stdout / ```stderr fences (falls back to `output` / `error` when both are empty).
std::string render_fenced(const OrderedJson &output, long long truncation = -1);
// By tool name, as the tool-label family renders results (terminal payload, submit JSON,
// search as fenced JSON, everything else fenced).
std::string
render_tool_result(std::string_view tool, const OrderedJson &output, long long truncation = -1);
// terminal-tool-label: the raw result as sorted-key JSON.
std::string render_raw_result(const OrderedJson &output);
// Search-agent search results as markdown blocks.
std::string render_search_results(const OrderedJson &response);
// Search-agent visit result.
std::string render_visit_result(const OrderedJson &response);

// Error observations (§ "Error observations"): the output objects a failed call produces.
OrderedJson unknown_tool_output(std::string_view tool, const std::vector<std::string> &available);
OrderedJson execution_error_output(std::string_view tool,
                                   std::string_view exception_type,
                                   std::string_view message);
// Whether an exception counts as caused by the model (TypeError, ValueError, HTTP 400/413/422).
bool exception_is_model_caused(std::string_view exception_type, std::string_view message);
// Whether a tool output's stderr counts as a model error (non-empty stderr, except browse
// commands and "required command is unavailable:").
bool stderr_is_model_error(std::string_view tool,
                           const OrderedJson &arguments,
                           const OrderedJson &output);

// A tool message: role tool (or user), tool_call_id, name, content.
OrderedJson tool_message(std::string_view call_id,
                         std::string_view name,
                         std::string content,
                         bool tool_role = true);

// Chat templates: {name, description, input_variables, chat_template: [{role, content}], tools?}.
struct ChatTemplate {
  std::string name;
  std::string description;
  std::vector<std::string> input_variables;
  OrderedJson messages = OrderedJson::array();
  OrderedJson tools; // null when absent
};
// Throws pb::Error (exit 3) naming `source` when the shape is wrong.
ChatTemplate parse_template(const OrderedJson &json, const std::string &source);
// Checks input_variables ("Missing template variables: [...]"), then formats every message with
// str.format; a placeholder without a value is an error too. Throws pb::Error (exit 3).
OrderedJson render_template(const ChatTemplate &tpl, const OrderedJson &values);

// Our default templates (docs/environments.md "Templates"), by Python PrimeBeaker's relative path
// (e.g. "templates/search-agent.json"). nullptr when we ship none of that name.
const std::string *builtin_template(std::string_view path);
std::vector<std::string> builtin_template_names();
// A user path if it exists, else our default of that name; pb::Error when neither.
ChatTemplate load_template(const std::string &path);

} // namespace pb::environments
