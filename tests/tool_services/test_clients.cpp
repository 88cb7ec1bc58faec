// SPDX-License-Identifier: MIT
// Each client against a loopback fake: the exact request it sends, what it checks in the
// answer, and what it refuses before sending (docs/tool-services.md "Clients").
#include "fake_service.hpp"

#include <primebeaker/environments/python.hpp>
#include <primebeaker/tool_services/clients.hpp>

#include <gtest/gtest.h>

#include <cstdlib>
#include <regex>

namespace pb::tool_services {
namespace {

using namespace std::chrono_literals;
using test::failure_of;
using test::FakeReply;
using test::FakeService;
using test::fast_endpoint;
using J = OrderedJson;

const char *const terminal_reply =
    R"({"stdout": "1\n", "stderr": "", "success": true, "exit_code": 0, "execution_time": 0.01, "truncated": false, "truncated_characters": 0})";

TEST(Terminal, SendsContentsCommandAndTruncation) {
  FakeService service;
  service.script({{200, terminal_reply}, {200, terminal_reply}});
  const J output =
      terminal_execute(fast_endpoint(service.url("/terminal")), {"wc -l", "a\n", 2000});
  EXPECT_EQ(output["stdout"], "1\n");
  EXPECT_EQ(output["truncated_characters"], 0);
  terminal_execute(fast_endpoint(service.url("/terminal")), {"ls", std::nullopt, std::nullopt});
  const auto requests = service.requests();
  EXPECT_EQ(requests[0].json().dump(), R"({"contents":"a\n","command":"wc -l","truncation":2000})");
  EXPECT_EQ(requests[1].json().dump(), R"({"contents":"","command":"ls","truncation":null})");
}

TEST(Python, SendsCodeContextRuntimeAndModel) {
  FakeService service;
  service.script({{200, R"({"stdout": "3", "stderr": "", "success": true})"}});
  const J output =
      python_execute(fast_endpoint(service.url("/python")), {"print(1+2)", J{{"x", 1}}, 2});
  EXPECT_EQ(output["stdout"], "3");
  EXPECT_EQ(
      service.requests()[0].json().dump(),
      R"x({"code":"print(1+2)","context_payload":{"x":1},"max_runtime":2,"model":"python"})x");
}

TEST(Podman, QualifiesImageNames) {
  EXPECT_EQ(qualify_image(" ubuntu:24.04 "), "docker.io/library/ubuntu:24.04");
  EXPECT_EQ(qualify_image("owner/task:tag"), "docker.io/owner/task:tag");
  EXPECT_EQ(qualify_image("ghcr.io/o/t"), "ghcr.io/o/t");
  EXPECT_EQ(qualify_image("localhost/t"), "localhost/t");
  EXPECT_EQ(qualify_image("registry:5000/t"), "registry:5000/t");
  EXPECT_EQ(failure_of([] { qualify_image("  "); }).kind(), FailureKind::invalid_argument);
}

PodmanConfig podman_config(const FakeService &service) {
  PodmanConfig config;
  config.gateway = fast_endpoint(service.url());
  config.workdir = "/app";
  return config;
}

TEST(Podman, HandshakeExecuteCloseWithTheReferenceBodies) {
  FakeService service;
  service.script({{200, R"({"affinity_id": "c1", "container_id": "c1"})"},
                  {200, terminal_reply},
                  {200, R"({"removed": true})"}});
  PodmanSession session(podman_config(service));
  EXPECT_FALSE(session.started());
  EXPECT_EQ(session.start("docker.io/o/t:1", std::string("primebeaker-solver-ab12")), "c1");
  EXPECT_TRUE(session.started());
  EXPECT_EQ(session.execute("bash /tests/test.sh", "", 600)["stdout"], "1\n");
  EXPECT_EQ(session.close()["removed"], true);
  EXPECT_FALSE(session.started());
  const auto requests = service.requests();
  ASSERT_EQ(requests.size(), 3u);
  EXPECT_EQ(requests[0].path, "/affinity/handshake");
  EXPECT_EQ(
      requests[0].json().dump(),
      R"({"image":"docker.io/o/t:1","client_id":"primebeaker-solver-ab12","service":"podman"})");
  EXPECT_EQ(requests[1].path, "/affinity/podman");
  EXPECT_EQ(
      requests[1].json().dump(),
      R"({"affinity_id":"c1","command":"bash /tests/test.sh","stdin":"","timeout":600,"workdir":"/app","service":"podman"})");
  EXPECT_EQ(requests[2].path, "/affinity/close");
  EXPECT_EQ(requests[2].json().dump(), R"({"affinity_id":"c1","service":"podman"})");
}

TEST(Podman, TheHandshakeHasItsOwnTimeout) {
  FakeService service;
  service.script({{200, R"({"affinity_id": "c", "container_id": "c"})", 300ms}});
  PodmanConfig config = podman_config(service);
  config.gateway.timeout = 100ms;
  config.handshake_timeout = 3000ms;
  PodmanSession session(config);
  EXPECT_EQ(session.start("docker.io/library/ubuntu", std::nullopt), "c");
  EXPECT_EQ(service.requests()[0].json().dump(),
            R"({"image":"docker.io/library/ubuntu","service":"podman"})");
}

TEST(Podman, RefusesOutOfOrderOperationsAndBadAnswers) {
  FakeService service;
  PodmanSession session(podman_config(service));
  EXPECT_EQ(failure_of([&] { session.execute("ls", "", 60); }).kind(),
            FailureKind::invalid_argument);
  EXPECT_EQ(failure_of([&] { session.close(); }).kind(), FailureKind::invalid_argument);
  service.script({{200, R"({"affinity_id": "a", "container_id": "b"})"}});
  EXPECT_EQ(failure_of([&] { session.start("i", std::nullopt); }).kind(),
            FailureKind::bad_response);
  EXPECT_FALSE(session.started());
  service.script(
      {{200, R"({"affinity_id": "a", "container_id": "a"})"}, {200, R"({"removed": false})"}});
  session.start("i", std::nullopt);
  EXPECT_EQ(failure_of([&] { session.start("i", std::nullopt); }).kind(),
            FailureKind::invalid_argument);
  EXPECT_EQ(failure_of([&] { session.execute("", "", 60); }).exception_type(), "ValueError");
  EXPECT_EQ(failure_of([&] { session.execute("ls", "", 0); }).exception_type(), "ValueError");
  EXPECT_EQ(failure_of([&] { session.close(); }).kind(), FailureKind::bad_response);
  EXPECT_FALSE(session.started()); // the ids are cleared whatever the outcome
  EXPECT_EQ(service.requests().size(), 3u);
}

TEST(Podman, ALongTestIsPostedAgainWhenTheHttpTimeoutIsShorter) {
  // The reference's caveat: the command timeout (600 s) exceeds the HTTP timeout (150 s), so a
  // slow test times out at the transport and runs again, up to the attempt limit.
  FakeService service;
  service.script({{200, R"({"affinity_id": "a", "container_id": "a"})"},
                  {200, terminal_reply, 300ms},
                  {200, terminal_reply}});
  PodmanConfig config = podman_config(service);
  config.gateway.timeout = 100ms;
  PodmanSession session(config);
  session.start("i", std::nullopt, CallControl{1000ms, nullptr});
  EXPECT_EQ(session.execute("bash /tests/test.sh", "", 600)["success"], true);
  const auto requests = service.requests();
  ASSERT_EQ(requests.size(), 3u);
  EXPECT_EQ(requests[1].json(), requests[2].json());
}

TEST(Fetch, GatewayModePostsTheUrlAndNamesThePool) {
  FakeService service;
  service.script({{200, R"({"success": true, "data": {"title": "T", "content": "body"}})"}});
  FetchConfig config;
  config.gateway = fast_endpoint(service.url("/search"));
  config.model_path = "localsearch:bc-v2-72k";
  EXPECT_EQ(fetch_url(config, "  https://x.y/a  ")["data"]["content"], "body");
  EXPECT_EQ(service.requests()[0].json().dump(),
            R"({"mode":"url","url":"https://x.y/a","model_path":"localsearch:bc-v2-72k"})");
  service.script({{500, "down"}});
  config.gateway->max_retries = 1;
  config.model_path.reset();
  const ServiceError error = failure_of([&] { fetch_url(config, "https://x.y/b"); });
  EXPECT_EQ(std::string(error.what())
                .rfind("Gateway URL fetch request (gateway default) failed with "
                       "HTTP 500",
                       0),
            0u)
      << error.what();
  EXPECT_EQ(service.requests()[1].json().dump(), R"({"mode":"url","url":"https://x.y/b"})");
}

TEST(Fetch, JinaModeSendsTheKeyAndShapesTheResult) {
  FakeService service;
  service.script(
      {{200,
        R"({"code": 200, "data": {"title": "Page", "content": "abcdefghij", "url": "https://x.y/p"}})"},
       {200, R"({"code": 451, "message": "blocked"})"}});
  FetchConfig config;
  config.jina = fast_endpoint(service.url());
  config.jina_api_key = "k-123";
  config.jina_parameters = {{"X-Timeout", 5}};
  config.max_content_length = 12;
  const J result = fetch_url(config, "https://x.y/p?q=1");
  EXPECT_EQ(
      result.dump(),
      R"({"success":true,"mode":"url","data":{"title":"Page","content":"# Page\n\nabcd","url":"https://x.y/p"}})");
  const auto request = service.requests()[0];
  EXPECT_EQ(request.method, "GET");
  EXPECT_EQ(request.path.rfind("/https://x.y/p", 0), 0u) << request.path;
  EXPECT_EQ(request.headers.at("Authorization"), "Bearer k-123");
  EXPECT_EQ(request.headers.at("X-Return-Format"), "markdown");
  EXPECT_EQ(request.headers.at("Accept"), "application/json");
  EXPECT_EQ(request.headers.at("X-Timeout"), "5");
  EXPECT_EQ(fetch_url(config, "https://x.y/q").dump(),
            R"({"success":false,"mode":"url","error":"blocked"})");
  config.jina_api_key.reset();
  ::unsetenv("JINA_API_KEY");
  EXPECT_EQ(failure_of([&] { fetch_url(config, "https://x.y/q"); }).kind(),
            FailureKind::invalid_argument);
  EXPECT_EQ(service.requests().size(), 2u);
}

struct WebWorld {
  FakeService terminal;
  FakeService gateway;
  WebAssetStore store;
  WebTerminalConfig config;
  WebWorld() {
    config.terminal = fast_endpoint(terminal.url("/terminal"));
    config.fetch.gateway = fast_endpoint(gateway.url("/search"));
    config.truncation = 2000;
    terminal.handle([](const test::RecordedRequest &request) {
      const J body = request.json();
      return FakeReply{200,
                       J{{"stdout", body["contents"].get<std::string>()},
                         {"stderr", ""},
                         {"success", true},
                         {"exit_code", 0}}
                           .dump()};
    });
  }
};

TEST(WebTerminal, PlainCommandsGetTheJudgedOutput) {
  WebWorld world;
  const J output = web_terminal_execute(world.config, world.store, "rg -n x", "judged text");
  EXPECT_EQ(output["stdout"], "judged text");
  EXPECT_EQ(world.terminal.requests()[0].json().dump(),
            R"({"contents":"judged text","command":"rg -n x","truncation":2000})");
  EXPECT_TRUE(world.gateway.requests().empty());
}

TEST(WebTerminal, BrowseFetchesOnceCachesAndCatReusesTheAsset) {
  WebWorld world;
  world.config.capture_web_assets = true;
  world.gateway.script({{200, R"({"success": true, "data": {"text": "page body"}})"}});
  const J first =
      web_terminal_execute(world.config, world.store, "browse https://x.y/a | head -5", "");
  EXPECT_EQ(first["stdout"], "page body");
  ASSERT_TRUE(first.contains("web_asset"));
  const std::string id = first["web_asset"]["id"];
  EXPECT_TRUE(std::regex_match(id, std::regex("asset_[0-9a-f]{32}"))) << id;
  EXPECT_EQ(first["web_asset"]["url"], "https://x.y/a");
  EXPECT_EQ(world.terminal.requests()[0].json()["command"], "head -5");
  // Browsing again reuses the cache (no fetch, no web_asset); cat pipes it by id.
  const J again = web_terminal_execute(world.config, world.store, "browse https://x.y/a", "");
  EXPECT_FALSE(again.contains("web_asset"));
  EXPECT_EQ(world.terminal.requests()[1].json()["command"], "cat");
  web_terminal_execute(world.config, world.store, "cat " + id + " " + id + " | wc -l", "");
  EXPECT_EQ(world.terminal.requests()[2].json().dump(),
            R"({"contents":"page body\n\npage body","command":"wc -l","truncation":2000})");
  EXPECT_EQ(world.gateway.requests().size(), 1u);
  EXPECT_EQ(world.store.size(), 1u);
}

TEST(WebTerminal, SeededPagesAndEnvelopesAreUsedWithoutFetching) {
  WebWorld world;
  world.store.seed({{"https://a", "seeded markdown"},
                    {"https://b", R"({"mode": "url", "data": {"content": "from envelope"}})"},
                    {"https://c", R"({"mode": "url", "data": {}})"}});
  EXPECT_EQ(web_terminal_execute(world.config, world.store, "browse https://a", "")["stdout"],
            "seeded markdown");
  EXPECT_EQ(web_terminal_execute(world.config, world.store, "browse https://b", "")["stdout"],
            "from envelope");
  EXPECT_TRUE(world.gateway.requests().empty());
  world.gateway.script({{200, R"({"success": true, "data": {"content": "fetched c"}})"}});
  EXPECT_EQ(web_terminal_execute(world.config, world.store, "browse https://c", "")["stdout"],
            "fetched c"); // an envelope without a body is a cache miss
  EXPECT_EQ(world.gateway.requests().size(), 1u);
}

TEST(WebTerminal, LayerErrorsAreTerminalStyleOutputs) {
  WebWorld world;
  EXPECT_EQ(
      web_terminal_execute(world.config, world.store, "cat asset_nope | head", "").dump(),
      R"({"success":false,"stdout":"","stderr":"cat: asset_nope: No such file or directory","exit_code":1})");
  world.gateway.script({{200, R"({"success": false, "error": "404 page"})"}});
  const J failed = web_terminal_execute(world.config, world.store, "browse https://x.y/gone", "");
  EXPECT_EQ(failed["success"], false);
  EXPECT_EQ(failed["exit_code"], 1);
  EXPECT_NE(failed["stderr"].get<std::string>().find("failed to fetch https://x.y/gone: 404 page"),
            std::string::npos)
      << failed.dump();
  EXPECT_TRUE(world.terminal.requests().empty());
}

TEST(Judge, SendsTheBodyAndRefusesBadRubricsBeforeSending) {
  FakeService service;
  service.script(
      {{200, R"({"judgments": [{"rubric_index": 0, "label": "pass", "feedback": "ok"}]})"},
       {200, R"({"verdict": "pass"})"}});
  const J response =
      judge(fast_endpoint(service.url("/judge")), {"in", "out", {"is correct"}, "m/llm", "judge"});
  EXPECT_EQ(response["judgments"][0]["label"], "pass");
  EXPECT_EQ(
      service.requests()[0].json().dump(),
      R"({"input":"in","output":"out","rubrics":["is correct"],"model":"m/llm","model_path":"judge"})");
  EXPECT_EQ(failure_of([&] {
              judge(fast_endpoint(service.url("/judge")), {"in", "out", {"x"}, "m", "judge"});
            }).kind(),
            FailureKind::bad_response);
  const Endpoint endpoint = fast_endpoint(service.url("/judge"));
  EXPECT_EQ(failure_of([&] {
              judge(endpoint, {"in", "out", {}, "m", "judge"});
            }).exception_type(),
            "ValueError");
  EXPECT_EQ(failure_of([&] {
              judge(endpoint, {"in", "out", {"ok", " "}, "m", "judge"});
            }).exception_type(),
            "ValueError");
  EXPECT_EQ(failure_of([&] {
              judge_body(endpoint, {{"rubrics", "a string"}});
            }).exception_type(),
            "TypeError");
  EXPECT_EQ(failure_of([&] {
              judge_body(endpoint, {{"rubrics", J::array({1})}});
            }).kind(),
            FailureKind::invalid_argument);
  EXPECT_EQ(service.requests().size(), 2u);
}

TEST(RewardModel, ChecksMessagesAndTheSingleDataItem) {
  FakeService service;
  service.script({{200, R"({"data": [{"probs": [0.7, 0.3]}]})"},
                  {200, R"({"data": [{"probs": [0.7]}, {"probs": [0.1]}]})"}});
  const J body = {{"model", "rm"},
                  {"messages", J::array({J{{"role", "user"}, {"content", "q"}}})},
                  {"add_generation_prompt", false}};
  EXPECT_EQ(classify(fast_endpoint(service.url("/classify")), body)["data"][0]["probs"][0], 0.7);
  EXPECT_EQ(service.requests()[0].json(), body);
  EXPECT_EQ(failure_of([&] { classify(fast_endpoint(service.url("/classify")), body); }).kind(),
            FailureKind::bad_response);
  J no_role = body;
  no_role["messages"][0]["role"] = " ";
  EXPECT_EQ(failure_of([&] { classify(fast_endpoint(service.url("/classify")), no_role); }).kind(),
            FailureKind::invalid_argument);
  J no_content = body;
  no_content["messages"][0].erase("content");
  EXPECT_EQ(
      failure_of([&] { classify(fast_endpoint(service.url("/classify")), no_content); }).kind(),
      FailureKind::invalid_argument);
  EXPECT_EQ(service.requests().size(), 2u);
}

TEST(Search, SendsTheQueryBody) {
  FakeService service;
  service.script({{200, R"({"success": true, "data": {"organic": []}})"}, {200, "{}"}});
  search(fast_endpoint(service.url("/search")),
         {"capital of France", 10, J::object(), std::nullopt});
  search(fast_endpoint(service.url("/search")),
         {"q", 3, J::object(), std::string("localsearch:x")});
  EXPECT_EQ(service.requests()[0].json().dump(),
            R"({"mode":"query","query":"capital of France","num_results":10,"parameters":{}})");
  EXPECT_EQ(
      service.requests()[1].json().dump(),
      R"({"mode":"query","query":"q","num_results":3,"parameters":{},"model_path":"localsearch:x"})");
  EXPECT_EQ(failure_of([&] {
              search(fast_endpoint(service.url("/search")),
                     SearchCall{"  ", 10, J::object(), std::nullopt});
            }).exception_type(),
            "ValueError");
  EXPECT_EQ(service.requests().size(), 2u);
}

TEST(Submit, AcceptsReplacesAndReportsStatusInExpectedOrder) {
  SubmissionStore store({"r1", "r2", "3"});
  J output = store.submit(" r2 ", "because", "pass");
  EXPECT_EQ(
      output["data"].dump(),
      R"({"accepted_rubric_id":"r2","replaced":false,"completed_rubric_ids":["r2"],"waiting_rubric_ids":["r1","3"],"all_completed":false})");
  EXPECT_EQ(output["stdout"], environments::py::dumps(output["data"]));
  EXPECT_EQ(output["success"], true);
  EXPECT_EQ(output["exit_code"], 0);
  EXPECT_EQ(output["stderr"], "");
  store.submit(3, "f", "fail");
  output = store.submit("r1", "f", "pass");
  EXPECT_EQ(output["data"]["all_completed"], true);
  EXPECT_EQ(output["data"]["completed_rubric_ids"], J::array({"r1", "r2", "3"}));
  output = store.submit("r2", "changed", "fail");
  EXPECT_EQ(output["data"]["replaced"], true);
  EXPECT_EQ(store.submissions()["r2"].dump(), R"({"feedback":"changed","label":"fail"})");
  EXPECT_EQ(output["stdout"].get<std::string>().substr(0, 40),
            R"({"accepted_rubric_id": "r2", "replaced":)");
}

TEST(Submit, RefusesBadArgumentsAsValueErrors) {
  SubmissionStore store({"a"});
  for (const auto &[id, feedback, label] : std::vector<std::tuple<J, J, J>>{{true, "f", "l"},
                                                                            {"  ", "f", "l"},
                                                                            {"b", "f", "l"},
                                                                            {"a", " ", "l"},
                                                                            {"a", "f", J()},
                                                                            {1.5, "f", "l"}}) {
    const ServiceError error = failure_of([&] { store.submit(id, feedback, label); });
    EXPECT_EQ(error.kind(), FailureKind::invalid_argument) << id.dump();
    EXPECT_EQ(error.exception_type(), "ValueError");
    EXPECT_TRUE(error.model_caused());
  }
  EXPECT_NE(std::string(failure_of([&] { store.submit("b", "f", "l"); }).what()).find("'a'"),
            std::string::npos);
  EXPECT_EQ(SubmissionStore().status()["all_completed"], false); // needs expected ids
}

} // namespace
} // namespace pb::tool_services
