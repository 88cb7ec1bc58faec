// SPDX-License-Identifier: MIT
// The rollout engine, family by family, against fake tool services: what the model sees back,
// the counters, the stops, the warnings and the scores (docs/environments-runtime.md).
#include "fake_tools.hpp"

#include <primebeaker/environments_runtime/engine.hpp>

#include <gtest/gtest.h>

#include <atomic>
#include <thread>
#include <utility>

namespace {

using J = pb::OrderedJson;
using pb::environments_runtime::EnvironmentEngine;
using pb::environments_runtime::RequestError;
using pb::environments_runtime::ServiceCall;
using pb::environments_runtime::ToolError;
using pb::test::FakeTools;
using namespace std::chrono_literals;

J call(const std::string &id, const std::string &name, const std::string &arguments) {
  return {{"id", id}, {"name", name}, {"arguments", arguments}};
}

J assistant(const std::string &content, J calls = J()) {
  J message = {{"role", "assistant"}, {"content", content}};
  if (!calls.is_null()) {
    message["tool_calls"] = std::move(calls);
  }
  return message;
}

const char *const verdict_yes = R"({"feedback": "checked", "label": "yes"})";

J terminal_output(const std::string &stdout_text, const std::string &stderr_text = "") {
  return {{"stdout", stdout_text},
          {"stderr", stderr_text},
          {"success", stderr_text.empty()},
          {"exit_code", stderr_text.empty() ? 0 : 1},
          {"execution_time", 0.01},
          {"truncated", false},
          {"truncated_characters", 0}};
}

// One session driven through the engine the way the Python shim drives it.
struct Driver {
  FakeTools tools;
  EnvironmentEngine engine{tools};
  std::string env;
  J args;
  J row;
  std::string session = "s1";
  bool sent_open_fields = false;
  J completion = J::array();

  Driver(std::string name, J arguments, J row_fields)
      : env(std::move(name)), args(std::move(arguments)), row(std::move(row_fields)) {}

  J request(const std::string &op) {
    J r = {{"op", op}, {"session", session}};
    if (!sent_open_fields) {
      sent_open_fields = true;
      r["env"] = env;
      r["args"] = args;
      r["row"] = row;
    }
    return r;
  }
  J open() { return engine.handle("open", request("open")); }
  J observe(const J &message) {
    completion.push_back(message);
    J r = request("observe");
    r["turn"] = static_cast<long long>(completion.size());
    r["message"] = message;
    return engine.handle("observe", r);
  }
  J respond(J extra = J::object()) {
    J r = request("respond");
    r.update(extra);
    J reply = engine.handle("respond", r);
    if (reply["amend_last_tool"].is_string()) {
      for (auto it = completion.rbegin(); it != completion.rend(); ++it) {
        if ((*it)["role"] == "tool") {
          (*it)["content"] = (*it)["content"].get<std::string>() + "\n\n" +
                             reply["amend_last_tool"].get<std::string>();
          break;
        }
      }
    }
    for (const auto &message : reply["messages"]) {
      completion.push_back(message);
    }
    return reply;
  }
  J close() { return engine.handle("close", {{"op", "close"}, {"session", session}}); }
  J score() {
    J r = {{"op", "score"},
           {"session", session},
           {"env", env},
           {"args", args},
           {"row", row},
           {"prompt", row.value("prompt", J::array())},
           {"completion", completion},
           {"answer", row.value("answer", J())}};
    return engine.handle("score", r);
  }
};

J label_row() {
  return {{"prompt",
           {{{"role", "user"}, {"content", "Judge <output>see https://a.example/x.</output>"}}}},
          {"answer", "yes"}};
}

// ---------------------------------------------------------------------------- tool-label

TEST(ToolLabel, ToolUseWithinBudgetThenFinalVerdict) {
  Driver d("tool-label", {{"dataset", "d"}, {"max_tool_calls", 3}}, label_row());
  d.tools.on("terminal", [](const ServiceCall &c, const std::atomic<bool> &) {
    return terminal_output("hit: " + c.body["command"].get<std::string>() + "\n");
  });
  const J seen =
      d.observe(assistant("", J::array({call("c1", "terminal", R"({"command": "rg -n error"})")})));
  EXPECT_FALSE(seen["stop"]);
  EXPECT_EQ(seen["route"], "tool");
  const J reply = d.respond();
  ASSERT_EQ(reply["messages"].size(), 1u);
  EXPECT_EQ(reply["messages"][0]["role"], "tool");
  EXPECT_EQ(reply["messages"][0]["tool_call_id"], "c1");
  EXPECT_EQ(
      reply["messages"][0]["content"],
      R"({"execution_time": 0.01, "exit_code": 0, "stderr": "", "stdout": "hit: rg -n error\n", "success": true, "truncated": false, "truncated_characters": 0})");
  EXPECT_TRUE(reply["amend_last_tool"].is_null());
  EXPECT_FALSE(reply["final"]);
  EXPECT_EQ(reply["state"]["jtc_tool_call_count"], 1);
  EXPECT_EQ(reply["state"]["jtc_standalone_command_count"], 1);
  // The judged output (the prompt's <output> block) is the command's standard input.
  const auto sent = d.tools.calls("terminal");
  ASSERT_EQ(sent.size(), 1u);
  EXPECT_EQ(sent[0].body["contents"], "see https://a.example/x.");
  EXPECT_EQ(sent[0].body["truncation"], 2000);
  EXPECT_EQ(sent[0].url, "http://127.0.0.1:1212/terminal");
  EXPECT_EQ(sent[0].timeout, 20);
  EXPECT_EQ(sent[0].max_retries, 3);

  const J last = d.observe(assistant(verdict_yes));
  EXPECT_TRUE(last["stop"]);
  EXPECT_EQ(last["route"], "final");
  const J values = d.score()["values"];
  EXPECT_EQ(values["valid_tool_or_final_turn"], 1.0);
  EXPECT_EQ(values["invalid_trace_penalty_reward"], 0.0);
  EXPECT_EQ(values["correct_final_label"], 1.0);
  EXPECT_EQ(values["strict_final_json"], 1.0);
}

// Known tools of one batch run at the same time; the results come back in the model's order.
TEST(ToolLabel, ABatchsCallsRunConcurrentlyAndAnswerInTheModelsOrder) {
  Driver d("tool-label", {{"dataset", "d"}, {"max_tool_calls", 8}}, label_row());
  d.tools.on("terminal", [](const ServiceCall &c, const std::atomic<bool> &cancelled) {
    // The first call is the slowest, so they finish in reverse order.
    const std::string command = c.body["command"];
    const int k = command.back() - '0';
    FakeTools::wait_or_cancel(std::chrono::milliseconds(400 - 80 * k), cancelled);
    return terminal_output("ran " + command + "\n");
  });
  J calls = J::array();
  for (int k = 0; k < 4; ++k) {
    calls.push_back(call("c" + std::to_string(k),
                         "terminal",
                         R"({"command": "echo )" + std::to_string(k) + R"("})"));
  }
  calls.push_back(call("c4", "nosuch", "{}"));
  d.observe(assistant("", calls));
  const auto started = std::chrono::steady_clock::now();
  const J reply = d.respond();
  const auto took = std::chrono::steady_clock::now() - started;
  EXPECT_LT(took, 700ms); // one after another it would be 400 + 320 + 240 + 160 ms
  ASSERT_EQ(reply["messages"].size(), 5u);
  for (int k = 0; k < 4; ++k) {
    EXPECT_EQ(reply["messages"][k]["tool_call_id"], "c" + std::to_string(k));
    EXPECT_NE(
        reply["messages"][k]["content"].get<std::string>().find("ran echo " + std::to_string(k)),
        std::string::npos);
  }
  EXPECT_NE(reply["messages"][4]["content"].get<std::string>().find("nosuch"), std::string::npos);
  EXPECT_EQ(reply["state"]["jtc_tool_call_count"], 5);
  EXPECT_EQ(reply["state"]["jtc_unknown_tool_call_count"], 1);
  EXPECT_EQ(reply["state"]["jtc_standalone_command_count"], 4);
  EXPECT_EQ(d.tools.calls("terminal").size(), 4u);
}

TEST(ToolLabel, CancelEndsEveryCallOfAConcurrentBatch) {
  Driver d("tool-label", {{"dataset", "d"}, {"max_tool_calls", 8}}, label_row());
  std::atomic<int> interrupted{0};
  d.tools.on("terminal", [&](const ServiceCall &, const std::atomic<bool> &cancelled) {
    if (FakeTools::wait_or_cancel(30s, cancelled)) {
      ++interrupted;
      throw RequestError("cancelled", "cancelled");
    }
    return terminal_output("late\n");
  });
  d.observe(assistant("",
                      J::array({call("a", "terminal", R"({"command": "sleep 30"})"),
                                call("b", "terminal", R"({"command": "sleep 30"})"),
                                call("c", "terminal", R"({"command": "sleep 30"})")})));
  std::thread canceller([&] {
    std::this_thread::sleep_for(200ms);
    d.engine.cancel("s1");
  });
  const auto started = std::chrono::steady_clock::now();
  try {
    d.respond();
    ADD_FAILURE() << "respond should have been cancelled";
  } catch (const RequestError &error) {
    EXPECT_EQ(error.kind(), "cancelled");
  }
  canceller.join();
  EXPECT_LT(std::chrono::steady_clock::now() - started, 5s);
  EXPECT_EQ(interrupted, 3);
}

TEST(ToolLabel, FinalWarningAtTheBudgetThenACallAfterItIsInvalid) {
  Driver d("tool-label", {{"dataset", "d"}, {"max_tool_calls", 2}}, label_row());
  d.tools.on("terminal", [](const ServiceCall &, const std::atomic<bool> &) {
    return terminal_output("ok\n");
  });
  EXPECT_FALSE(d.observe(
      assistant("",
                J::array({call("a", "terminal", R"({"command": "cat"})"),
                          call("b", "terminal", R"({"command": "head -n 1"})")})))["stop"]);
  const J reply = d.respond();
  ASSERT_EQ(reply["messages"].size(), 2u);
  // The final warning rides on the last tool result of the batch that reached the budget.
  const std::string last = reply["messages"][1]["content"];
  EXPECT_NE(last.find("\n\nYou have used your last tool call"), std::string::npos) << last;
  EXPECT_EQ(reply["messages"][0]["content"].get<std::string>().find("last tool call"),
            std::string::npos);
  EXPECT_TRUE(reply["state"]["jtc_final_warning_sent"]);
  EXPECT_EQ(reply["state"]["jtc_targeted_standalone_command_count"], 2);
  const J after =
      d.observe(assistant("", J::array({call("c", "terminal", R"({"command": "cat"})")})));
  EXPECT_TRUE(after["stop"]);
  EXPECT_EQ(after["route"], "invalid");
  EXPECT_EQ(d.tools.calls("terminal").size(), 2u);
  const J values = d.score()["values"];
  EXPECT_EQ(values["invalid_trace_penalty_reward"], -4.0);
  EXPECT_EQ(values["valid_tool_or_final_turn"], 0.0);
}

TEST(ToolLabel, BudgetOverrunRunsNothingAndWarnsOnTheLastToolMessage) {
  Driver d("tool-label", {{"dataset", "d"}, {"max_tool_calls", 2}}, label_row());
  d.tools.on("terminal", [](const ServiceCall &, const std::atomic<bool> &) {
    return terminal_output("ok\n");
  });
  d.observe(assistant("", J::array({call("a", "terminal", R"({"command": "rg a"})")})));
  d.respond();
  const J over = d.observe(assistant("",
                                     J::array({call("b", "terminal", R"({"command": "rg b"})"),
                                               call("c", "terminal", R"({"command": "rg c"})")})));
  EXPECT_FALSE(over["stop"]); // one last chance to answer
  EXPECT_EQ(over["route"], "invalid");
  const J reply = d.respond();
  EXPECT_TRUE(reply["messages"].empty());
  ASSERT_TRUE(reply["amend_last_tool"].is_string());
  EXPECT_NE(reply["amend_last_tool"].get<std::string>().find("last tool call"), std::string::npos);
  EXPECT_EQ(d.tools.calls("terminal").size(), 1u); // nothing of the overrunning batch ran
  EXPECT_EQ(reply["state"]["jtc_tool_call_count"], 1);
  const J last = d.observe(assistant(verdict_yes));
  EXPECT_TRUE(last["stop"]);
  EXPECT_EQ(d.score()["values"]["valid_tool_or_final_turn"], 1.0);
}

TEST(ToolLabel, OverrunWithoutAnEarlierToolMessageSendsTheWarningAsAUserMessage) {
  Driver d("tool-label", {{"dataset", "d"}, {"max_tool_calls", 1}}, label_row());
  d.observe(assistant("",
                      J::array({call("a", "terminal", R"({"command": "rg a"})"),
                                call("b", "terminal", R"({"command": "rg b"})")})));
  const J reply = d.respond();
  ASSERT_EQ(reply["messages"].size(), 1u);
  EXPECT_EQ(reply["messages"][0]["role"], "user");
  EXPECT_TRUE(reply["amend_last_tool"].is_null());
  EXPECT_TRUE(d.tools.calls().empty());
}

TEST(ToolLabel, UnknownToolIsARecoverableObservationAndPenalised) {
  Driver d("tool-label", {{"dataset", "d"}}, label_row());
  EXPECT_FALSE(
      d.observe(assistant("", J::array({call("u", "browser", R"({"url": "x"})")})))["stop"]);
  const J reply = d.respond();
  ASSERT_EQ(reply["messages"].size(), 1u);
  EXPECT_NE(reply["messages"][0]["content"].get<std::string>().find("Unknown tool 'browser'"),
            std::string::npos);
  EXPECT_EQ(reply["state"]["jtc_unknown_tool_call_count"], 1);
  EXPECT_EQ(reply["state"]["jtc_tool_call_count"], 1);
  EXPECT_EQ(reply["state"]["jtc_tool_infrastructure_stderr_count"], 1);
  EXPECT_EQ(reply["state"]["jtc_tool_command_error_count"], 0);
  EXPECT_TRUE(d.tools.calls().empty());
  d.observe(assistant(verdict_yes));
  EXPECT_DOUBLE_EQ(d.score()["values"]["unknown_tool_penalty_reward"].get<double>(), -0.1);
}

TEST(ToolLabel, MalformedArgumentsMakeTheTurnInvalid) {
  Driver d("tool-label", {{"dataset", "d"}}, label_row());
  // A structured call whose arguments are not JSON: the structured parse is discarded and the
  // (empty) content holds no verdict.
  const J broken = d.observe(assistant("", J::array({call("a", "terminal", "{not json")})));
  EXPECT_TRUE(broken["stop"]);
  EXPECT_EQ(broken["route"], "invalid");
  Driver blank("tool-label", {{"dataset", "d"}}, label_row());
  const J missing =
      blank.observe(assistant("", J::array({call("a", "terminal", R"({"command": "  "})")})));
  EXPECT_TRUE(missing["stop"]);
  EXPECT_EQ(missing["route"], "invalid");
  EXPECT_EQ(blank.score()["values"]["invalid_trace_penalty_reward"], -4.0);
}

TEST(ToolLabel, ToolErrorsBecomeObservationsAndModelCausedOnesCount) {
  Driver d("tool-label", {{"dataset", "d"}}, label_row());
  d.tools.on("terminal", [](const ServiceCall &c, const std::atomic<bool> &) -> J {
    if (c.body["command"] == "rg bad") {
      throw ToolError("RuntimeError", "Terminal execution failed with HTTP 400 at http://x: no");
    }
    if (c.body["command"] == "rg down") {
      throw ToolError("ClientConnectorError", "connection refused");
    }
    return terminal_output("", "rg: bad regex");
  });
  d.observe(assistant("",
                      J::array({call("a", "terminal", R"({"command": "rg bad"})"),
                                call("b", "terminal", R"({"command": "rg down"})"),
                                call("c", "terminal", R"({"command": "rg x("})")})));
  const J reply = d.respond();
  EXPECT_NE(reply["messages"][1]["content"].get<std::string>().find(
                R"(terminal execution request failed: ClientConnectorError: connection refused)"),
            std::string::npos);
  EXPECT_EQ(reply["state"]["jtc_tool_nonempty_stderr_count"], 3);
  EXPECT_EQ(reply["state"]["jtc_tool_command_error_count"], 2); // HTTP 400 and the regex error
  EXPECT_EQ(reply["state"]["jtc_tool_infrastructure_stderr_count"], 1);
}

// ---------------------------------------------------------------------- articulated-harness

TEST(ArticulatedHarness, SubmittingEveryRubricEndsTheEpisodeAndScoresAgainstGold) {
  J row = label_row();
  row["info"] = {
      {"expected_rubric_ids", {"r1", 2}},
      {"gold_submissions",
       {{{"rubric_id", "r1"}, {"label", "PASS"}}, {{"rubric_id", "2"}, {"label", "fail"}}}}};
  Driver d("articulated-harness", {{"dataset", "d"}, {"tools", {"terminal", "submit"}}}, row);
  d.observe(assistant(
      "",
      J::array(
          {call("a", "submit", R"({"rubric_id": "r1", "feedback": "f", "label": "pass"})"),
           call("b", "submit", R"({"rubric_id": "nope", "feedback": "f", "label": "pass"})")})));
  const J first = d.respond();
  EXPECT_FALSE(first["final"]);
  EXPECT_FALSE(first["state"]["jtc_submit_complete"]);
  const std::string accepted = first["messages"][0]["content"];
  EXPECT_EQ(
      accepted.rfind(
          R"({"data": {"accepted_rubric_id": "r1", "all_completed": false, "completed_rubric_ids": ["r1"], "replaced": false, "waiting_rubric_ids": ["2"]}, "exit_code": 0, "stderr": "", "stdout": )",
          0),
      0u)
      << accepted;
  EXPECT_NE(first["messages"][1]["content"].get<std::string>().find(
                "submit execution request failed: ValueError: "),
            std::string::npos);
  EXPECT_EQ(first["state"]["jtc_tool_command_error_count"], 1); // ValueError is the model's
  d.observe(assistant(
      "",
      J::array({call("c", "submit", R"({"rubric_id": 2, "feedback": "f", "label": "pass"})")})));
  const J second = d.respond();
  EXPECT_TRUE(second["final"]);
  EXPECT_TRUE(second["state"]["jtc_submit_complete"]);
  const J values = d.score()["values"];
  EXPECT_DOUBLE_EQ(values["rubric_completion_reward"].get<double>(), 0.5); // r1 right, 2 wrong
  EXPECT_DOUBLE_EQ(values["missing_rubric_penalty"].get<double>(), 0.0);
}

// --------------------------------------------------------------------------- podman-terminal

J podman_row() {
  return {{"prompt", {{{"role", "user"}, {"content", "Fix the bug."}}}},
          {"answer", ""},
          {"info", {{"image", "owner/task:tag"}}},
          {"tmax_trace", {{"image", "trace/image:1"}}}};
}

struct PodmanScript {
  std::string reward = "0.75";
  bool clear_ok = true;
  std::string fail_command; // this command's request fails
  ToolError failure{"RuntimeError", "container was OOM-killed"};
  std::chrono::milliseconds test_duration{0};
};

void script_podman(FakeTools &tools, std::shared_ptr<PodmanScript> script) {
  tools.on("podman_start", [](const ServiceCall &c, const std::atomic<bool> &) -> J {
    return {{"affinity_id", "ctr-" + c.session}, {"container_id", "ctr-" + c.session}};
  });
  tools.on("podman_close", [](const ServiceCall &, const std::atomic<bool> &) -> J {
    return {{"removed", true}};
  });
  tools.on(
      "podman_execute", [script](const ServiceCall &c, const std::atomic<bool> &cancelled) -> J {
        const std::string command = c.body["command"];
        if (command == script->fail_command) {
          throw script->failure;
        }
        if (command == "echo TERMINAL_COMPLETE" || command == "echo 'TERMINAL_COMPLETE'") {
          return {{"stdout", "TERMINAL_COMPLETE\n"},
                  {"stderr", ""},
                  {"success", true},
                  {"exit_code", 0}};
        }
        if (command.rfind("rm -f -- ", 0) == 0) {
          return {{"stdout", ""},
                  {"stderr", ""},
                  {"success", script->clear_ok},
                  {"exit_code", script->clear_ok ? 0 : 1}};
        }
        if (command == "bash /tests/test.sh") {
          if (FakeTools::wait_or_cancel(script->test_duration, cancelled)) {
            throw ToolError("CancelledError", "cancelled");
          }
          return {{"stdout", "1 passed"}, {"stderr", ""}, {"success", true}, {"exit_code", 0}};
        }
        if (command.rfind("if [ -f ", 0) == 0) {
          const std::string out =
              script->reward.empty() ? "" : "__PRIMEBEAKER_REWARD_FILE__\n" + script->reward + "\n";
          return {{"stdout", out}, {"stderr", ""}, {"success", true}, {"exit_code", 0}};
        }
        return {{"stdout", "file.txt\n"}, {"stderr", ""}, {"success", true}, {"exit_code", 0}};
      });
}

std::vector<std::pair<std::string, double>> command_log(FakeTools &tools) {
  std::vector<std::pair<std::string, double>> log;
  for (const auto &c : tools.calls("podman_execute")) {
    log.emplace_back(c.body["command"].get<std::string>(), c.body["timeout"].get<double>());
  }
  return log;
}

J bash(const std::string &id, const std::string &command) {
  return assistant("", J::array({call(id, "bash", J{{"command", command}}.dump())}));
}

TEST(PodmanTerminal, CompletionRunsThePrivateTestsAndScoresTheRewardFile) {
  Driver d("podman-terminal", {{"dataset", "d"}}, podman_row());
  auto script = std::make_shared<PodmanScript>();
  script_podman(d.tools, script);
  const J opened = d.open();
  EXPECT_FALSE(opened["state"]["podman_failure"]);
  const auto starts = d.tools.calls("podman_start");
  ASSERT_EQ(starts.size(), 1u);
  EXPECT_EQ(starts[0].body["image"], "docker.io/owner/task:tag"); // not the trace's image
  EXPECT_EQ(starts[0].body["service"], "podman");
  EXPECT_EQ(starts[0].body["client_id"].get<std::string>().rfind("primebeaker-solver-", 0), 0u);
  EXPECT_EQ(starts[0].body["client_id"].get<std::string>().size(),
            std::string("primebeaker-solver-").size() + 32);
  EXPECT_EQ(starts[0].timeout, 600);
  EXPECT_TRUE(command_log(d.tools).empty()); // nothing replayed at setup

  EXPECT_FALSE(d.observe(bash("a", "ls"))["stop"]);
  const J first = d.respond();
  EXPECT_EQ(first["messages"][0]["content"], "```stdout\nfile.txt\n\n```\n\n```stderr\n\n```");
  EXPECT_FALSE(first["final"]);
  EXPECT_FALSE(d.observe(bash("b", "echo TERMINAL_COMPLETE"))["stop"]);
  const J done = d.respond();
  EXPECT_TRUE(done["final"]);
  EXPECT_TRUE(done["state"]["podman_terminal_complete"]);
  EXPECT_TRUE(done["state"]["podman_tests_ran"]);
  EXPECT_TRUE(done["state"]["podman_reward_file_present"]);
  EXPECT_EQ(done["state"]["podman_reward_file_score"], 0.75);
  const auto log = command_log(d.tools);
  ASSERT_EQ(log.size(), 5u);
  EXPECT_EQ(log[0], std::make_pair(std::string("ls"), 60.0));
  EXPECT_EQ(log[1], std::make_pair(std::string("echo TERMINAL_COMPLETE"), 60.0));
  EXPECT_EQ(log[2], std::make_pair(std::string("rm -f -- /logs/verifier/reward.txt"), 600.0));
  EXPECT_EQ(log[3], std::make_pair(std::string("bash /tests/test.sh"), 600.0));
  EXPECT_EQ(log[4].first.rfind("if [ -f /logs/verifier/reward.txt ]", 0), 0u);
  EXPECT_EQ(log[4].second, 600.0);
  const auto executes = d.tools.calls("podman_execute");
  EXPECT_EQ(executes[0].body["workdir"], "/home/user");
  EXPECT_EQ(executes[0].body["affinity_id"], "ctr-s1");
  EXPECT_EQ(executes[0].timeout, 150);

  const J closed = d.close();
  EXPECT_EQ(closed["state"]["podman_cleanup"], (J{{"removed", true}}));
  const J values = d.score()["values"];
  EXPECT_EQ(values["task_reward_file"], 0.75);
  EXPECT_EQ(values["episode_terminated"], 1.0);
  EXPECT_EQ(values["podman_failed_reward"], 0.0);
  EXPECT_EQ(values["podman_test_success_metric"], 1.0);
}

TEST(PodmanTerminal, TestSourceIsInstalledThroughStdinAndRewardsAreClamped) {
  J row = podman_row();
  row["info"]["test_final_state"] = "def test(): assert True\n";
  Driver d("podman-terminal", {{"dataset", "d"}, {"reward_file_path", "/logs/it's.txt"}}, row);
  auto script = std::make_shared<PodmanScript>();
  script->reward = "1.5";
  script_podman(d.tools, script);
  d.open();
  d.observe(bash("a", "echo 'TERMINAL_COMPLETE'"));
  const J done = d.respond();
  EXPECT_EQ(done["state"]["podman_reward_file_score"], 1.0);
  const auto executes = d.tools.calls("podman_execute");
  ASSERT_EQ(executes.size(), 5u);
  EXPECT_EQ(executes[1].body["command"], "rm -f -- '/logs/it'\"'\"'s.txt'");
  const std::string install = executes[2].body["command"];
  EXPECT_EQ(install.rfind("python3 -c '", 0), 0u);
  EXPECT_NE(install.find(" /tmp/primebeaker-test-final-state.py"), std::string::npos);
  EXPECT_EQ(install.find("assert True"), std::string::npos); // the source is stdin only
  EXPECT_EQ(executes[2].body["stdin"], "def test(): assert True\n");
}

TEST(PodmanTerminal, RewardFileEdgeCases) {
  const auto run = [](const std::string &reward, bool clear_ok) {
    Driver d("podman-terminal", {{"dataset", "d"}}, podman_row());
    auto script = std::make_shared<PodmanScript>();
    script->reward = reward;
    script->clear_ok = clear_ok;
    script_podman(d.tools, script);
    d.open();
    d.observe(bash("a", "echo TERMINAL_COMPLETE"));
    return d.respond()["state"];
  };
  const J missing = run("", true);
  EXPECT_FALSE(missing["podman_reward_file_present"]);
  EXPECT_EQ(missing["podman_reward_file_score"], 0.0);
  const J invalid = run("not-a-number", true);
  EXPECT_TRUE(invalid["podman_reward_file_present"]);
  EXPECT_EQ(invalid["podman_reward_file_score"], 0.0);
  EXPECT_EQ(invalid["podman_reward_file_error"], "invalid reward file value: 'not-a-number'");
  EXPECT_EQ(run("nan", true)["podman_reward_file_score"], 0.0); // the reference scored 1.0
  EXPECT_EQ(run("-inf", true)["podman_reward_file_score"], 0.0);
  EXPECT_EQ(run(" 1_0 ", true)["podman_reward_file_score"], 1.0);
  const J unclear = run("1", false);
  EXPECT_EQ(unclear["podman_reward_file_score"], 0.0);
  EXPECT_FALSE(unclear["podman_reward_file_present"]);
  EXPECT_EQ(unclear["podman_reward_file_error"], "could not clear reward file before tests");
}

TEST(PodmanTerminal, SetupFailureIsRecordedAndScoresMinusOne) {
  J row = podman_row();
  row["info"].erase("image"); // only the trace names an image, which must not be used
  Driver d("podman-terminal", {{"dataset", "d"}}, row);
  script_podman(d.tools, std::make_shared<PodmanScript>());
  const J state = d.open()["state"];
  EXPECT_TRUE(state["podman_failure"]);
  EXPECT_EQ(state["podman_failure_phase"], "setup");
  EXPECT_EQ(state["podman_failure_type"], "ValueError");
  EXPECT_TRUE(state["jtc_infrastructure_failure"]);
  EXPECT_TRUE(d.tools.calls("podman_start").empty());
  EXPECT_DOUBLE_EQ(d.score()["values"]["podman_failed_reward"].get<double>(), -1.0);

  Driver refused("podman-terminal", {{"dataset", "d"}}, podman_row());
  refused.tools.on("podman_start", [](const ServiceCall &, const std::atomic<bool> &) -> J {
    throw ToolError("RuntimeError", "Podman execution failed after 3 attempts at http://g: boom");
  });
  const J refused_state = refused.open()["state"];
  EXPECT_EQ(refused_state["podman_failure_phase"], "setup");
  EXPECT_EQ(refused_state["podman_failure_type"], "RuntimeError");
  EXPECT_EQ(refused_state["podman_failure_message"],
            "Podman execution failed after 3 attempts at http://g: boom");
}

TEST(PodmanTerminal, ExecuteFailureEndsTheEpisodeWithoutTests) {
  Driver d("podman-terminal", {{"dataset", "d"}}, podman_row());
  auto script = std::make_shared<PodmanScript>();
  script->fail_command = "echo TERMINAL_COMPLETE";
  script_podman(d.tools, script);
  d.open();
  d.observe(bash("a", "echo TERMINAL_COMPLETE"));
  const J reply = d.respond();
  EXPECT_TRUE(reply["final"]);
  EXPECT_EQ(reply["state"]["podman_failure_phase"], "execute");
  EXPECT_EQ(reply["state"]["podman_failure_type"], "RuntimeError");
  EXPECT_EQ(reply["state"]["podman_failure_message"], "container was OOM-killed");
  EXPECT_TRUE(reply["state"]["podman_failure_oom"]);
  EXPECT_FALSE(reply["state"]["podman_tests_ran"]);
  EXPECT_EQ(command_log(d.tools).size(), 1u);
  const J values = d.score()["values"];
  EXPECT_DOUBLE_EQ(values["podman_failed_reward"].get<double>(), -1.0);
  EXPECT_EQ(values["podman_oom_metric"], 1.0);
}

TEST(PodmanTerminal, TestPhaseFailureIsRecorded) {
  Driver d("podman-terminal", {{"dataset", "d"}}, podman_row());
  auto script = std::make_shared<PodmanScript>();
  script->fail_command = "bash /tests/test.sh";
  script->failure = ToolError("TimeoutError", "Podman execution failed after 3 attempts");
  script_podman(d.tools, script);
  d.open();
  d.observe(bash("a", "echo TERMINAL_COMPLETE"));
  const J reply = d.respond();
  EXPECT_TRUE(reply["final"]);
  EXPECT_TRUE(reply["state"]["podman_terminal_complete"]);
  EXPECT_EQ(reply["state"]["podman_failure_phase"], "test");
  EXPECT_EQ(reply["state"]["podman_failure_type"], "TimeoutError");
  EXPECT_FALSE(reply["state"]["podman_failure_oom"]);
}

TEST(PodmanTerminal, MissingMarkerRunsNoTestsAndScoresZero) {
  Driver d("podman-terminal", {{"dataset", "d"}}, podman_row());
  script_podman(d.tools, std::make_shared<PodmanScript>());
  d.open();
  d.observe(bash("a", "echo TERMINAL_COMPLETE && touch /tmp/x"));
  EXPECT_FALSE(d.respond()["final"]);
  d.observe(bash("b", "printf TERMINAL_COMPLETE"));
  EXPECT_FALSE(d.respond()["final"]);
  const J text = d.observe(assistant("I am done."));
  EXPECT_TRUE(text["stop"]);
  EXPECT_EQ(text["route"], "invalid");
  EXPECT_EQ(command_log(d.tools).size(), 2u); // no grading
  EXPECT_FALSE(d.close()["state"]["podman_tests_ran"]);
  EXPECT_EQ(d.tools.calls("podman_close").size(), 1u);
  const J score = d.score();
  EXPECT_EQ(score["values"]["task_reward_file"], 0.0);
  EXPECT_EQ(score["values"]["episode_terminated"], 0.0);
}

TEST(PodmanTerminal, FakeToolsArePenalisedAndSubmitNeverEndsTheEpisode) {
  J row = podman_row();
  row["info"]["expected_rubric_ids"] = {"r1"};
  Driver d("podman-terminal", {{"dataset", "d"}}, row);
  script_podman(d.tools, std::make_shared<PodmanScript>());
  d.open();
  d.observe(assistant(
      "",
      J::array({call("a", "python", R"({"code": "1"})"),
                call("b", "terminal", R"({"command": "ls"})"),
                call("c", "submit", R"({"rubric_id": "r1", "feedback": "f", "label": "pass"})")})));
  const J reply = d.respond();
  EXPECT_FALSE(reply["final"]);
  EXPECT_EQ(reply["state"]["jtc_unknown_tool_call_count"], 2);
  d.close();
  const J values = d.score()["values"];
  EXPECT_DOUBLE_EQ(values["fake_tool_penalty"].get<double>(), -2.0);
  EXPECT_DOUBLE_EQ(values["fake_tool_count_metric"].get<double>(), 2.0);
}

TEST(PodmanTerminal, CancelInterruptsASlowTest) {
  Driver d("podman-terminal", {{"dataset", "d"}}, podman_row());
  auto script = std::make_shared<PodmanScript>();
  script->test_duration = 20s;
  script_podman(d.tools, script);
  d.open();
  d.observe(bash("a", "echo TERMINAL_COMPLETE"));
  std::thread canceller([&] {
    std::this_thread::sleep_for(200ms);
    d.engine.cancel("s1");
  });
  const auto started = std::chrono::steady_clock::now();
  try {
    d.respond();
    ADD_FAILURE() << "respond should have been cancelled";
  } catch (const RequestError &error) {
    EXPECT_EQ(error.kind(), "cancelled");
  }
  canceller.join();
  EXPECT_LT(std::chrono::steady_clock::now() - started, 5s);
}

// ----------------------------------------------------------------------- terminal-tool-label

TEST(TerminalToolLabel, RawResultAndTheTemplateWarningOnTheLastAllowedCall) {
  Driver d("terminal-tool-label", {{"dataset", "d"}, {"max_terminal_calls", 2}}, label_row());
  int n = 0;
  d.tools.on("terminal", [&n](const ServiceCall &, const std::atomic<bool> &) -> J {
    if (++n == 1) {
      throw ToolError("RuntimeError", "down");
    }
    return {{"stdout", "x"}, {"stderr", ""}, {"success", true}, {"exit_code", 0}};
  });
  EXPECT_FALSE(d.observe(
      assistant("", J::array({call("t1", "terminal", R"({"command": "rg x"})")})))["stop"]);
  const J first = d.respond();
  EXPECT_EQ(
      first["messages"][0]["content"],
      R"({"returncode": null, "stderr": "Terminal execution failed: down", "stdout": "", "success": false})");
  EXPECT_EQ(first["messages"][0]["tool_call_id"], "t1");
  EXPECT_FALSE(d.observe(
      assistant("", J::array({call("t2", "terminal", R"({"command": "rg y"})")})))["stop"]);
  const std::string second = d.respond()["messages"][0]["content"];
  EXPECT_EQ(second.rfind(R"({"exit_code": 0, "stderr": "", "stdout": "x", "success": true})"
                         "\n\nThat was your last allowed terminal call",
                         0),
            0u)
      << second;
  const J after =
      d.observe(assistant("", J::array({call("t3", "terminal", R"({"command": "rg z"})")})));
  EXPECT_TRUE(after["stop"]);
  EXPECT_EQ(after["route"], "terminal");
  EXPECT_DOUBLE_EQ(d.score()["values"]["invalid_trace_penalty_reward"].get<double>(), -1.0);
}

TEST(TerminalToolLabel, TextCallsRouteTerminalButRunNothingAndFinalStops) {
  Driver d("terminal-tool-label", {{"dataset", "d"}}, label_row());
  const J seen = d.observe(assistant(
      R"(<tool_call>{"name": "terminal", "arguments": {"command": "rg a"}}</tool_call>)"));
  EXPECT_FALSE(seen["stop"]);
  EXPECT_EQ(seen["route"], "terminal");
  EXPECT_TRUE(d.respond()["messages"].empty());
  EXPECT_TRUE(d.tools.calls().empty());
  const J two = d.observe(assistant("",
                                    J::array({call("a", "terminal", R"({"command": "rg a"})"),
                                              call("b", "terminal", R"({"command": "rg b"})")})));
  EXPECT_TRUE(two["stop"]); // two calls: not a terminal route, and no verdict either
  EXPECT_EQ(two["route"], "invalid");
}

// --------------------------------------------------------------------------- code-tool-label

TEST(CodeToolLabel, CodeTurnRunsPythonThenTheVerdictEnds) {
  Driver d("code-tool-label", {{"dataset", "d"}, {"code_output_truncation", 40}}, label_row());
  d.tools.on("python", [](const ServiceCall &, const std::atomic<bool> &) -> J {
    return {{"stdout", std::string(100, 'x')}, {"stderr", ""}, {"success", true}};
  });
  const J seen = d.observe(assistant("<code>\n```python\nprint(len(context))\n```\n</code>"));
  EXPECT_FALSE(seen["stop"]);
  EXPECT_EQ(seen["route"], "code");
  const J reply = d.respond();
  ASSERT_EQ(reply["messages"].size(), 1u);
  EXPECT_EQ(reply["messages"][0]["tool_call_id"], "python");
  EXPECT_LT(reply["messages"][0]["content"].get<std::string>().size(), 100u); // truncated
  const auto sent = d.tools.calls("python");
  ASSERT_EQ(sent.size(), 1u);
  EXPECT_EQ(sent[0].body["code"], "print(len(context))");
  EXPECT_EQ(sent[0].body["context_payload"], "see https://a.example/x.");
  EXPECT_EQ(sent[0].body["max_runtime"], 2);
  EXPECT_EQ(sent[0].body["model"], "python");
  EXPECT_TRUE(d.observe(assistant("<feedback>ok</feedback><label>yes</label>"))["stop"]);
  const J values = d.score()["values"];
  EXPECT_EQ(values["valid_first_turn"], 1.0);
  EXPECT_EQ(values["correct_final_label"], 1.0);
}

TEST(CodeToolLabel, ServiceFailureIsShownAndAnInvalidFirstTurnStops) {
  Driver d("code-tool-label", {{"dataset", "d"}, {"tool_role", false}}, label_row());
  d.tools.on("python", [](const ServiceCall &, const std::atomic<bool> &) -> J {
    throw ToolError("RuntimeError", "Code execution failed after 3 attempts at u: refused");
  });
  d.observe(assistant("<code>```py\n1\n```</code>"));
  const J reply = d.respond();
  EXPECT_EQ(reply["messages"][0]["role"], "user");
  EXPECT_NE(reply["messages"][0]["content"].get<std::string>().find(
                "Code execution failed: Code execution failed after 3 attempts"),
            std::string::npos);
  Driver bad("code-tool-label", {{"dataset", "d"}}, label_row());
  EXPECT_TRUE(bad.observe(assistant("no idea"))["stop"]);
  EXPECT_EQ(bad.score()["values"]["valid_first_turn"], 0.0);
}

// ------------------------------------------------------------------------------ search agents

J search_row() {
  return {{"prompt", {{{"role", "user"}, {"content", "Who wrote X?"}}}}, {"answer", "Ada"}};
}

void script_search(FakeTools &tools) {
  tools.on("search", [](const ServiceCall &, const std::atomic<bool> &) -> J {
    return {
        {"success", true},
        {"data",
         {{"organic", {{{"title", "X"}, {"snippet", "by Ada"}, {"link", "https://x.example"}}}}}}};
  });
  tools.on("fetch", [](const ServiceCall &, const std::atomic<bool> &) -> J {
    return {{"success", true}, {"data", {{"title", "X"}, {"content", " Ada wrote X. "}}}};
  });
  tools.on("webterminal", [](const ServiceCall &c, const std::atomic<bool> &) -> J {
    return terminal_output("", c.body["command"] == "nosuch" ? "nosuch: not found" : "");
  });
}

TEST(SearchAgent, ToolsWithinBudgetThenExactMatch) {
  Driver d("search-agent-dataset", {{"dataset", "d"}, {"max_tool_calls", 3}}, search_row());
  script_search(d.tools);
  EXPECT_FALSE(d.observe(
      assistant("",
                J::array({call("s", "search", R"({"query": "who wrote X"})"),
                          call("w",
                               "webterminal",
                               R"({"command": "browse https://x.example | rg Ada"})")})))["stop"]);
  const J reply = d.respond();
  ASSERT_EQ(reply["messages"].size(), 2u);
  EXPECT_EQ(reply["messages"][0]["content"], "**X**\nby Ada\nSource: https://x.example");
  EXPECT_EQ(reply["state"]["jtc_tool_call_count"], 2);
  const auto searches = d.tools.calls("search");
  EXPECT_EQ(searches[0].body,
            (J{{"mode", "query"},
               {"query", "who wrote X"},
               {"num_results", 10},
               {"parameters", J::object()}}));
  EXPECT_EQ(searches[0].timeout, 65);
  EXPECT_EQ(d.tools.calls("webterminal")[0].body["local_search_server_url"],
            "http://127.0.0.1:1212/search");
  const J last = d.observe(assistant("Report.\n```json\n{\"answer\": \"ada\"}\n```\n"));
  EXPECT_TRUE(last["stop"]); // no tool calls
  const J values = d.score()["values"];
  EXPECT_EQ(values["final_json_format"], 1.0);
  EXPECT_EQ(values["answer_exact_match"], 1.0);
}

TEST(SearchAgent, MalformedArgumentsUseNoBudgetAndOverBudgetCallsAreDropped) {
  Driver d("search-agent-dataset", {{"dataset", "d"}, {"max_tool_calls", 2}}, search_row());
  script_search(d.tools);
  d.observe(assistant("",
                      J::array({call("m", "search", "{broken"),
                                call("s1", "search", R"({"query": "a"})"),
                                call("u", "lookup", R"({"q": "a"})"),
                                call("s3", "search", R"({"query": "c"})")})));
  const J reply = d.respond();
  ASSERT_EQ(reply["messages"].size(), 3u); // s3 is past the budget: dropped, no message
  EXPECT_EQ(reply["messages"][0]["content"].get<std::string>().rfind("Error: ", 0), 0u);
  EXPECT_NE(reply["messages"][2]["content"].get<std::string>().find("unknown tool 'lookup'"),
            std::string::npos);
  EXPECT_EQ(reply["state"]["jtc_tool_call_count"], 2);
  // The final tool-call warning follows the last tool message.
  EXPECT_NE(reply["messages"][2]["content"].get<std::string>().find(
                "\n\nYou have used all of your tool calls"),
            std::string::npos);
  EXPECT_EQ(d.tools.calls("search").size(), 1u);
  const J next = d.observe(assistant("", J::array({call("s4", "search", R"({"query": "d"})")})));
  EXPECT_TRUE(next["stop"]); // tool calls at the budget stop the episode
}

TEST(SearchAgentWebterminalJudge, TurnWarningStderrPenaltyAndJudgeScore) {
  Driver d("search-agent-webterminal-judge",
           {{"dataset", "d"},
            {"judge_model_path", "m/judge"},
            {"search_server_url", "http://g:1/search"}},
           search_row());
  script_search(d.tools);
  d.tools.on("judge", [](const ServiceCall &, const std::atomic<bool> &) -> J {
    return {{"judgments", {{{"rubric_index", 0}, {"label", "pass"}, {"feedback", "ok"}}}}};
  });
  d.observe(assistant("", J::array({call("w", "webterminal", R"({"command": "nosuch"})")})));
  const J early = d.respond({{"trajectory_len", 1}, {"max_turns", 151}});
  EXPECT_EQ(early["messages"][0]["content"].get<std::string>().find("final 10%"),
            std::string::npos);
  EXPECT_EQ(early["state"]["jtc_tool_command_error_count"], 1);
  d.observe(assistant("", J::array({call("s", "search", R"({"query": "q"})")})));
  const J late = d.respond({{"trajectory_len", 140}, {"max_turns", 151}});
  EXPECT_NE(late["messages"][0]["content"].get<std::string>().find("final 10% of your turn budget"),
            std::string::npos);
  d.observe(assistant("The answer is Ada."));
  const J scored = d.score();
  EXPECT_EQ(scored["values"]["judge_answer"], 1.0);
  EXPECT_DOUBLE_EQ(scored["values"]["tool_stderr_penalty_reward"].get<double>(), -0.05);
  EXPECT_EQ(scored["values"]["missing_final_answer_penalty_reward"], 0.0);
  const auto judged = d.tools.calls("judge");
  ASSERT_EQ(judged.size(), 1u);
  EXPECT_EQ(judged[0].url, "http://g:1/judge");
  EXPECT_EQ(judged[0].body["output"], "The answer is Ada.");
  EXPECT_EQ(judged[0].body["model"], "m/judge");
  EXPECT_EQ(scored["info_update"]["judge"]["response"]["judgments"][0]["label"], "pass");
}

// Single-turn scoring through the engine: the judge through the tool backend, the RubricHub
// audit under its own key, the shadow judge's metrics in the reply's `metrics`.
TEST(RubricHub, ScoreCallsTheJudgeAndTheShadowThroughTheToolBackend) {
  FakeTools tools;
  EnvironmentEngine engine{tools};
  tools.on("judge", [](const ServiceCall &c, const std::atomic<bool> &) -> J {
    const bool shadow = c.body["model"] == "shadow/m";
    return {{"judgments", {{{"rubric_index", 0}, {"label", shadow ? "fail" : "pass"}}}}};
  });
  const std::string answer =
      R"({"record_id":"r1","rubrics":[{"original_index":0,"text":"is kind","weight":1.0}]})";
  const J args = {{"judge_model_path", "m"},
                  {"shadow_judge_model_path", "shadow/m"},
                  {"shadow_judge_server_url", "http://s:1/judge"},
                  {"shadow_judge_sample_rate", 1.0}};
  J request = {{"op", "score"},
               {"session", "t1"},
               {"env", "rubrichub-judge"},
               {"args", args},
               {"row", {{"prompt", "Be kind."}, {"answer", answer}}},
               {"prompt", "Be kind."},
               {"completion", J::array({assistant("Sure, gladly.")})},
               {"answer", answer},
               {"trajectory_id", "t1"},
               {"cache_salt", "step-3"}};
  // Scoring with a judge call is not answered on the reading thread.
  EXPECT_FALSE(engine.handle_now("score", request));
  const J scored = engine.handle("score", request);
  EXPECT_EQ(scored["values"]["jtc_weighted_score"], 1.0);
  EXPECT_EQ(scored["info_update"]["jtc_rubrichub_judge"]["reward"], 1.0);
  EXPECT_EQ(scored["info_update"]["jtc_rubrichub_shadow_judge"]["policy_version"], "step-3");
  EXPECT_EQ(scored["metrics"]["shadow_judge_label_agreement"], 0.0);
  const auto judged = tools.calls("judge");
  ASSERT_EQ(judged.size(), 2u);
  EXPECT_EQ(judged[0].url, "http://127.0.0.1:1212/judge");
  EXPECT_EQ(judged[0].session, "t1");
  EXPECT_EQ(judged[1].url, "http://s:1/judge");
  EXPECT_EQ(judged[1].timeout, 300);
  EXPECT_EQ(judged[1].max_retries, 1);
  // A label score needs no service: answered at once.
  J label = {{"op", "score"},
             {"session", "t2"},
             {"env", "label"},
             {"args", {{"dataset", "d"}}},
             {"completion", J::array({assistant("<feedback>ok</feedback><label>Yes</label>")})},
             {"answer", "yes"}};
  const auto now = engine.handle_now("score", label);
  ASSERT_TRUE(now);
  EXPECT_EQ((*now)["values"]["correct_label"], 1.0);
}

TEST(SearchVisitAgent, VisitRendersThePageAndJudgeVariantSaysNoJson) {
  Driver d("search-visit-agent-judge",
           {{"dataset", "d"}, {"judge_model_path", "m"}, {"max_tool_calls", 1}},
           search_row());
  script_search(d.tools);
  d.observe(assistant("", J::array({call("v", "visit", R"({"url": " https://x.example "})")})));
  const J reply = d.respond();
  const std::string content = reply["messages"][0]["content"];
  EXPECT_EQ(content.rfind("# X\n\nAda wrote X.\n\n", 0), 0u) << content;
  EXPECT_NE(content.find("No JSON format is required"), std::string::npos);
  EXPECT_EQ(
      d.tools.calls("fetch")[0].body,
      (J{{"mode", "url"}, {"url", "https://x.example"}, {"model_path", "localsearch:bc-v2-72k"}}));
}

TEST(Describe, SearchVisitAgentsAdvertiseVisitAndPodmanNamesItsMarker) {
  const J visit = pb::environments_runtime::describe("search-agent-visit", {{"dataset", "d"}});
  ASSERT_EQ(visit["tool_defs"].size(), 2u);
  EXPECT_EQ(visit["tool_defs"][1]["name"], "visit");
  EXPECT_EQ(visit["tool_defs"][0]["parameters"]["required"], J::array({"query"}));
  const J podman = pb::environments_runtime::describe(
      "podman-terminal", {{"dataset", "d"}, {"completion_marker", "ALL_DONE"}});
  EXPECT_NE(podman["tool_defs"][0]["description"].get<std::string>().find("echo ALL_DONE"),
            std::string::npos);
}

} // namespace
