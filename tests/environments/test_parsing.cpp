// SPDX-License-Identifier: MIT
// Tool-call extraction, verdicts, rendering and templates (docs/environments.md).
#include "test_support.hpp"

#include <primebeaker/environments/parsing.hpp>
#include <primebeaker/environments/python.hpp>
#include <primebeaker/environments/render.hpp>

#include <gtest/gtest.h>

namespace pb::environments {
namespace {

using J = OrderedJson;

std::string calls_json(const std::vector<ToolCall> &calls) {
  J out = J::array();
  for (const auto &c : calls) {
    out.push_back(to_json(c));
  }
  return py::dumps(out);
}

TEST(ToolCalls, QwenJsonFixtureFromTheReference) {
  const std::string text = "<think>look for errors</think>\n<tool_call>\n{\"name\": \"terminal\", "
                           "\"arguments\": {\"command\": \"rg -n \\\"error\\\"\"}}\n</tool_call>";
  EXPECT_EQ(calls_json(parse_qwen_tool_calls(text)),
            R"([{"name": "terminal", "arguments": {"command": "rg -n \"error\""}}])");
}

TEST(ToolCalls, QwenJsonEdgeCases) {
  // Non-greedy: the object ends at the first } followed by optional space and </tool_call>.
  EXPECT_EQ(calls_json(parse_qwen_json_calls(
                "<tool_call>{\"name\": \"a\", \"arguments\": {\"x\": \"}\"}}</tool_call>"
                "<tool_call> {\"name\": \"b\"} </tool_call>")),
            R"([{"name": "a", "arguments": {"x": "}"}}, {"name": "b", "arguments": {}}])");
  // Invalid JSON is skipped silently; a later valid block still counts.
  EXPECT_EQ(
      calls_json(parse_qwen_json_calls("<tool_call>{bad}</tool_call><tool_call>{\"name\": "
                                       "\"ok\", \"arguments\": \"{\\\"n\\\": NaN}\"}</tool_call>")),
      R"([{"name": "ok", "arguments": {"n": NaN}}])");
  // Falsy names skipped; arguments coercion.
  EXPECT_EQ(
      calls_json(parse_qwen_json_calls(
          "<tool_call>{\"name\": \"\"}</tool_call><tool_call>{\"name\": 7, \"arguments\": "
          "\"[1]\"}</tool_call><tool_call>{\"name\": \"s\", \"arguments\": \"not json\"}"
          "</tool_call><tool_call>{\"name\": \"n\", \"arguments\": 5}</tool_call>")),
      R"([{"name": "7", "arguments": {"raw": [1]}}, {"name": "s", "arguments": {"raw": "not json"}}, {"name": "n", "arguments": {"raw": 5}}])");
  // Duplicate keys: the last wins. Tags are case-sensitive.
  EXPECT_EQ(
      calls_json(parse_qwen_json_calls("<tool_call>{\"name\": \"a\", \"name\": \"b\"}</tool_call>"
                                       "<TOOL_CALL>{\"name\": \"c\"}</TOOL_CALL>")),
      R"([{"name": "b", "arguments": {}}])");
}

TEST(ToolCalls, QwenXmlFunctions) {
  const std::string text =
      "<tool_call>\n<function=terminal>\n<parameter=command>\nrg -n x\n"
      "</parameter>\n<parameter= n >5</parameter><parameter=s>\"q\"</parameter>"
      "<parameter=n>6</parameter>\n</function>\n</tool_call> "
      "<tool_call><function=noargs></function></tool_call>";
  EXPECT_EQ(
      calls_json(parse_qwen_tool_calls(text)),
      R"([{"name": "terminal", "arguments": {"command": "rg -n x", "n": 6, "s": "q"}}, {"name": "noargs", "arguments": {}}])");
  // A JSON call wins over XML ones.
  EXPECT_EQ(parse_qwen_tool_calls(text + "<tool_call>{\"name\": \"j\"}</tool_call>").size(), 1u);
}

TEST(ToolCalls, StructuredAndFallback) {
  const J openai = J::parse(R"({"role": "assistant", "content": "",
      "tool_calls": [{"id": "c1", "type": "function", "function": {"name": " terminal ", "arguments": "{\"command\": \"ls\"}"}},
                     {"id": "c2", "name": "submit", "arguments": {"rubric_id": 1}}]})");
  EXPECT_EQ(
      calls_json(extract_tool_calls(openai)),
      R"([{"id": "c1", "name": "terminal", "arguments": {"command": "ls"}}, {"id": "c2", "name": "submit", "arguments": {"rubric_id": 1}}])");
  // One malformed call discards the structured parse; the content's text calls are used.
  const J broken =
      J::parse(R"({"role": "assistant", "content": "<tool_call>{\"name\": \"t\"}</tool_call>",
      "tool_calls": [{"function": {"name": "a", "arguments": "{}"}}, {"function": {"name": "b", "arguments": "[1]"}}]})");
  EXPECT_FALSE(parse_structured_calls(broken).has_value());
  EXPECT_EQ(calls_json(extract_tool_calls(broken)), R"([{"name": "t", "arguments": {}}])");
  EXPECT_FALSE(parse_structured_calls(J::parse(R"({"tool_calls": []})")).has_value());
}

TEST(ToolCalls, ReportForParseToolCalls) {
  const std::string xml = "<think>plan</think><tool_call>\n<function=terminal>\n<parameter=command>"
                          "\nrg -n a\n</parameter>\n</function>\n</tool_call> done";
  EXPECT_EQ(
      py::dumps(tool_call_report(xml, "auto")),
      R"({"format": "qwen-xml", "calls": [{"name": "terminal", "arguments": {"command": "rg -n a"}}], "reasoning": "plan", "visible_content": "done"})");
  EXPECT_EQ(tool_call_report(xml, "qwen-json")["format"], "none");
  const std::string message =
      R"({"content": "x", "tool_calls": [{"id": "7", "function": {"name": "submit", "arguments": "{\"label\": \"pass\"}"}}]})";
  EXPECT_EQ(py::dumps(tool_call_report(message, "structured")["calls"]),
            R"([{"id": "7", "name": "submit", "arguments": {"label": "pass"}}])");
  EXPECT_EQ(tool_call_report(message, "qwen-xml")["calls"].size(), 0u);
}

TEST(Thinking, ParseAndStrip) {
  EXPECT_EQ(parse_qwen_thinking("<THINK> a </think>b<think>c</think>"), "a");
  EXPECT_EQ(parse_qwen_thinking("<redacted_thinking>r</redacted_thinking>"), "r");
  EXPECT_EQ(parse_qwen_thinking("pre </think> post"), "pre");
  EXPECT_EQ(parse_qwen_thinking("none"), "");
  EXPECT_EQ(
      strip_qwen_special_blocks("<think>x</think>A<tool_call>{}</tool_call>B<|IM_END|><|return|> "),
      "AB");
  EXPECT_EQ(strip_qwen_special_blocks("orphan </think> kept </think> last"), "last");
}

TEST(Verdicts, PermissiveStrictAndLabels) {
  EXPECT_EQ(parse_final_verdict("```JSON\n{\"feedback\": \"f\", \"label\": \"Pass\"}\n```")->label,
            "Pass");
  EXPECT_EQ(parse_final_verdict("I think {\"feedback\": \"a {b}\", \"label\": \"x\"} ok")->feedback,
            "a {b}");
  EXPECT_FALSE(parse_final_verdict("{'feedback': 'f', 'label': 'x'}"));
  EXPECT_FALSE(parse_final_verdict(R"({"feedback": "f", "label": " "})"));
  EXPECT_FALSE(parse_final_verdict(R"({"feedback": "f", "label": "x", "extra": 1})"));
  EXPECT_TRUE(parse_final_verdict(R"({"feedback": "f", "feedback": "g", "label": "x"})"));
  EXPECT_TRUE(parse_strict_verdict("<think>t</think> {\"feedback\": \"f\", \"label\": \"x\"} "));
  EXPECT_FALSE(parse_strict_verdict("Answer: {\"feedback\": \"f\", \"label\": \"x\"}"));
  EXPECT_EQ(py::normalize_label("  Mostly\u00a0  CORRECT \n"), "mostly correct");
  EXPECT_EQ(*parse_xml_verdict("<Feedback>\nok\n</feedback><LABEL> Yes </label>"), "Yes");
  EXPECT_FALSE(parse_xml_verdict("<feedback>a</feedback><feedback>b</feedback><label>x</label>"));
  EXPECT_FALSE(parse_xml_verdict("<feedback> </feedback><label>x</label>"));
}

TEST(Verdicts, CodeRequestsAnswersAndLetters) {
  EXPECT_TRUE(is_code_request("  <code>\n```python\nprint(1)\n```\n</code> "));
  EXPECT_TRUE(is_code_request("<CODE>```Py\nx=1\n```</CODE>"));
  EXPECT_FALSE(is_code_request("<code>```python\n```</code>"));
  EXPECT_FALSE(is_code_request("text <code>```python\nx\n```</code>"));
  EXPECT_FALSE(is_code_request("<code>```js\nx\n```</code>"));
  EXPECT_EQ(extract_code("<code>```python\nprint(2)\n```</code>"), "print(2)");
  EXPECT_EQ(extract_code("```py\na\n```\n```python\nb\n```"), "b");
  EXPECT_EQ(*parse_final_answer("Report.\n```json\n{\"answer\": \"Paris\"}\n```\n "), "Paris");
  EXPECT_FALSE(parse_final_answer("```json\n{\"answer\": \"Paris\"}\n``` trailing"));
  EXPECT_FALSE(parse_final_answer("```json\n{\"answer\": \"\"}\n```"));
  EXPECT_FALSE(parse_final_answer("```json\n{\"answer\": \"a\", \"why\": \"b\"}\n```"));
  EXPECT_EQ(*last_choice_letter("I pick B, not C. Final: (D)"), 'D');
  EXPECT_FALSE(last_choice_letter("ABC and K"));
  EXPECT_EQ(J(extract_urls("see https://a.b/c?d=1. and http://x.y/z!, ftp://no")),
            J::array({"https://a.b/c?d=1", "http://x.y/z"}));
}

TEST(Render, TerminalPayloadFencedSubmitSearch) {
  EXPECT_EQ(
      render_terminal_payload(J::parse(
          R"({"stdout": "hi\n", "success": true, "exit_code": 0, "execution_time": 0.01, "extra": 1})")),
      R"({"execution_time": 0.01, "exit_code": 0, "stderr": "", "stdout": "hi\n", "success": true, "truncated": false, "truncated_characters": 0})");
  EXPECT_EQ(render_terminal_payload(J::parse(
                R"({"stdout": "caf\u00e9", "truncated": true, "truncated_characters": 12})")),
            "{\"execution_time\": null, \"exit_code\": null, \"stderr\": \"\", \"stdout\": "
            "\"caf\u00e9\", "
            "\"success\": false, \"truncated\": true, \"truncated_characters\": 12}");
  EXPECT_EQ(render_fenced(J::parse(R"({"stdout": "out", "stderr": "err", "exit_code": 2})")),
            "```stdout\nout\n```\n\n```stderr\nerr\n```");
  EXPECT_EQ(render_fenced(J::parse(R"({"output": "o", "error": "e"})")),
            "```stdout\no\n```\n\n```stderr\ne\n```");
  EXPECT_EQ(
      render_tool_result(
          "submit",
          J::parse(
              R"({"success": true, "stdout": "{}", "stderr": "", "exit_code": 0, "data": {"b": 1, "a": 2.0}})")),
      R"({"data": {"a": 2.0, "b": 1}, "exit_code": 0, "stderr": "", "stdout": "{}", "success": true})");
  EXPECT_EQ(render_tool_result("search", J::parse(R"({"success": true, "data": {"organic": []}})")),
            "```stdout\n{\"organic\": []}\n```\n\n```stderr\n\n```");
  EXPECT_EQ(
      render_search_results(J::parse(
          R"({"data": {"results": [{"title": "T", "description": "d", "url": "u"}, {"link": "l"}]}})")),
      "**T**\nd\nSource: u\n\n**Untitled result**\nSource: l");
  EXPECT_EQ(render_search_results(J::parse(R"({"success": false})")), R"({"success": false})");
  EXPECT_EQ(render_visit_result(J::parse(R"({"data": {"title": "P", "content": "  body \n"}})")),
            "# P\n\nbody");
  EXPECT_EQ(render_visit_result(J::parse(R"({"data": " text "})")), "text");
}

TEST(Render, TruncationErrorsAndUsability) {
  const std::string long_text(100, 'x');
  const std::string cut = truncate_text(long_text, 50);
  EXPECT_EQ(py::length(cut), 50u);
  EXPECT_NE(cut.find("characters truncated"), std::string::npos);
  EXPECT_EQ(cut.substr(0, 10), std::string(10, 'x'));
  EXPECT_EQ(truncate_text("short", 50), "short");
  EXPECT_EQ(truncate_text("short", 0), "");
  EXPECT_EQ(py::length(truncate_text(std::string(300, 'y') + "\u00e9\u00e9\u00e9", 120)), 120u);

  const J unknown = unknown_tool_output("browser", {"terminal", "submit"});
  EXPECT_EQ(unknown["exit_code"], 1);
  EXPECT_EQ(unknown["success"], false);
  EXPECT_NE(unknown["stderr"].get<std::string>().find("submit, terminal"), std::string::npos);
  EXPECT_EQ(execution_error_output("bash", "RuntimeError", "container was OOM-killed")["stderr"],
            "bash execution request failed: RuntimeError: container was OOM-killed");
  EXPECT_TRUE(exception_is_model_caused("ValueError", "x"));
  EXPECT_TRUE(exception_is_model_caused("RuntimeError", "failed with HTTP 422 at u"));
  EXPECT_FALSE(exception_is_model_caused("RuntimeError", "failed with HTTP 500 at u"));
  const J err = J::parse(R"({"stderr": "boom"})");
  EXPECT_TRUE(stderr_is_model_error("terminal", J{{"command", "rg x"}}, err));
  EXPECT_FALSE(stderr_is_model_error("terminal", J{{"command", "browse http://a | rg x"}}, err));
  EXPECT_FALSE(stderr_is_model_error("terminal",
                                     J{{"command", "curl x"}},
                                     J{{"stderr", "required command is unavailable: curl"}}));
  EXPECT_TRUE(tool_arguments_usable("terminal", J{{"command", "ls"}}));
  EXPECT_FALSE(tool_arguments_usable("terminal", J{{"command", "  "}}));
  EXPECT_FALSE(tool_arguments_usable("submit", J{{"rubric_id", 1}, {"feedback", "f"}}));
  EXPECT_FALSE(tool_arguments_usable("nope", J::object()));
}

TEST(Render, ToolSpecs) {
  EXPECT_EQ(tool_spec_names().size(), 6u);
  EXPECT_NE(tool_spec("terminal")["description"].get<std::string>().find("standard input"),
            std::string::npos);
  const std::string web = tool_spec("webterminal")["description"];
  EXPECT_NE(web.find("browse <url>"), std::string::npos);
  EXPECT_NE(web.find("cat <asset-id>"), std::string::npos);
  EXPECT_EQ(
      py::dumps(tool_spec("search")["parameters"]["properties"]["num_results"]),
      R"({"type": "integer", "description": "How many results to return.", "minimum": 1, "maximum": 10})");
  EXPECT_EQ(tool_spec("submit")["parameters"]["additionalProperties"], false);
  EXPECT_EQ(tool_spec("submit")["parameters"]["required"],
            J::array({"rubric_id", "feedback", "label"}));
  EXPECT_PB_ERROR(tool_spec("nope"), 3, "unknown tool 'nope'");
}

TEST(Templates, BuiltInsRenderWithTheirVariables) {
  const auto names = builtin_template_names();
  EXPECT_EQ(names.size(), 5u);
  for (const auto &name : names) {
    const ChatTemplate tpl = load_template(name);
    J values = J::object();
    for (const auto &v : tpl.input_variables) {
      values[v] = "<" + v + ">";
    }
    const J rendered = render_template(tpl, values);
    ASSERT_EQ(rendered.size(), tpl.messages.size()) << name;
    std::string all;
    for (const auto &m : rendered) {
      all += m["content"].get<std::string>();
    }
    for (const auto &v : tpl.input_variables) {
      EXPECT_NE(all.find("<" + v + ">"), std::string::npos) << name << " " << v;
    }
  }
  const ChatTemplate search = load_template("templates/search-agent.json");
  EXPECT_EQ(search.input_variables, std::vector<std::string>{"question"});
  const std::string system = render_template(search, J{{"question", "q"}})[0]["content"];
  EXPECT_NE(system.find("{\"answer\": \"<short answer>\"}"), std::string::npos);
  EXPECT_PB_ERROR(
      render_template(search, J::object()), 3, "Missing template variables: ['question']");
  ChatTemplate custom = parse_template(J::parse(R"({"name": "c", "input_variables": ["a"],
      "chat_template": [{"role": "user", "content": "{a} {b}"}]})"),
                                       "c.json");
  EXPECT_PB_ERROR(render_template(custom, J{{"a", 1}}), 3, "missing template variable 'b'");
  EXPECT_EQ(render_template(custom, J{{"a", 1}, {"b", "x"}, {"extra", 2}})[0]["content"], "1 x");
  EXPECT_PB_ERROR(
      load_template("templates/nope.json"), 3, "template 'templates/nope.json' not found");
  test::TempDir dir;
  test::write_file(
      dir / "mine.json",
      R"({"name": "m", "input_variables": [], "chat_template": [{"role": "system", "content": "hi {{x}}"}]})");
  EXPECT_EQ(render_template(load_template((dir / "mine.json").string()), J::object())[0]["content"],
            "hi {x}");
}

} // namespace
} // namespace pb::environments
