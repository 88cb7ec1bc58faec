// SPDX-License-Identifier: MIT
// The serve transport against a scripted engine, over real pipes.
#include "fake_tools.hpp"

#include <primebeaker/environments_runtime/engine.hpp>
#include <primebeaker/environments_runtime/json_line.hpp>
#include <primebeaker/environments_runtime/serve.hpp>

#include <gtest/gtest.h>

#include <unistd.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <thread>

namespace {

using json = pb::OrderedJson;
using pb::environments_runtime::Engine;
using pb::environments_runtime::RequestError;
using namespace std::chrono_literals;

// `sleep` waits request.ms unless cancelled; `echo` answers at once. It records the order in
// which each session's requests started, and whether two of one session ever overlapped.
class ScriptedEngine : public Engine {
public:
  json handle(const std::string &op, const json &request) override {
    const std::string session = request["session"];
    {
      std::lock_guard lock(m_mutex);
      if (op != "close" && op != "release" && !m_busy.insert(session).second) {
        m_overlapped = true;
      }
      m_started[session].push_back(request["id"].get<int>());
    }
    struct Done {
      ScriptedEngine &engine;
      std::string session;
      std::string op;
      ~Done() {
        std::lock_guard lock(engine.m_mutex);
        if (op != "close" && op != "release") {
          engine.m_busy.erase(session);
        }
      }
    } done{*this, session, op};
    if (op == "sleep") {
      std::unique_lock lock(m_mutex);
      const bool cancelled =
          m_cancel_cv.wait_for(lock, std::chrono::milliseconds(request["ms"].get<int>()), [&] {
            return m_cancelled.count(session) > 0;
          });
      if (cancelled) {
        throw RequestError("cancelled", "cancelled");
      }
      return {{"slept", request["ms"]}};
    }
    if (op == "fail") {
      throw RequestError("environment", "refused by the environment");
    }
    return {{"echo", request.value("text", "")}};
  }
  // `quick` answers on the reading thread (handle_now), unless the test turns that off.
  std::optional<json> handle_now(const std::string &op, json &request) override {
    if (op != "quick" || !m_quick_now) {
      return std::nullopt;
    }
    std::lock_guard lock(m_mutex);
    m_started[request["session"]].push_back(request["id"].get<int>());
    m_now_ids.insert(request["id"].get<int>());
    return json{{"quick", true}};
  }
  void cancel(const std::string &session) override {
    std::lock_guard lock(m_mutex);
    m_cancelled.insert(session);
    m_cancel_cv.notify_all();
  }
  void close_all() override { m_closed_all = true; }

  std::mutex m_mutex;
  std::condition_variable m_cancel_cv;
  std::set<std::string> m_busy;
  std::set<std::string> m_cancelled;
  std::map<std::string, std::vector<int>> m_started;
  bool m_overlapped = false;
  std::atomic<bool> m_closed_all{false};
  std::set<int> m_now_ids; // answered by handle_now
  bool m_quick_now = true;
};

// serve() on a thread, fed and read through pipes like the Python parent does.
class ServeFixture : public ::testing::Test {
protected:
  void SetUp() override {
    ASSERT_EQ(::pipe(m_to_server), 0);
    ASSERT_EQ(::pipe(m_from_server), 0);
    m_thread = std::thread([this] {
      pb::environments_runtime::serve(m_to_server[0], m_from_server[1], m_engine, {"test"});
      ::close(m_from_server[1]);
    });
  }
  void TearDown() override {
    close_input();
    m_thread.join();
    ::close(m_to_server[0]);
    ::close(m_from_server[0]);
  }
  void send(const std::string &line) {
    const std::string data = line + "\n";
    ASSERT_EQ(::write(m_to_server[1], data.data(), data.size()), static_cast<ssize_t>(data.size()));
  }
  void send(const json &request) { send(request.dump()); }
  void close_input() {
    if (m_to_server[1] >= 0) {
      ::close(m_to_server[1]);
      m_to_server[1] = -1;
    }
  }
  json receive() {
    std::string line;
    char c;
    while (::read(m_from_server[0], &c, 1) == 1) {
      if (c == '\n') {
        return json::parse(line);
      }
      line += c;
    }
    return nullptr;
  }

  ScriptedEngine m_engine;
  int m_to_server[2] = {-1, -1};
  int m_from_server[2] = {-1, -1};
  std::thread m_thread;
};

TEST_F(ServeFixture, HelloNamesTheProtocolAndRefusesAnother) {
  send(json{{"id", 1}, {"op", "hello"}, {"protocol", 1}});
  EXPECT_EQ(receive(), (json{{"id", 1}, {"ok", true}, {"protocol", 1}, {"server", "test"}}));
  send(json{{"id", 2}, {"op", "hello"}, {"protocol", 2}});
  const json reply = receive();
  EXPECT_FALSE(reply["ok"]);
  EXPECT_EQ(reply["error"]["kind"], "bad_request");
  EXPECT_NE(reply["error"]["message"].get<std::string>().find("protocol 2"), std::string::npos);
}

TEST_F(ServeFixture, RepliesComeOutOfOrderAcrossSessions) {
  send(json{{"id", 1}, {"op", "sleep"}, {"session", "slow"}, {"ms", 400}});
  send(json{{"id", 2}, {"op", "echo"}, {"session", "fast"}, {"text", "hi"}});
  EXPECT_EQ(receive()["id"], 2);
  EXPECT_EQ(receive()["id"], 1);
}

TEST_F(ServeFixture, OneSessionsRequestsRunInOrderWithoutOverlap) {
  send(json{{"id", 1}, {"op", "sleep"}, {"session", "s"}, {"ms", 200}});
  send(json{{"id", 2}, {"op", "echo"}, {"session", "s"}});
  send(json{{"id", 3}, {"op", "echo"}, {"session", "s"}});
  EXPECT_EQ(receive()["id"], 1);
  EXPECT_EQ(receive()["id"], 2);
  EXPECT_EQ(receive()["id"], 3);
  EXPECT_FALSE(m_engine.m_overlapped);
  EXPECT_EQ(m_engine.m_started["s"], (std::vector<int>{1, 2, 3}));
}

TEST_F(ServeFixture, CancelEndsTheInFlightRequestAndCloseMayOverlapIt) {
  send(json{{"id", 1}, {"op", "sleep"}, {"session", "s"}, {"ms", 60000}});
  send(json{{"id", 2}, {"op", "close"}, {"session", "s"}});
  EXPECT_EQ(receive(), (json{{"id", 2}, {"ok", true}, {"echo", ""}}));
  const auto started = std::chrono::steady_clock::now();
  send(json{{"id", 3}, {"op", "cancel"}, {"session", "s"}});
  std::map<int, json> replies;
  for (int i = 0; i < 2; ++i) {
    const json reply = receive();
    replies[reply["id"].get<int>()] = reply;
  }
  EXPECT_TRUE(replies[3]["ok"]);
  EXPECT_EQ(replies[1]["error"]["kind"], "cancelled");
  EXPECT_LT(std::chrono::steady_clock::now() - started, 5s);
}

TEST_F(ServeFixture, BadLinesGetBadRequestRepliesAndTheServerGoesOn) {
  send(std::string("{not json"));
  EXPECT_EQ(receive()["error"]["kind"], "bad_request");
  send(json{{"id", 7}, {"op", "echo"}});
  const json missing_session = receive();
  EXPECT_EQ(missing_session["id"], 7);
  EXPECT_NE(missing_session["error"]["message"].get<std::string>().find("session"),
            std::string::npos);
  send(json{{"id", 8}, {"op", "fail"}, {"session", "s"}});
  EXPECT_EQ(receive()["error"],
            (json{{"kind", "environment"}, {"message", "refused by the environment"}}));
  send(json{{"id", 9}, {"op", "echo"}, {"session", "s"}, {"text", "still here"}});
  EXPECT_EQ(receive()["echo"], "still here");
}

TEST_F(ServeFixture, TwoHundredSessionsAreNotHeldUpByOneSlowRequest) {
  send(json{{"id", 0}, {"op", "sleep"}, {"session", "podman"}, {"ms", 60000}});
  const auto started = std::chrono::steady_clock::now();
  for (int i = 1; i <= 200; ++i) {
    send(json{{"id", i}, {"op", "echo"}, {"session", "s" + std::to_string(i)}});
  }
  std::set<int> answered;
  for (int i = 1; i <= 200; ++i) {
    answered.insert(receive()["id"].get<int>());
  }
  EXPECT_EQ(answered.size(), 200u);
  EXPECT_EQ(answered.count(0), 0u);
  EXPECT_LT(std::chrono::steady_clock::now() - started, 10s);
  // End of input cancels the slow one and closes every session.
  close_input();
  EXPECT_EQ(receive()["error"]["kind"], "cancelled");
  EXPECT_EQ(receive(), nullptr);
  EXPECT_TRUE(m_engine.m_closed_all);
}

TEST_F(ServeFixture, EndOfInputAnswersQueuedRequestsAsCancelled) {
  send(json{{"id", 1}, {"op", "sleep"}, {"session", "s"}, {"ms", 60000}});
  send(json{{"id", 2}, {"op", "echo"}, {"session", "s"}});
  std::this_thread::sleep_for(100ms);
  close_input();
  std::set<int> cancelled;
  for (json reply; !(reply = receive()).is_null();) {
    EXPECT_EQ(reply["error"]["kind"], "cancelled");
    cancelled.insert(reply["id"].get<int>());
  }
  EXPECT_EQ(cancelled, (std::set<int>{1, 2}));
  EXPECT_TRUE(m_engine.m_closed_all);
}

TEST_F(ServeFixture, QuickRequestsAreAnsweredAtOnceUnlessTheirSessionHasWorkQueued) {
  send(json{{"id", 1}, {"op", "sleep"}, {"session", "busy"}, {"ms", 300}});
  send(json{{"id", 2}, {"op", "quick"}, {"session", "other"}});
  send(json{{"id", 3}, {"op", "quick"}, {"session", "busy"}}); // after 1, on its strand
  EXPECT_EQ(receive(), (json{{"id", 2}, {"ok", true}, {"quick", true}}));
  EXPECT_EQ(receive()["id"], 1);
  EXPECT_EQ(receive(), (json{{"id", 3}, {"ok", true}, {"echo", ""}})); // handle(), in order
  EXPECT_EQ(m_engine.m_now_ids, (std::set<int>{2}));
  EXPECT_EQ(m_engine.m_started["busy"], (std::vector<int>{1, 3}));
}

TEST_F(ServeFixture, ManyPipelinedRepliesAllArriveWhole) {
  // Replies of one chunk of input are written together; every one must still be a whole line.
  std::string batch;
  for (int i = 0; i < 500; ++i) {
    batch += json{{"id", i}, {"op", "quick"}, {"session", "s" + std::to_string(i % 7)}}.dump();
    batch += i + 1 < 500 ? "\n" : "";
  }
  send(batch);
  std::set<int> ids;
  for (int i = 0; i < 500; ++i) {
    const json reply = receive();
    EXPECT_TRUE(reply["quick"]);
    ids.insert(reply["id"].get<int>());
  }
  EXPECT_EQ(ids.size(), 500u);
}

// ---- the request parser

TEST(ParseJson, GivesWhatNlohmannGives) {
  const std::vector<std::string> texts = {
      R"({"id": 1, "op": "score", "nested": {"a": [1, -2, 3.5, 1e3, -0.0, 2E-2, true, false, null]}})",
      R"(["\u00e9\u4e2d\ud83d\ude00", "tab\tnew\nline \"q\" \\ \/ \b\f\r", "", "x"])",
      R"({"big": 18446744073709551615, "bigger": 18446744073709551616, "neg": -9223372036854775808,
          "below": -9223372036854775809, "zero": 0, "frac": 0.1, "exp": 1.5e308, "tiny": 5e-324})",
      R"({"dup": 1, "other": 2, "dup": 3})",
      "  {\"utf8\": \"caf\u00c3\u00a9 \u00e2\u0082\u00ac\"}  ",
      "\"caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80 a long string past sixteen bytes\"",
      "[[[[[]]]], {}, [{}], {\"a\": {}}]",
      "-12",
      "{\"only\": \"0123456789abcdef0123456789abcdef\\\"0123456789abcdef\"}",
  };
  for (const auto &text : texts) {
    const json ours = pb::environments_runtime::parse_json(text);
    const json theirs = json::parse(text);
    EXPECT_EQ(ours, theirs) << text;
    EXPECT_EQ(ours.dump(), theirs.dump()) << text; // same types: integers, unsigned, floats
  }
  // A key repeated in a large object (past the linear duplicate check) keeps the last value.
  json large = json::object();
  std::string text = "{";
  for (int i = 0; i < 100; ++i) {
    text += "\"k" + std::to_string(i) + "\": " + std::to_string(i) + ", ";
  }
  text += "\"k5\": \"last\"}";
  EXPECT_EQ(pb::environments_runtime::parse_json(text), json::parse(text));
}

TEST(ParseJson, RefusesWhatIsNotJson) {
  for (const std::string &text : std::vector<std::string>{"",
                                                          "{",
                                                          "{\"a\": }",
                                                          "{\"a\": 1,}",
                                                          "[1,]",
                                                          "01",
                                                          "1.",
                                                          "-",
                                                          ".5",
                                                          "+1",
                                                          "NaN",
                                                          "Infinity",
                                                          "tru",
                                                          "\"unterminated",
                                                          "\"control \x01\"",
                                                          "\"\\x\"",
                                                          "\"\\ud800\"",
                                                          "\"\\udc00\"",
                                                          "\"\xff\"",
                                                          "\"\xc0\xaf\"",
                                                          "\"\xed\xa0\x80\"",
                                                          "{\"a\": 1} x",
                                                          "{a: 1}",
                                                          std::string(5000, '[')}) {
    try {
      pb::environments_runtime::parse_json(text);
      ADD_FAILURE() << "accepted: " << text.substr(0, 40);
    } catch (const RequestError &error) {
      EXPECT_EQ(error.kind(), "bad_request");
      EXPECT_EQ(std::string(error.what()).rfind("not JSON: ", 0), 0u) << error.what();
    }
  }
}

TEST(ParseJson, AScoreRequestKeepsTheRecordsFieldsButNotTheRowsCopies) {
  const std::string row = R"({"prompt": [{"role": "user", "content": "q"}], "answer": "a",
                              "completion": [], "example_id": 3, "info": {"prompt": "kept"}})";
  const json score = pb::environments_runtime::parse_json(
      R"({"id": 1, "op": "score", "prompt": "p", "row": )" + row + R"(, "answer": "a"})");
  EXPECT_EQ(score["prompt"], "p");
  EXPECT_EQ(score["answer"], "a");
  EXPECT_EQ(score["row"], (json{{"example_id", 3}, {"info", {{"prompt", "kept"}}}}));
  // Any other op, or "op" after "row", keeps the row whole; a bad value is still refused.
  const json open = pb::environments_runtime::parse_json(R"({"op": "open", "row": )" + row + "}");
  EXPECT_EQ(open["row"], json::parse(row));
  const json late =
      pb::environments_runtime::parse_json(R"({"row": )" + row + R"(, "op": "score"})");
  EXPECT_EQ(late["row"], json::parse(row));
  EXPECT_THROW(pb::environments_runtime::parse_json(R"({"op": "score", "row": {"prompt": [1,]}})"),
               RequestError);
}

// ---- request lines and the label score built from them (score_now)

TEST(RequestLine, BuildsWhatParseJsonGivesAndRefusesWhatItRefuses) {
  const std::vector<std::string> texts = {
      R"({"id": 1, "op": "score", "nested": {"a": [1, -2, 3.5, 1e3, -0.0, 2E-2, true, false, null]}})",
      R"({"dup": 1, "other": 2, "dup": 3})",
      "  {\"utf8\": \"caf\u00c3\u00a9\", \"k\\u0065y\": \"v\\n\"}  ",
      R"(["not", "an", "object"])",
      "-12",
      "{}",
      R"({"op": "score", "row": {"prompt": "p", "answer": "a", "example_id": 1}, "x": [[{}]]})",
      R"({"row": {"prompt": "p", "answer": "a"}, "op": "score"})",
      R"({"op": "sc\u006fre", "row": {"prompt": "p", "answer": "a"}})",
  };
  for (const auto &text : texts) {
    pb::environments_runtime::RequestLine line(text);
    EXPECT_EQ(line.build().dump(), pb::environments_runtime::parse_json(text).dump()) << text;
  }
  std::string large = "{";
  for (int i = 0; i < 100; ++i) {
    large += "\"k" + std::to_string(i) + "\": " + std::to_string(i) + ", ";
  }
  large += "\"k5\": \"last\"}";
  pb::environments_runtime::RequestLine many(large);
  EXPECT_EQ(*many.find("k5"), "last");
  EXPECT_EQ(many.build(), json::parse(large));
  for (const std::string &text :
       std::vector<std::string>{"",
                                "{",
                                "{\"a\": }",
                                "{\"a\": 1,}",
                                "{\"a\": [1,]}",
                                "{\"a\": 01}",
                                "{\"a\": NaN}",
                                "{\"a\": \"\\ud800\"}",
                                "{\"a\": \"\xff\"}",
                                "{\"a\": \"\x01\"}",
                                "{\"a\": 1} x",
                                "{a: 1}",
                                "{\"a\": " + std::string(5000, '[') + "}"}) {
    std::string expected;
    try {
      pb::environments_runtime::parse_json(text);
      ADD_FAILURE() << "parse_json accepted: " << text.substr(0, 40);
    } catch (const RequestError &error) {
      expected = error.what();
    }
    try {
      pb::environments_runtime::RequestLine line(text);
      ADD_FAILURE() << "RequestLine accepted: " << text.substr(0, 40);
    } catch (const RequestError &error) {
      EXPECT_EQ(error.kind(), "bad_request");
      EXPECT_EQ(std::string(error.what()), expected) << text.substr(0, 40);
    }
  }
  // Members are built on demand; plain strings are read without building.
  pb::environments_runtime::RequestLine line(
      R"({"id": 7, "op": "score", "env": "label", "esc": "a\"b", "n": 3})");
  EXPECT_EQ(line.plain_string("env"), std::optional<std::string_view>("label"));
  EXPECT_EQ(line.plain_string("esc"), std::nullopt);
  EXPECT_EQ(*line.find("esc"), "a\"b");
  EXPECT_EQ(line.plain_string("n"), std::nullopt);
  EXPECT_EQ(line.text("n"), std::optional<std::string_view>("3"));
  EXPECT_EQ(line.find("missing"), nullptr);
  EXPECT_EQ(line.take("n", nullptr), 3);
}

// The label score built from completion and answer alone (score_now) is the score of the whole
// request (handle), errors included, whatever the order and form of the fields.
TEST(ScoreNow, ALabelScoreFromItsLineIsTheWholeRequestsScore) {
  pb::test::FakeTools tools;
  pb::environments_runtime::EnvironmentEngine engine{tools};
  const std::string prompt =
      R"([{"role": "system", "content": "s"}, {"role": "user", "content": "<output>o</output>"}])";
  const std::vector<std::string> bodies = {
      R"("completion": [{"role": "assistant", "content": "<feedback>f</feedback><label> Yes </label>"}], "answer": "yes")",
      R"("completion": [{"role": "assistant", "content": "<feedback>f</feedback><label>no</label>"}], "answer": "yes")",
      R"("completion": [{"role": "assistant", "content": "<think>t</think><FEEDBACK>f</FEEDBACK><Label>Yes</Label>"}], "answer": " YES ")",
      R"("completion": [{"role": "assistant", "content": "\u003cfeedback\u003ef\u003c/feedback\u003e\u003clabel\u003eyes\u003c/label\u003e"}], "answer": "yes")",
      R"("completion": [{"role": "assistant", "content": [{"type": "text", "text": "<feedback>f</feedback>"}, {"type": "text", "text": "<label>yes</label>"}]}], "answer": "yes")",
      R"("completion": [{"role": "assistant", "content": "<feedback>f</feedback><label></label>"}], "answer": "yes")",
      R"("completion": [{"role": "assistant", "content": "no tags"}], "answer": "yes")",
      R"("completion": [], "answer": "yes")",
      R"("completion": null, "answer": "yes")",
      R"("answer": "yes")",
      R"("completion": [{"role": "assistant", "content": "<feedback>f</feedback><label>yes</label>"}])",
      R"("completion": [{"role": "assistant", "content": "<feedback>f</feedback><label>3</label>"}], "answer": 3)",
      R"("completion": [{"role": "assistant", "content": "<label>no</label>"}], "answer": "yes", "completion": [{"role": "assistant", "content": "<feedback>f</feedback><label>yes</label>"}])",
      R"("completion": "not a list", "answer": "yes")",
  };
  int fast = 0;
  for (const auto &body : bodies) {
    for (
        const std::string &text :
        {R"({"id": 1, "op": "score", "session": "r1", "env": "label", "args": {"dataset": "rows.jsonl"}, "row": {"prompt": )" +
             prompt + R"(, "answer": "yes", "example_id": 1}, "prompt": )" + prompt + ", " + body +
             R"(, "info": {}, "is_truncated": false, "trajectory_id": "r1", "example_id": 1})",
         R"({)" + body + R"(, "session": "r2", "op": "score", "id": 2, "env": "label"})"}) {
      std::string slow_reply;
      try {
        slow_reply = engine.handle("score", pb::environments_runtime::parse_json(text)).dump();
      } catch (const RequestError &error) {
        slow_reply = error.kind() + ": " + error.what();
      }
      std::string fast_reply;
      try {
        pb::environments_runtime::RequestLine line(text);
        const auto fields = engine.score_now(line);
        ASSERT_TRUE(fields.has_value()) << text;
        fast_reply = fields->dump();
        ++fast;
      } catch (const RequestError &error) {
        fast_reply = error.kind() + ": " + error.what();
      }
      EXPECT_EQ(fast_reply, slow_reply) << text;
    }
  }
  EXPECT_GE(fast, 24);
  // Every other environment, or an env that is not a plain string, takes the whole request.
  for (const std::string &text :
       {std::string(
            R"({"id": 1, "op": "score", "session": "s", "env": "tool-label", "completion": []})"),
        std::string(R"({"id": 1, "op": "score", "session": "s", "env": "rubrichub-judge"})"),
        std::string(R"({"id": 1, "op": "score", "session": "s", "env": 3})"),
        std::string(R"({"id": 1, "op": "score", "session": "s"})")}) {
    pb::environments_runtime::RequestLine line(text);
    EXPECT_FALSE(engine.score_now(line).has_value()) << text;
    EXPECT_EQ(line.build(), json::parse(text)); // nothing taken
  }
}

} // namespace
