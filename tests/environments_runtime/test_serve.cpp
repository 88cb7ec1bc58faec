// SPDX-License-Identifier: MIT
// The serve transport against a scripted engine, over real pipes.
#include <primebeaker/environments_runtime/serve.hpp>

#include <gtest/gtest.h>

#include <unistd.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <map>
#include <mutex>
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

} // namespace
