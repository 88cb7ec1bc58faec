// SPDX-License-Identifier: MIT
// Tool schemas, result rendering, error observations and templates (docs/environments.md).
#include <primebeaker/core/error.hpp>
#include <primebeaker/core/json.hpp>
#include <primebeaker/core/text.hpp>
#include <primebeaker/environments/parsing.hpp>
#include <primebeaker/environments/python.hpp>
#include <primebeaker/environments/render.hpp>

#include <fmt/format.h>

#include <filesystem>
#include <fstream>
#include <sstream>

namespace pb::environments {
namespace {

using J = OrderedJson;

J string_property(const char *description) {
  return J{{"type", "string"}, {"description", description}};
}

J command_schema(const char *description) {
  return J{{"type", "object"},
           {"properties", {{"command", string_property(description)}}},
           {"required", J::array({"command"})}};
}

std::string text_field(const J &output, const char *key) {
  if (!output.is_object() || !output.contains(key) || output.at(key).is_null()) {
    return {};
  }
  const J &v = output.at(key);
  return v.is_string() ? v.get<std::string>() : py::str(v);
}

bool truthy_field(const J &output, const char *key) {
  return output.is_object() && output.contains(key) && truthy(output.at(key));
}

} // namespace

std::vector<std::string> tool_spec_names() {
  return {"python", "bash", "terminal", "webterminal", "search", "submit"};
}

OrderedJson tool_spec(std::string_view name) {
  if (name == "python") {
    return J{{"name", "python"},
             {"description",
              "Execute a Python program and get back what it printed to stdout and stderr."},
             {"parameters",
              {{"type", "object"},
               {"properties", {{"code", string_property("The Python source to run.")}}},
               {"required", J::array({"code"})}}}};
  }
  if (name == "bash") {
    return J{
        {"name", "bash"},
        {"description", "Run a single Bash command and get back its stdout, stderr and exit code."},
        {"parameters", command_schema("The Bash command line to run.")}};
  }
  if (name == "terminal") {
    return J{{"name", "terminal"},
             {"description",
              "Run a restricted shell pipeline whose standard input is the output under "
              "evaluation. Returns stdout, stderr and the exit code."},
             {"parameters", command_schema("The pipeline to run, for example: rg -n 'error'.")}};
  }
  if (name == "webterminal") {
    return J{{"name", "webterminal"},
             {"description",
              "Run a restricted shell pipeline over the output under evaluation or over web "
              "content: `browse <url> | rg ...` fetches a page and pipes it, `cat <asset-id> | "
              "...` reuses a page fetched before. Returns stdout, stderr and the exit code."},
             {"parameters", command_schema("The pipeline to run.")}};
  }
  if (name == "search") {
    return J{{"name", "search"},
             {"description", "Search the web; returns result titles, links and snippets."},
             {"parameters",
              {{"type", "object"},
               {"properties",
                {{"query", string_property("What to search for.")},
                 {"num_results",
                  {{"type", "integer"},
                   {"description", "How many results to return."},
                   {"minimum", 1},
                   {"maximum", 10}}}}},
               {"required", J::array({"query"})}}}};
  }
  if (name == "submit") {
    return J{
        {"name", "submit"},
        {"description",
         "Record the judgment for one rubric. The reply lists the rubric ids already completed "
         "and those still waiting."},
        {"parameters",
         {{"type", "object"},
          {"properties",
           {{"rubric_id",
             {{"type", J::array({"string", "integer"})},
              {"description", "The id of the rubric being judged."}}},
            {"feedback", string_property("Why the label was chosen, citing evidence.")},
            {"label", string_property("The judgment for this rubric.")}}},
          {"required", J::array({"rubric_id", "feedback", "label"})},
          {"additionalProperties", false}}}};
  }
  throw input_error(
      fmt::format("unknown tool '{}'; known: {}", name, text::join(tool_spec_names(), ", ")));
}

bool tool_arguments_usable(std::string_view tool, const OrderedJson &arguments) {
  J spec;
  try {
    spec = tool_spec(tool);
  } catch (const Error &) {
    return false;
  }
  if (!arguments.is_object()) {
    return false;
  }
  for (const auto &key : spec["parameters"]["required"]) {
    const std::string name = key.get<std::string>();
    if (!arguments.contains(name) || arguments.at(name).is_null()) {
      return false;
    }
    const J &v = arguments.at(name);
    if (v.is_string() && py::strip(v.get_ref<const std::string &>()).empty()) {
      return false;
    }
  }
  return true;
}

std::string truncate_text(std::string_view text, long long limit) {
  if (limit <= 0) {
    return {};
  }
  const auto total = static_cast<long long>(py::length(text));
  if (total <= limit) {
    return std::string(text);
  }
  // The marker names the omitted count, which depends on the marker's own length.
  std::string marker;
  long long keep = limit;
  for (int round = 0; round < 4; ++round) {
    marker = fmt::format("\n[... {} characters truncated]", total - keep);
    keep = std::max<long long>(0, limit - static_cast<long long>(py::length(marker)));
  }
  marker = fmt::format("\n[... {} characters truncated]", total - keep);
  return py::prefix(text, static_cast<size_t>(keep)) + marker;
}

std::string render_terminal_payload(const OrderedJson &output) {
  J payload = J::object();
  const bool object = output.is_object();
  payload["execution_time"] =
      object && output.contains("execution_time") ? output.at("execution_time") : J();
  payload["exit_code"] = object && output.contains("exit_code") ? output.at("exit_code") : J();
  payload["stderr"] = text_field(output, "stderr");
  payload["stdout"] = text_field(output, "stdout");
  payload["success"] = truthy_field(output, "success");
  payload["truncated"] = truthy_field(output, "truncated");
  J chars =
      object && output.contains("truncated_characters") ? output.at("truncated_characters") : J(0);
  payload["truncated_characters"] = chars.is_number_integer() ? chars : J(0);
  return py::dumps(payload, {.sort_keys = true});
}

std::string render_fenced(const OrderedJson &output, long long truncation) {
  std::string stdout_text = text_field(output, "stdout");
  std::string stderr_text = text_field(output, "stderr");
  if (stdout_text.empty() && stderr_text.empty()) {
    stdout_text = text_field(output, "output");
    stderr_text = text_field(output, "error");
  }
  if (truncation >= 0) {
    stdout_text = truncate_text(stdout_text, truncation);
    stderr_text = truncate_text(stderr_text, truncation);
  }
  return "```stdout\n" + stdout_text + "\n```\n\n```stderr\n" + stderr_text + "\n```";
}

std::string render_raw_result(const OrderedJson &output) {
  return py::dumps(output, {.sort_keys = true});
}

std::string
render_tool_result(std::string_view tool, const OrderedJson &output, long long truncation) {
  if (tool == "terminal" || tool == "webterminal") {
    return render_terminal_payload(output);
  }
  if (tool == "submit") {
    return render_raw_result(output);
  }
  if (tool == "search" && text_field(output, "stdout").empty() &&
      text_field(output, "stderr").empty()) {
    J filled = output.is_object() ? output : J::object();
    const J &data = output.is_object() && output.contains("data") ? output.at("data") : output;
    filled["stdout"] = py::dumps(data);
    filled["stderr"] = "";
    filled["exit_code"] = truthy_field(output, "success") ? 0 : 1;
    return render_fenced(filled, truncation);
  }
  return render_fenced(output, truncation);
}

std::string render_search_results(const OrderedJson &response) {
  const J *results = nullptr;
  if (response.is_object() && response.contains("data") && response.at("data").is_object()) {
    const J &data = response.at("data");
    for (const char *key : {"organic", "results"}) {
      if (data.contains(key) && data.at(key).is_array() && !data.at(key).empty()) {
        results = &data.at(key);
        break;
      }
    }
  }
  if (results == nullptr) {
    return py::dumps(response);
  }
  std::vector<std::string> blocks;
  for (const auto &r : *results) {
    std::string title = text_field(r, "title");
    std::string block = "**" + (title.empty() ? std::string("Untitled result") : title) + "**";
    std::string snippet = text_field(r, "snippet");
    if (snippet.empty()) {
      snippet = text_field(r, "description");
    }
    if (!snippet.empty()) {
      block += "\n" + snippet;
    }
    std::string link = text_field(r, "link");
    if (link.empty()) {
      link = text_field(r, "url");
    }
    if (!link.empty()) {
      block += "\nSource: " + link;
    }
    blocks.push_back(std::move(block));
  }
  return text::join(blocks, "\n\n");
}

std::string render_visit_result(const OrderedJson &response) {
  if (response.is_object() && response.contains("data")) {
    const J &data = response.at("data");
    if (data.is_object()) {
      for (const char *key : {"content", "text", "markdown"}) {
        const std::string content = text_field(data, key);
        if (!content.empty()) {
          const std::string title = text_field(data, "title");
          return (title.empty() ? std::string() : "# " + title + "\n\n") + py::strip(content);
        }
      }
    } else if (data.is_string() && !data.get_ref<const std::string &>().empty()) {
      return py::strip(data.get<std::string>());
    }
  }
  return py::dumps(response);
}

OrderedJson unknown_tool_output(std::string_view tool, const std::vector<std::string> &available) {
  std::vector<std::string> sorted = available;
  std::sort(sorted.begin(), sorted.end());
  return J{{"success", false},
           {"stdout", ""},
           {"stderr",
            fmt::format("Unknown tool '{}'. The tools you can call are: {}. Use one of them.",
                        tool,
                        text::join(sorted, ", "))},
           {"exit_code", 1}};
}

OrderedJson execution_error_output(std::string_view tool,
                                   std::string_view exception_type,
                                   std::string_view message) {
  return J{
      {"success", false},
      {"stdout", ""},
      {"stderr", fmt::format("{} execution request failed: {}: {}", tool, exception_type, message)},
      {"exit_code", 1}};
}

bool exception_is_model_caused(std::string_view exception_type, std::string_view message) {
  if (exception_type == "TypeError" || exception_type == "ValueError") {
    return true;
  }
  for (const char *code : {" HTTP 400 ", " HTTP 413 ", " HTTP 422 "}) {
    if (message.find(code) != std::string_view::npos) {
      return true;
    }
  }
  return false;
}

bool stderr_is_model_error(std::string_view tool,
                           const OrderedJson &arguments,
                           const OrderedJson &output) {
  const std::string stderr_text = text_field(output, "stderr");
  if (py::strip(stderr_text).empty()) {
    return false;
  }
  if (text::starts_with(stderr_text, "required command is unavailable:")) {
    return false;
  }
  if ((tool == "terminal" || tool == "webterminal") && arguments.is_object() &&
      arguments.contains("command") && arguments.at("command").is_string()) {
    const auto stages = pipeline_stage_names(arguments.at("command").get<std::string>());
    if (!stages.empty() && stages.front() == "browse") {
      return false;
    }
  }
  return true;
}

OrderedJson
tool_message(std::string_view call_id, std::string_view name, std::string content, bool tool_role) {
  return J{{"role", tool_role ? "tool" : "user"},
           {"content", std::move(content)},
           {"tool_call_id", call_id},
           {"name", name}};
}

ChatTemplate parse_template(const OrderedJson &json, const std::string &source) {
  auto bad = [&source](const std::string &what) {
    return input_error(fmt::format("{}: not a chat template: {}", source, what));
  };
  if (!json.is_object()) {
    throw bad("expected a JSON object");
  }
  ChatTemplate tpl;
  if (json.contains("name") && json.at("name").is_string()) {
    tpl.name = json.at("name").get<std::string>();
  }
  if (json.contains("description") && json.at("description").is_string()) {
    tpl.description = json.at("description").get<std::string>();
  }
  if (json.contains("input_variables")) {
    const J &vars = json.at("input_variables");
    if (!vars.is_array()) {
      throw bad("input_variables must be a list of strings");
    }
    for (const auto &v : vars) {
      if (!v.is_string()) {
        throw bad("input_variables must be a list of strings");
      }
      tpl.input_variables.push_back(v.get<std::string>());
    }
  }
  if (!json.contains("chat_template") || !json.at("chat_template").is_array()) {
    throw bad("chat_template must be a list of {role, content} messages");
  }
  for (const auto &m : json.at("chat_template")) {
    if (!m.is_object() || !m.contains("role") || !m.at("role").is_string() ||
        !m.contains("content") || !m.at("content").is_string()) {
      throw bad("chat_template must be a list of {role, content} messages");
    }
    tpl.messages.push_back({{"role", m.at("role")}, {"content", m.at("content")}});
  }
  if (json.contains("tools")) {
    tpl.tools = json.at("tools");
  }
  return tpl;
}

OrderedJson render_template(const ChatTemplate &tpl, const OrderedJson &values) {
  std::vector<std::string> missing;
  for (const auto &name : tpl.input_variables) {
    if (!values.is_object() || !values.contains(name)) {
      missing.push_back(name);
    }
  }
  if (!missing.empty()) {
    std::sort(missing.begin(), missing.end());
    std::vector<std::string> quoted;
    for (const auto &m : missing) {
      quoted.push_back(py::repr(J(m)));
    }
    throw input_error(fmt::format(
        "template '{}': Missing template variables: [{}]", tpl.name, text::join(quoted, ", ")));
  }
  J out = J::array();
  for (const auto &m : tpl.messages) {
    try {
      out.push_back(
          {{"role", m.at("role")},
           {"content", py::format(m.at("content").get_ref<const std::string &>(), values)}});
    } catch (const py::FormatError &error) {
      throw input_error(fmt::format("template '{}': {}", tpl.name, error.what()));
    }
  }
  return out;
}

ChatTemplate load_template(const std::string &path) {
  std::error_code ec;
  if (std::filesystem::is_regular_file(path, ec)) {
    std::ifstream in(path, std::ios::binary);
    std::stringstream buffer;
    buffer << in.rdbuf();
    J json;
    try {
      json = J::parse(buffer.str());
    } catch (const J::parse_error &error) {
      throw input_error(fmt::format("{}: invalid JSON: {}", path, error.what()));
    }
    return parse_template(json, path);
  }
  if (const std::string *text = builtin_template(path)) {
    return parse_template(J::parse(*text), "built-in " + path);
  }
  throw input_error(fmt::format("template '{}' not found (no such file, and no built-in "
                                "default of that name; built-ins: {})",
                                path,
                                text::join(builtin_template_names(), ", ")));
}

} // namespace pb::environments
