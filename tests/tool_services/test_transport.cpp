// SPDX-License-Identifier: MIT
// The shared transport against a loopback fake: attempts, back-off, which failures retry,
// timeouts, unreachable services, cancellation (docs/tool-services.md "Transport").
#include "fake_service.hpp"

#include <primebeaker/tool_services/transport.hpp>

#include <gtest/gtest.h>

#include <thread>

namespace pb::tool_services {
namespace {

using namespace std::chrono_literals;
using std::chrono::milliseconds;
using test::failure_of;
using test::FakeReply;
using test::FakeService;
using test::fast_endpoint;

TEST(BackoffDelay, StartsAtHalfASecondDoublesAndCapsAtEight) {
  const Endpoint endpoint;
  EXPECT_EQ(endpoint.max_retries, 3);
  EXPECT_EQ(backoff_delay(endpoint, 1), 500ms);
  EXPECT_EQ(backoff_delay(endpoint, 2), 1000ms);
  EXPECT_EQ(backoff_delay(endpoint, 3), 2000ms);
  EXPECT_EQ(backoff_delay(endpoint, 4), 4000ms);
  EXPECT_EQ(backoff_delay(endpoint, 5), 8000ms);
  EXPECT_EQ(backoff_delay(endpoint, 9), 8000ms);
}

TEST(Transport, PostsJsonAndReturnsTheObject) {
  FakeService service;
  service.script({{200, R"({"stdout": "hi\n", "success": true, "score": NaN})"}});
  const OrderedJson body = {{"command", "echo hi"}, {"contents", "\u00e9"}};
  const OrderedJson reply =
      post_json(fast_endpoint(service.url("/terminal")), "Terminal execution", body);
  EXPECT_EQ(reply["stdout"], "hi\n");
  EXPECT_TRUE(std::isnan(reply["score"].get<double>())); // Python's json.loads accepts NaN
  const auto requests = service.requests();
  ASSERT_EQ(requests.size(), 1u);
  EXPECT_EQ(requests[0].method, "POST");
  EXPECT_EQ(requests[0].path, "/terminal");
  EXPECT_EQ(requests[0].headers.at("Content-Type"), "application/json");
  EXPECT_EQ(requests[0].json(), body);
}

TEST(Transport, RetriesTheStatusesTheReferenceRetriesThenSucceeds) {
  FakeService service;
  service.script({{503, "busy"}, {429, "slow down"}, {200, R"({"ok": 1})"}});
  EXPECT_EQ(post_json(fast_endpoint(service.url("/x")), "Search request", {{"q", 1}})["ok"], 1);
  EXPECT_EQ(service.requests().size(), 3u);
  service.script({{502, ""}, {200, R"({"ok": 2})"}});
  EXPECT_EQ(post_json(fast_endpoint(service.url("/x")), "Search request", {{"q", 1}})["ok"], 2);
  EXPECT_EQ(service.requests().size(), 5u);
}

TEST(Transport, EveryOtherErrorStatusIsRetriedTooAndTheLastOneRaised) {
  FakeService service;
  const std::string long_body(1500, 'x');
  service.script({{404, "nope"}, {500, "boom"}, {400, long_body}});
  const ServiceError error = failure_of([&] {
    post_json(fast_endpoint(service.url("/judge")), "Judge request", {{"a", 1}});
  });
  EXPECT_EQ(service.requests().size(), 3u);
  EXPECT_EQ(error.kind(), FailureKind::http_status);
  EXPECT_EQ(error.status(), 400);
  EXPECT_EQ(std::string(error.what()),
            "Judge request failed with HTTP 400 at " + service.url("/judge") + ": " +
                std::string(1000, 'x'));
  EXPECT_TRUE(error.infra());
  EXPECT_TRUE(error.model_caused()); // " HTTP 400 " counts as the model's error
  EXPECT_EQ(error.exception_type(), "RuntimeError");
  EXPECT_EQ(error.detail().substr(0, 27), "RuntimeError: Judge request");
}

TEST(Transport, A5xxOnTheLastAttemptIsNotModelCaused) {
  FakeService service;
  service.script({{503, "a"}, {503, "b"}});
  const ServiceError error =
      failure_of([&] { post_json(fast_endpoint(service.url("/t"), 2), "Terminal execution", {}); });
  EXPECT_EQ(service.requests().size(), 2u);
  EXPECT_EQ(error.status(), 503);
  EXPECT_FALSE(error.model_caused());
}

TEST(Transport, InvalidJsonOrANonObjectIsRaisedAtOnceWithoutRetry) {
  FakeService service;
  service.script({{200, "not json"}, {200, "ok"}});
  ServiceError error =
      failure_of([&] { post_json(fast_endpoint(service.url("/t")), "Terminal execution", {}); });
  EXPECT_EQ(error.kind(), FailureKind::bad_response);
  EXPECT_NE(std::string(error.what()).find("response was not valid JSON"), std::string::npos);
  EXPECT_EQ(service.requests().size(), 1u);
  service.script({{200, "[1, 2]"}, {200, "{}"}});
  error =
      failure_of([&] { post_json(fast_endpoint(service.url("/t")), "Terminal execution", {}); });
  EXPECT_NE(std::string(error.what()).find("response was not a JSON object"), std::string::npos);
  EXPECT_EQ(service.requests().size(), 2u);
}

TEST(Transport, ZeroRetriesStillMakesOneAttempt) {
  FakeService service;
  service.script({{503, "down"}, {200, "{}"}});
  EXPECT_EQ(failure_of([&] {
              post_json(fast_endpoint(service.url("/t"), 0), "Code execution", {});
            }).status(),
            503);
  EXPECT_EQ(service.requests().size(), 1u);
}

TEST(Transport, BackOffDoublesBetweenAttempts) {
  FakeService service;
  service.script({{503, ""}, {503, ""}, {200, "{}"}});
  Endpoint endpoint = fast_endpoint(service.url("/t"));
  endpoint.initial_backoff = 60ms;
  endpoint.max_backoff = 1000ms;
  post_json(endpoint, "Terminal execution", {});
  const auto requests = service.requests();
  ASSERT_EQ(requests.size(), 3u);
  EXPECT_GE(requests[1].at - requests[0].at, 60ms);
  EXPECT_GE(requests[2].at - requests[1].at, 120ms);
  EXPECT_LT(requests[2].at - requests[0].at, 1500ms);
}

TEST(Transport, ATimeoutIsRetriedAndReportedAfterTheLastAttempt) {
  FakeService service;
  service.handle([](const test::RecordedRequest &) { return FakeReply{200, "{}", 400ms}; });
  Endpoint endpoint = fast_endpoint(service.url("/slow"), 2);
  endpoint.timeout = 100ms;
  const auto started = std::chrono::steady_clock::now();
  const ServiceError error = failure_of([&] { post_json(endpoint, "Podman execution", {}); });
  EXPECT_EQ(error.kind(), FailureKind::unreachable);
  EXPECT_TRUE(error.infra());
  EXPECT_EQ(
      std::string(error.what())
          .rfind("Podman execution failed after 2 attempts at " + service.url("/slow") + ": ", 0),
      0u)
      << error.what();
  EXPECT_EQ(service.requests().size(), 2u);
  EXPECT_LT(std::chrono::steady_clock::now() - started, 1000ms);
}

TEST(Transport, APerCallTimeoutOverridesTheEndpoints) {
  FakeService service;
  service.script({{200, R"({"affinity_id": "a"})", 250ms}});
  Endpoint endpoint = fast_endpoint(service.url("/affinity/handshake"), 1);
  endpoint.timeout = 50ms;
  EXPECT_EQ(
      post_json(endpoint, "Podman execution", {}, CallControl{2000ms, nullptr})["affinity_id"],
      "a");
}

TEST(Transport, AnUnreachableServiceIsAnInfraFailureAfterEveryAttempt) {
  const std::string url = test::unreachable_url("/terminal");
  const ServiceError error =
      failure_of([&] { post_json(fast_endpoint(url), "Terminal execution", {}); });
  EXPECT_EQ(error.kind(), FailureKind::unreachable);
  EXPECT_TRUE(error.infra());
  EXPECT_FALSE(error.model_caused());
  EXPECT_EQ(
      std::string(error.what()).rfind("Terminal execution failed after 3 attempts at " + url, 0),
      0u);
}

TEST(Transport, CancellationEndsAnInFlightCallQuickly) {
  FakeService service;
  service.script({{200, "{}", 3000ms}});
  std::atomic<bool> cancel{false};
  std::thread canceller([&] {
    std::this_thread::sleep_for(100ms);
    cancel = true;
  });
  const auto started = std::chrono::steady_clock::now();
  const ServiceError error = failure_of([&] {
    post_json(fast_endpoint(service.url("/podman")),
              "Podman execution",
              {},
              CallControl{std::nullopt, &cancel});
  });
  canceller.join();
  EXPECT_EQ(error.kind(), FailureKind::cancelled);
  EXPECT_FALSE(error.infra());
  EXPECT_LT(std::chrono::steady_clock::now() - started, 1000ms);
  EXPECT_EQ(service.requests().size(), 1u);
}

TEST(Transport, CancellationEndsTheBackOffSleep) {
  FakeService service;
  service.script({{503, ""}, {200, "{}"}});
  Endpoint endpoint = fast_endpoint(service.url("/t"));
  endpoint.initial_backoff = 5000ms;
  endpoint.max_backoff = 8000ms;
  std::atomic<bool> cancel{false};
  std::thread canceller([&] {
    std::this_thread::sleep_for(150ms);
    cancel = true;
  });
  const auto started = std::chrono::steady_clock::now();
  const ServiceError error = failure_of([&] {
    post_json(endpoint, "Terminal execution", {}, CallControl{std::nullopt, &cancel});
  });
  canceller.join();
  EXPECT_EQ(error.kind(), FailureKind::cancelled);
  EXPECT_LT(std::chrono::steady_clock::now() - started, 1000ms);
  EXPECT_EQ(service.requests().size(), 1u);
  // Already cancelled: nothing is sent.
  EXPECT_EQ(failure_of([&] {
              post_json(endpoint, "Terminal execution", {}, CallControl{std::nullopt, &cancel});
            }).kind(),
            FailureKind::cancelled);
  EXPECT_EQ(service.requests().size(), 1u);
}

TEST(Transport, GetSendsTheGivenHeaders) {
  FakeService service;
  service.script({{200, R"({"code": 200})"}});
  get_json(fast_endpoint(service.url("/page")),
           "Jina Reader request",
           {"Accept: application/json", "X-A: b"});
  const auto requests = service.requests();
  ASSERT_EQ(requests.size(), 1u);
  EXPECT_EQ(requests[0].method, "GET");
  EXPECT_EQ(requests[0].headers.at("X-A"), "b");
}

} // namespace
} // namespace pb::tool_services
