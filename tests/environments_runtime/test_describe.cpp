// SPDX-License-Identifier: MIT
// `environments describe` (the shape the Python entry points build from) and `environments
// serve --stdio` scoring a single-turn environment, both through the real binary as well.
#include "serve_child.hpp"
#include "test_support.hpp"

#include <primebeaker/core/error.hpp>
#include <primebeaker/environments_runtime/engine.hpp>

#include <gtest/gtest.h>

#include <sys/wait.h>
#include <unistd.h>

#include <stdexcept>

namespace {

using json = nlohmann::json;
using pb::OrderedJson;
using pb::environments_runtime::describe;
using pb::test::run_primebeaker;
using pb::test::ServeChild;

std::vector<std::string> names_of(const OrderedJson &items) {
  std::vector<std::string> names;
  for (const auto &item : items) {
    names.push_back(item.is_string() ? item.get<std::string>() : item["name"].get<std::string>());
  }
  return names;
}

TEST(Describe, ToolLabelIsMultiTurnWithTheBudgetPlusOneTurnsAndTerminalTool) {
  const OrderedJson shape =
      describe("jtc-tool-label", OrderedJson{{"dataset", "rows.jsonl"}, {"max_tool_calls", 5}});
  EXPECT_EQ(shape["name"], "tool-label");
  EXPECT_EQ(shape["module"], "jtc_tool_label_env");
  EXPECT_EQ(shape["kind"], "multi_turn");
  EXPECT_EQ(shape["max_turns"], 6);
  EXPECT_EQ(names_of(shape["tool_defs"]), std::vector<std::string>{"terminal"});
  EXPECT_EQ(shape["tool_defs"][0]["parameters"]["required"], OrderedJson::array({"command"}));
  const std::vector<std::string> rewards = names_of(shape["rewards"]);
  ASSERT_EQ(rewards.size(), 12u);
  EXPECT_EQ(rewards.front(), "valid_tool_or_final_turn");
  EXPECT_EQ(rewards.back(), "correct_final_label");
  for (const auto &reward : shape["rewards"]) {
    EXPECT_TRUE(reward["weight"].is_number_float()) << reward.dump();
    EXPECT_DOUBLE_EQ(reward["weight"].get<double>(), 1.0) << reward.dump();
  }
  EXPECT_EQ(names_of(shape["metrics"]),
            (std::vector<std::string>{
                "browse_call_count", "browse_url_not_in_output_count", "successful_browse_count"}));
  ASSERT_EQ(shape["stops"].size(), 1u);
  EXPECT_EQ(shape["stops"][0]["name"], "stop_after_final_or_invalid");
  EXPECT_EQ(shape["stops"][0]["priority"], 50);
  EXPECT_EQ(shape["stops"][0]["kind"], "observe");
  EXPECT_EQ(shape["needs_setup"], false);
  EXPECT_EQ(shape["dataset"]["split_column"], "overwrite");
  // Defaults are filled in and the given arguments win.
  EXPECT_EQ(shape["args"]["max_tool_calls"], 5);
  EXPECT_EQ(shape["args"]["terminal_server_url"], "http://127.0.0.1:1212/terminal");
  EXPECT_EQ(shape["args"]["dataset"], "rows.jsonl");
}

TEST(Describe, DefaultBudgetGivesSixtyFiveTurnsAndAnExplicitMaxTurnsWins) {
  EXPECT_EQ(describe("tool-label", OrderedJson{{"dataset", "d"}})["max_turns"], 65);
  EXPECT_EQ(describe("tool-label", OrderedJson{{"dataset", "d"}, {"max_turns", 3}})["max_turns"],
            3);
}

TEST(Describe, SelectedToolsAreAdvertisedInOrder) {
  const OrderedJson shape = describe(
      "tool-label", OrderedJson{{"dataset", "d"}, {"tools", OrderedJson{"terminal", "submit"}}});
  EXPECT_EQ(names_of(shape["tool_defs"]), (std::vector<std::string>{"terminal", "submit"}));
}

TEST(Describe, LabelIsSingleTurnWithTwoRewardsAndJsonlOnly) {
  const OrderedJson shape = describe("label", OrderedJson{{"dataset", "rows.jsonl"}});
  EXPECT_EQ(shape["kind"], "single_turn");
  EXPECT_EQ(shape["max_turns"], 1);
  EXPECT_TRUE(shape["tool_defs"].empty());
  EXPECT_EQ(names_of(shape["rewards"]),
            (std::vector<std::string>{"valid_format", "correct_label"}));
  EXPECT_TRUE(shape["stops"].empty());
  EXPECT_EQ(shape["dataset"]["sources"], OrderedJson::array({"jsonl"}));
  EXPECT_EQ(shape["dataset"]["split_column"], "add");
  EXPECT_EQ(shape["args"]["split"], "train");
}

TEST(Describe, BadArgumentsAreInputErrorsNamingTheArgument) {
  EXPECT_PB_ERROR(describe("label", OrderedJson{{"dataset", "d"}, {"bogus", 1}}),
                  pb::ExitCode::bad_input,
                  "bogus");
  EXPECT_PB_ERROR(describe("tool-label", OrderedJson{{"dataset", "d"}, {"max_tool_calls", "x"}}),
                  pb::ExitCode::bad_input,
                  "max_tool_calls");
  EXPECT_PB_ERROR(describe("label", OrderedJson::object()), pb::ExitCode::bad_input, "dataset");
  EXPECT_PB_ERROR(describe("label", OrderedJson::array()), pb::ExitCode::usage, "JSON object");
}

TEST(DescribeBinary, PrintsTheShapeAsJson) {
  const auto result = run_primebeaker({"environments",
                                       "describe",
                                       "tool-label",
                                       "--args",
                                       R"({"dataset":"d","max_tool_calls":2})"});
  ASSERT_EQ(result.exit_code, 0) << result.err;
  const json shape = json::parse(result.out);
  EXPECT_EQ(shape["kind"], "multi_turn");
  EXPECT_EQ(shape["max_turns"], 3);
}

TEST(DescribeBinary, BadArgumentExitsThreeWithOneLineNamingIt) {
  const auto result = run_primebeaker(
      {"environments", "describe", "label", "--args", R"({"dataset":"d","bogus":1})"});
  EXPECT_EQ(result.exit_code, 3);
  EXPECT_TRUE(result.out.empty()) << result.out;
  EXPECT_NE(result.err.find("bogus"), std::string::npos) << result.err;
}

TEST(DescribeBinary, UnknownEnvironmentExitsThree) {
  const auto result =
      run_primebeaker({"environments", "describe", "no-such-env", "--args", R"({"dataset":"d"})"});
  EXPECT_EQ(result.exit_code, 3);
  EXPECT_NE(result.err.find("no-such-env"), std::string::npos) << result.err;
}

TEST(DescribeBinary, ArgsThatAreNotJsonAreAUsageError) {
  const auto result = run_primebeaker({"environments", "describe", "label", "--args", "{nope"});
  EXPECT_EQ(result.exit_code, 2);
  EXPECT_NE(result.err.find("--args"), std::string::npos) << result.err;
}

// ------------------------------------------------------------------ serve through the binary

json label_score(int id,
                 const std::string &session,
                 const std::string &content,
                 const json &answer) {
  const json prompt = json::array({{{"role", "user"}, {"content", "judge this"}}});
  return {{"id", id},
          {"op", "score"},
          {"session", session},
          {"env", "label"},
          {"args", {{"dataset", "rows.jsonl"}}},
          {"row", {{"prompt", prompt}, {"answer", answer}, {"example_id", 0}}},
          {"prompt", prompt},
          {"completion", json::array({{{"role", "assistant"}, {"content", content}}})},
          {"answer", answer},
          {"is_truncated", false}};
}

TEST(ServeBinary, ScoresTheLabelEnvironment) {
  ServeChild serve;
  const json hello = serve.send({{"id", 1}, {"op", "hello"}, {"protocol", 1}, {"client", "t"}});
  ASSERT_TRUE(hello["ok"]) << hello.dump();
  EXPECT_EQ(hello["protocol"], 1);
  const auto values = [&](int id, const std::string &content, const json &answer) {
    const json reply = serve.send(label_score(id, "s" + std::to_string(id), content, answer));
    EXPECT_EQ(reply["id"], id);
    EXPECT_TRUE(reply["ok"]) << reply.dump();
    return reply["values"];
  };
  // Tags match case-insensitively across newlines; the label is trimmed and lowercased.
  EXPECT_EQ(values(2, "<feedback>fine</feedback>\n<LABEL>  Yes \n</LABEL>", "yes"),
            (json{{"valid_format", 1.0}, {"correct_label", 1.0}}));
  EXPECT_EQ(values(3, "<feedback>fine</feedback><label>no</label>", "yes"),
            (json{{"valid_format", 1.0}, {"correct_label", 0.0}}));
  EXPECT_EQ(values(4, "yes", "yes"), (json{{"valid_format", 0.0}, {"correct_label", 0.0}}));
  EXPECT_EQ(values(5, "<feedback>f</feedback><label>yes</label><label>yes</label>", "yes"),
            (json{{"valid_format", 0.0}, {"correct_label", 0.0}}));
  EXPECT_EQ(values(6, "<feedback>f</feedback><label>yes</label>", nullptr),
            (json{{"valid_format", 1.0}, {"correct_label", 0.0}}));
}

// A request whose op is not one of the protocol's is answered naming it and the ops there are,
// whether or not it carries a session.
TEST(ServeBinary, AnUnknownOpIsNamedWithTheKnownOps) {
  for (const std::string line :
       {R"({"id": 7, "op": "scroe"})", R"({"id": 7, "op": "scroe", "session": "s"})"}) {
    pb::test::RunOptions options;
    options.stdin_data = line + "\n";
    const auto result = run_primebeaker({"environments", "serve", "--stdio"}, options);
    ASSERT_EQ(result.exit_code, 0) << result.err;
    const json reply = json::parse(result.out);
    EXPECT_EQ(reply["id"], 7);
    EXPECT_EQ(reply["ok"], false);
    EXPECT_EQ(reply["error"]["kind"], "bad_request");
    EXPECT_EQ(reply["error"]["message"],
              "unknown op 'scroe'; the ops are: hello, open, observe, respond, score, close, "
              "release, cancel")
        << line;
  }
}

TEST(ServeBinary, ProtocolMismatchUnknownEnvironmentAndMultiTurnOpenAreErrorReplies) {
  ServeChild serve;
  const json hello = serve.send({{"id", 1}, {"op", "hello"}, {"protocol", 99}, {"client", "t"}});
  EXPECT_FALSE(hello["ok"]);
  EXPECT_NE(hello["error"]["message"].get<std::string>().find("99"), std::string::npos);
  const json unknown = serve.send(
      {{"id", 2}, {"op", "score"}, {"session", "s"}, {"env", "no-such-env"}, {"args", {}}});
  EXPECT_FALSE(unknown["ok"]);
  EXPECT_EQ(unknown["error"]["kind"], "environment");
  EXPECT_NE(unknown["error"]["message"].get<std::string>().find("no-such-env"), std::string::npos);
  // A multi-turn session through the real clients: the terminal service is down, so the model
  // sees the transport's error as the tool result (and the rollout goes on).
  const json open = serve.send({{"id", 3},
                                {"op", "open"},
                                {"session", "m"},
                                {"env", "tool-label"},
                                {"args",
                                 {{"dataset", "d"},
                                  {"terminal_server_url", "http://127.0.0.1:9/terminal"},
                                  {"max_retries", 1}}},
                                {"row", json::object()}});
  EXPECT_TRUE(open["ok"]) << open.dump();
  EXPECT_EQ(open["state"]["jtc_tool_call_count"], 0);
  const json observed = serve.send(
      {{"id", 4},
       {"op", "observe"},
       {"session", "m"},
       {"turn", 1},
       {"message",
        {{"role", "assistant"},
         {"content", ""},
         {"tool_calls",
          {{{"id", "c"}, {"name", "terminal"}, {"arguments", "{\"command\": \"ls\"}"}}}}}}});
  EXPECT_TRUE(observed["ok"]) << observed.dump();
  EXPECT_EQ(observed["route"], "tool");
  const json responded = serve.send({{"id", 5}, {"op", "respond"}, {"session", "m"}, {"turn", 1}});
  ASSERT_TRUE(responded["ok"]) << responded.dump();
  const std::string shown = responded["messages"][0]["content"];
  EXPECT_NE(shown.find("terminal execution request failed: RuntimeError: Terminal execution "
                       "failed after 1 attempts at http://127.0.0.1:9/terminal"),
            std::string::npos)
      << shown;
  EXPECT_EQ(responded["state"]["jtc_tool_infrastructure_stderr_count"], 1);
}

} // namespace
