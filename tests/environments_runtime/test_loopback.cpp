// SPDX-License-Identifier: MIT
// The real binary against loopback fakes: `environments rollout` against a fake
// OpenAI-compatible server and terminal service, and 200 sessions through one `serve` child
// while one Podman test is in flight.
#include "../tool_services/fake_service.hpp"
#include "serve_child.hpp"
#include "test_support.hpp"

#include <primebeaker/core/text.hpp>

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <set>
#include <thread>

namespace {

using json = nlohmann::json;
using pb::test::FakeReply;
using pb::test::FakeService;
using pb::test::RecordedRequest;
using pb::test::run_primebeaker;
using pb::test::ServeChild;
using namespace std::chrono_literals;

std::string chat_reply(const json &message) {
  return json{{"id", "x"},
              {"object", "chat.completion"},
              {"choices", {{{"index", 0}, {"message", message}, {"finish_reason", "stop"}}}}}
      .dump();
}

std::string terminal_reply(const std::string &stdout_text) {
  return json{{"stdout", stdout_text},
              {"stderr", ""},
              {"success", true},
              {"exit_code", 0},
              {"execution_time", 0.5},
              {"truncated", false},
              {"truncated_characters", 0}}
      .dump();
}

TEST(RolloutBinary, ToolLabelAgainstAFakeModelAndTerminal) {
  FakeService model;
  FakeService terminal;
  model.script(
      {FakeReply{200,
                 chat_reply({{"role", "assistant"},
                             {"content", nullptr},
                             {"tool_calls",
                              {{{"id", "call_1"},
                                {"type", "function"},
                                {"function",
                                 {{"name", "terminal"},
                                  {"arguments", R"({"command": "rg -c error"})"}}}}}}}),
                 0ms},
       FakeReply{200,
                 chat_reply({{"role", "assistant"},
                             {"content", R"({"feedback": "two errors", "label": "fail"})"}}),
                 0ms}});
  terminal.handle([](const RecordedRequest &) {
    return FakeReply{200, terminal_reply("2\n"), 0ms};
  });
  const json args = {{"dataset", "unused.jsonl"},
                     {"max_tool_calls", 4},
                     {"terminal_server_url", terminal.url("/terminal")}};
  const json row = {
      {"prompt", {{{"role", "user"}, {"content", "Judge this. <output>error error</output>"}}}},
      {"answer", "fail"}};
  const auto result = run_primebeaker({"environments",
                                       "rollout",
                                       "tool-label",
                                       "--args",
                                       args.dump(),
                                       "--row",
                                       row.dump(),
                                       "--endpoint",
                                       model.url("/v1"),
                                       "--model",
                                       "judge-model"});
  ASSERT_EQ(result.exit_code, 0) << result.err;
  const json out = json::parse(result.out);
  EXPECT_EQ(out["turns"], 2);
  EXPECT_EQ(out["stop_condition"], "stop_after_final_or_invalid");
  ASSERT_EQ(out["transcript"].size(), 4u); // user, assistant call, tool result, verdict
  EXPECT_EQ(out["transcript"][2]["role"], "tool");
  EXPECT_EQ(out["transcript"][2]["tool_call_id"], "call_1");
  EXPECT_NE(out["transcript"][2]["content"].get<std::string>().find(R"("stdout": "2\n")"),
            std::string::npos);
  EXPECT_EQ(out["state"]["jtc_tool_call_count"], 1);
  EXPECT_EQ(out["state"]["jtc_route"], "final");
  EXPECT_EQ(out["values"]["correct_final_label"], 1.0);
  // valid turn + valid format + strict JSON + correct label (the other terms are 0)
  EXPECT_DOUBLE_EQ(out["reward"].get<double>(), 4.0);

  const auto asked = model.requests();
  ASSERT_EQ(asked.size(), 2u);
  EXPECT_EQ(asked[0].path, "/v1/chat/completions");
  const auto first = asked[0].json();
  EXPECT_EQ(first["model"], "judge-model");
  EXPECT_EQ(first["tools"][0]["type"], "function");
  EXPECT_EQ(first["tools"][0]["function"]["name"], "terminal");
  const auto second = asked[1].json();
  ASSERT_EQ(second["messages"].size(), 3u);
  EXPECT_EQ(second["messages"][2]["role"], "tool");
  const auto ran = terminal.requests();
  ASSERT_EQ(ran.size(), 1u);
  EXPECT_EQ(ran[0].json()["contents"], "error error");
  EXPECT_EQ(ran[0].json()["command"], "rg -c error");
}

// The endpoint's `usage` is counted, so the search agents' token warning fires and the budget
// stops the rollout (Verifiers' max_total_completion_tokens).
TEST(RolloutBinary, TokenUsageFeedsTheTokenWarningAndTheBudget) {
  FakeService model;
  FakeService services; // /search and /judge
  auto with_usage = [](const json &message, int completion_tokens) {
    json reply = json::parse(chat_reply(message));
    reply["usage"] = {{"prompt_tokens", 100}, {"completion_tokens", completion_tokens}};
    return reply.dump();
  };
  const json search_call = {
      {"role", "assistant"},
      {"content", ""},
      {"tool_calls",
       {{{"id", "s1"},
         {"type", "function"},
         {"function", {{"name", "search"}, {"arguments", R"({"query": "ada"})"}}}}}}};
  model.script({FakeReply{200, with_usage(search_call, 950), 0ms},
                FakeReply{200, with_usage(search_call, 60), 0ms}});
  services.handle([](const RecordedRequest &request) {
    if (request.path == "/judge") {
      return FakeReply{200, R"({"judgments": [{"rubric_index": 0, "label": "pass"}]})", 0ms};
    }
    return FakeReply{
        200, R"({"results": [{"title": "Ada", "url": "https://a.example", "snippet": "x"}]})", 0ms};
  });
  const json args = {{"dataset", "unused.jsonl"},
                     {"judge_model_path", "m/judge"},
                     {"search_server_url", services.url("/search")},
                     {"terminal_server_url", services.url("/terminal")}};
  const json row = {{"question", "Who?"}, {"answer", "Ada"}};
  const auto result = run_primebeaker({"environments",
                                       "rollout",
                                       "search-agent-webterminal-judge",
                                       "--args",
                                       args.dump(),
                                       "--row",
                                       row.dump(),
                                       "--endpoint",
                                       model.url("/v1"),
                                       "--model",
                                       "policy",
                                       "--max-total-completion-tokens",
                                       "1000"});
  ASSERT_EQ(result.exit_code, 0) << result.err;
  const json out = json::parse(result.out);
  EXPECT_EQ(out["turns"], 2);
  EXPECT_EQ(out["stop_condition"], "max_total_completion_tokens_reached");
  EXPECT_EQ(out["usage"], (json{{"prompt_tokens", 200}, {"completion_tokens", 1010}}));
  // 950 of 1000 used: 50 left <= 10% of the budget, so the first tool result carries the warning.
  const json &transcript = out["transcript"];
  ASSERT_GE(transcript.size(), 4u);
  const std::string tool = transcript[transcript.size() - 2]["content"];
  EXPECT_EQ(transcript[transcript.size() - 2]["role"], "tool");
  EXPECT_NE(tool.find("final 10% of your token budget"), std::string::npos) << tool;
  EXPECT_EQ(model.requests().size(), 2u);
}

// `environments score` scores service-backed environments too: the judge is called per line.
TEST(ScoreBinary, RubricHubRolloutsAreJudgedAndAFailedJudgeFailsOnlyItsLine) {
  FakeService judge;
  judge.script({FakeReply{200, R"({"judgments": [{"rubric_index": 0, "label": "pass"}]})", 0ms},
                FakeReply{500, "down", 0ms},
                FakeReply{500, "down", 0ms},
                FakeReply{500, "down", 0ms}});
  const std::string answer =
      R"({"record_id":"r","rubrics":[{"original_index":0,"text":"is kind","weight":2.0}]})";
  std::string lines;
  for (int i = 0; i < 2; ++i) {
    lines += json{{"prompt", "Be kind."},
                  {"completion", {{{"role", "assistant"}, {"content", "Gladly."}}}},
                  {"answer", answer}}
                 .dump() +
             "\n";
  }
  pb::test::TempDir dir;
  pb::test::write_file(dir / "r.jsonl", lines);
  const json args = {{"judge_model_path", "m"},
                     {"judge_server_url", judge.url("/judge")},
                     {"judge_max_retries", 1}};
  const auto result = run_primebeaker({"environments",
                                       "score",
                                       "jtc_rubrichub_judge_env",
                                       "--args",
                                       args.dump(),
                                       "--rollouts",
                                       (dir / "r.jsonl").string()});
  EXPECT_EQ(result.exit_code, 1) << result.err;
  EXPECT_NE(result.err.find("1 of 2 rollouts could not be scored"), std::string::npos);
  const auto out = pb::text::split(result.out, '\n');
  ASSERT_GE(out.size(), 2u) << result.out;
  const json first = json::parse(out[0]);
  EXPECT_EQ(first["reward"], 1.0);
  EXPECT_EQ(first["info_update"]["jtc_rubrichub_judge"]["request"]["output"], "Gladly.");
  EXPECT_NE(json::parse(out[1])["error"].get<std::string>().find("HTTP 500"), std::string::npos);
  EXPECT_EQ(judge.requests().size(), 2u);
}

TEST(RolloutBinary, ModelEndpointDownIsARunTimeError) {
  const auto result = run_primebeaker({"environments",
                                       "rollout",
                                       "label",
                                       "--args",
                                       R"({"dataset": "d.jsonl"})",
                                       "--row",
                                       R"({"prompt": "hi", "answer": "yes"})",
                                       "--endpoint",
                                       pb::test::unreachable_url("/v1"),
                                       "--model",
                                       "m"});
  EXPECT_EQ(result.exit_code, 1) << result.err;
  EXPECT_NE(result.err.find("did not answer"), std::string::npos) << result.err;
}

// A Podman gateway whose test command holds until released (or 20 s).
struct SlowGateway {
  FakeService service;
  std::mutex mutex;
  std::condition_variable released_cv;
  bool released = false;
  std::atomic<bool> test_started{false};

  SlowGateway() {
    service.handle([this](const RecordedRequest &request) {
      const auto body = request.json();
      if (request.path == "/affinity/handshake") {
        return FakeReply{200, json{{"affinity_id", "c1"}, {"container_id", "c1"}}.dump(), 0ms};
      }
      if (request.path == "/affinity/close") {
        return FakeReply{200, json{{"removed", true}}.dump(), 0ms};
      }
      const std::string command = body.value("command", "");
      if (command == "bash /tests/test.sh") {
        test_started = true;
        std::this_thread::sleep_for(2s); // a slow test, at least
        std::unique_lock lock(mutex);
        released_cv.wait_for(lock, 20s, [this] { return released; });
        return FakeReply{200, terminal_reply("all passed\n"), 0ms};
      }
      if (command.rfind("if [ -f ", 0) == 0) {
        return FakeReply{200, terminal_reply("__PRIMEBEAKER_REWARD_FILE__\n1\n"), 0ms};
      }
      return FakeReply{200, terminal_reply(command == "echo DONE" ? "DONE\n" : ""), 0ms};
    });
  }
  void release() {
    std::lock_guard lock(mutex);
    released = true;
    released_cv.notify_all();
  }
};

TEST(ServeBinary, TwoHundredSessionsFinishWhileOnePodmanTestIsInFlight) {
  SlowGateway gateway;
  FakeService terminal;
  terminal.handle([](const RecordedRequest &) {
    return FakeReply{200, terminal_reply("ok\n"), 0ms};
  });
  ServeChild serve;
  ASSERT_TRUE(serve.send({{"id", 0}, {"op", "hello"}, {"protocol", 1}, {"client", "t"}})["ok"]);
  const json podman_args = {{"dataset", "d"},
                            {"podman_gateway_url", gateway.service.url("")},
                            {"completion_marker", "DONE"}};
  const json opened = serve.send({{"id", 1},
                                  {"op", "open"},
                                  {"session", "podman"},
                                  {"env", "podman-terminal"},
                                  {"args", podman_args},
                                  {"row", {{"image", "ubuntu:24.04"}}}});
  ASSERT_TRUE(opened["ok"]) << opened.dump();
  const json done_call = {
      {"role", "assistant"},
      {"content", ""},
      {"tool_calls",
       {{{"id", "b"}, {"name", "bash"}, {"arguments", R"({"command": "echo DONE"})"}}}}};
  ASSERT_TRUE(serve.send({{"id", 2},
                          {"op", "observe"},
                          {"session", "podman"},
                          {"turn", 1},
                          {"message", done_call}})["ok"]);
  serve.write({{"id", 3}, {"op", "respond"}, {"session", "podman"}, {"turn", 1}});
  while (!gateway.test_started) {
    std::this_thread::sleep_for(10ms);
  }

  const int sessions = 200;
  const json terminal_call = {
      {"role", "assistant"},
      {"content", ""},
      {"tool_calls",
       {{{"id", "t"}, {"name", "terminal"}, {"arguments", R"({"command": "rg ok"})"}}}}};
  const json tool_args = {{"dataset", "d"}, {"terminal_server_url", terminal.url("/terminal")}};
  for (int i = 0; i < sessions; ++i) {
    serve.write({{"id", 1000 + i},
                 {"op", "observe"},
                 {"session", "t" + std::to_string(i)},
                 {"env", "tool-label"},
                 {"args", tool_args},
                 {"row", {{"prompt", {{{"role", "user"}, {"content", "<output>ok</output>"}}}}}},
                 {"turn", 1},
                 {"message", terminal_call}});
  }
  std::set<int> responded;
  json podman_reply;
  int observed = 0;
  while (static_cast<int>(responded.size()) < sessions) {
    const json reply = serve.read();
    const int id = reply["id"];
    ASSERT_TRUE(reply["ok"]) << reply.dump();
    if (id == 3) {
      podman_reply = reply;
    } else if (id < 2000) {
      ++observed;
      EXPECT_EQ(reply["route"], "tool");
      serve.write({{"id", id + 1000},
                   {"op", "respond"},
                   {"session", "t" + std::to_string(id - 1000)},
                   {"turn", 1}});
    } else {
      EXPECT_EQ(reply["messages"][0]["role"], "tool");
      EXPECT_EQ(reply["state"]["jtc_tool_call_count"], 1);
      responded.insert(id);
    }
  }
  EXPECT_EQ(observed, sessions);
  // Every other session finished while the Podman test still held its request.
  EXPECT_TRUE(podman_reply.is_null()) << podman_reply.dump();
  EXPECT_EQ(terminal.requests().size(), static_cast<size_t>(sessions));
  gateway.release();
  while (podman_reply.is_null()) {
    const json reply = serve.read();
    if (reply["id"] == 3) {
      podman_reply = reply;
    }
  }
  ASSERT_TRUE(podman_reply["ok"]) << podman_reply.dump();
  EXPECT_TRUE(podman_reply["final"]);
  EXPECT_TRUE(podman_reply["state"]["podman_terminal_complete"]);
  EXPECT_EQ(podman_reply["state"]["podman_reward_file_score"], 1.0);
  const json closed = serve.send({{"id", 4}, {"op", "close"}, {"session", "podman"}});
  EXPECT_EQ(closed["state"]["podman_cleanup"]["removed"], true);
}

TEST(ServeBinary, CancelInterruptsAnInFlightPodmanTest) {
  SlowGateway gateway;
  ServeChild serve;
  const json opened = serve.send({{"id", 1},
                                  {"op", "open"},
                                  {"session", "p"},
                                  {"env", "podman-terminal"},
                                  {"args",
                                   {{"dataset", "d"},
                                    {"podman_gateway_url", gateway.service.url("")},
                                    {"completion_marker", "DONE"}}},
                                  {"row", {{"image", "ubuntu"}}}});
  ASSERT_TRUE(opened["ok"]) << opened.dump();
  serve.send(
      {{"id", 2},
       {"op", "observe"},
       {"session", "p"},
       {"turn", 1},
       {"message",
        {{"role", "assistant"},
         {"content", ""},
         {"tool_calls",
          {{{"id", "b"}, {"name", "bash"}, {"arguments", R"({"command": "echo DONE"})"}}}}}}});
  serve.write({{"id", 3}, {"op", "respond"}, {"session", "p"}, {"turn", 1}});
  while (!gateway.test_started) {
    std::this_thread::sleep_for(10ms);
  }
  const auto started = std::chrono::steady_clock::now();
  serve.write({{"id", 4}, {"op", "cancel"}, {"session", "p"}});
  std::set<int> seen;
  json respond_reply;
  while (seen.size() < 2) {
    const json reply = serve.read();
    seen.insert(reply["id"].get<int>());
    if (reply["id"] == 3) {
      respond_reply = reply;
    }
  }
  EXPECT_LT(std::chrono::steady_clock::now() - started, 1500ms);
  EXPECT_FALSE(respond_reply["ok"]);
  EXPECT_EQ(respond_reply["error"]["kind"], "cancelled");
  gateway.release();
}

} // namespace
