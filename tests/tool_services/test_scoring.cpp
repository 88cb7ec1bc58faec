// SPDX-License-Identifier: MIT
// Scoring through fake judge and reward-model services, with rewards worked out by hand from
// the rules of docs/environments.md ("Scoring") and docs/tool-services.md.
#include "fake_service.hpp"
#include "rollouts.hpp"
#include "test_support.hpp"

#include <primebeaker/core/sha2.hpp>
#include <primebeaker/environments/python.hpp>
#include <primebeaker/tool_services/scoring.hpp>

#include <gtest/gtest.h>

#include <cmath>

namespace pb::tool_services {
namespace {

using namespace std::chrono_literals;
using test::FakeReply;
using test::FakeService;
using J = OrderedJson;
namespace py = environments::py;

using test::assistant;
using test::rollout;

ScoringOptions fast() {
  ScoringOptions options;
  options.initial_backoff = 5ms;
  options.max_backoff = 20ms;
  return options;
}

ServiceScore scored(const std::string &env, const J &args, const J &record) {
  return score_with_services(environments::resolve(env), args, record, fast());
}

TEST(ScoringService, NamesTheEndpointFromTheArguments) {
  const auto rm = scoring_service(environments::resolve("reward-model"),
                                  J{{"reward_model_path", "rm"}, {"reward_timeout", 12.5}});
  ASSERT_TRUE(rm);
  EXPECT_EQ(rm->endpoint.url, "http://127.0.0.1:1212/classify");
  EXPECT_EQ(rm->endpoint.timeout, 12500ms);
  EXPECT_EQ(rm->endpoint.max_retries, 3);
  EXPECT_EQ(rm->request_name, "Reward model classification");
  const auto rubric = scoring_service(environments::resolve("rubrichub-judge"), J::object());
  EXPECT_EQ(rubric->endpoint.url, "http://127.0.0.1:1212/judge");
  EXPECT_EQ(rubric->endpoint.timeout, 240000ms);
  const auto derived = scoring_service(environments::resolve("search-agent-webterminal-judge"),
                                       J{{"search_server_url", "http://h:9/search/"}});
  EXPECT_EQ(derived->endpoint.url, "http://h:9/judge");
  EXPECT_EQ(scoring_service(environments::resolve("search-visit-agent-judge"),
                            J{{"judge_server_url", "http://j/judge"}, {"judge_max_retries", 1}})
                ->endpoint.max_retries,
            1);
  EXPECT_PB_ERROR(scoring_service(environments::resolve("search-agent-visit-judge"),
                                  J{{"search_server_url", "http://h/find"}}),
                  3,
                  "does not end in /search");
  EXPECT_FALSE(scoring_service(environments::resolve("label"), J::object()));
}

TEST(ScoreWithServices, RewardModelStandardisesTheClassifierProbability) {
  FakeService service;
  service.handle([](const test::RecordedRequest &) {
    return FakeReply{200, R"({"data": [{"index": 0, "probs": [0.8, 0.2]}]})"};
  });
  const J record = rollout(J::array({assistant("The answer is (C).")}), "C");
  J args = {{"reward_model_path", "acme/rm"}, {"reward_server_url", service.url("/classify")}};
  // identity, mean 0, std 1: 0.8.
  ServiceScore result = scored("reward-model", args, record);
  EXPECT_EQ(result.score.reward, 0.8);
  EXPECT_EQ(result.score.metrics["reward_model_score"], 0.8);
  EXPECT_EQ(
      service.requests()[0].json().dump(),
      R"({"model":"acme/rm","messages":[{"role":"user","content":"judge this"},{"role":"assistant","content":"The answer is (C)."}],"add_generation_prompt":false})");
  EXPECT_EQ(result.info_update["reward_model"]["score"], 0.8);
  EXPECT_EQ(result.info_update["reward_model"]["response"]["data"][0]["probs"][1], 0.2);
  // logit: ln(0.8 / 0.2) = ln 4, over standardization_std 2.
  args["score_transform"] = "logit";
  args["standardization_std"] = 2.0;
  EXPECT_NEAR(scored("reward-model", args, record).score.reward, 0.6931471805599453, 1e-15);
  // The other class; center_rewards has no calibrated mean for this path, so the mean stays 0.
  args = {{"reward_model_path", "acme/rm"},
          {"reward_server_url", service.url("/classify")},
          {"positive_class_index", 1},
          {"center_rewards", true}};
  EXPECT_EQ(scored("reward-model", args, record).score.reward, 0.2);
  EXPECT_EQ(service.requests().size(), 3u);
}

J rubric_answer() {
  J rubrics = J::array({J{{"original_index", 0}, {"text", "mentions apples"}, {"weight", 3.0}},
                        J{{"original_index", 1}, {"text", "mentions bananas"}, {"weight", 1.0}},
                        J{{"original_index", 2}, {"text", "is rude"}, {"weight", -2.0}}});
  return J{{"record_id", "rec-7"}, {"rubrics", rubrics}};
}

// A judge that passes "apples" and "rude" criteria and fails the rest, by the texts it is sent.
void rubric_judge(FakeService &service) {
  service.handle([](const test::RecordedRequest &request) {
    J judgments = J::array();
    const J rubrics = request.json()["rubrics"];
    for (size_t i = 0; i < rubrics.size(); ++i) {
      const std::string text = rubrics[i];
      const bool pass =
          text.find("apples") != std::string::npos || text.find("rude") != std::string::npos;
      judgments.push_back(
          {{"rubric_index", i}, {"label", pass ? " PASS " : "fail"}, {"feedback", ""}});
    }
    return FakeReply{200, J{{"judgments", judgments}, {"record_id", "rec-7"}}.dump()};
  });
}

// The shadow judge (docs/tool-services.md "The RubricHub shadow judge"): a second judgment
// of the same request, compared criterion by criterion, never changing the reward.
TEST(ScoreWithServices, RubricHubShadowJudgeAuditsAgreementWithoutChangingTheReward) {
  FakeService primary;
  rubric_judge(primary);
  FakeService shadow; // passes only the apples criterion
  shadow.handle([](const test::RecordedRequest &request) {
    J judgments = J::array();
    const J rubrics = request.json()["rubrics"];
    for (size_t i = 0; i < rubrics.size(); ++i) {
      const bool pass = rubrics[i].get<std::string>().find("apples") != std::string::npos;
      judgments.push_back({{"rubric_index", i}, {"label", pass ? "pass" : "fail"}});
    }
    return FakeReply{200, J{{"judgments", judgments}, {"profile", "p2"}}.dump()};
  });
  test::TempDir audits;
  const std::string answer = py::dumps(rubric_answer(), {.sort_keys = true, .compact = true});
  J args = {{"judge_model_path", "judge/llm"},
            {"judge_server_url", primary.url("/judge")},
            {"shadow_judge_model_path", "shadow/llm"},
            {"shadow_judge_server_url", shadow.url("/judge")},
            {"shadow_judge_sample_rate", 1.0},
            {"shadow_judge_audit_dir", audits.path().string()}};
  J record = rollout(J::array({assistant("Apples are red.")}), answer);
  record["trajectory_id"] = "traj/1";
  record["cache_salt"] = "v7";
  ServiceScore result = scored("rubrichub-judge", args, record);
  EXPECT_EQ(result.score.reward, 0.25); // the primary's, as without a shadow
  const J sent = shadow.requests().at(0).json();
  EXPECT_EQ(sent["model"], "shadow/llm");
  EXPECT_EQ(sent["model_path"], "judge");
  EXPECT_EQ(sent["rubrics"], primary.requests().at(0).json()["rubrics"]);
  const J audit = result.info_update["jtc_rubrichub_shadow_judge"];
  EXPECT_EQ(audit["status"], "ok");
  EXPECT_EQ(audit["policy_version"], "v7");
  EXPECT_EQ(audit["trajectory_id"], "traj/1");
  EXPECT_EQ(audit["source_record_id"], "rec-7");
  EXPECT_EQ(audit["shadow_judge_profile"], "p2");
  ASSERT_EQ(audit["pairs"].size(), 3u);
  EXPECT_EQ(audit["pairs"][2]["text"], "is rude");
  EXPECT_EQ(audit["pairs"][2]["primary"]["label"], "pass"); // " PASS " normalised
  EXPECT_EQ(audit["pairs"][2]["shadow"]["label"], "fail");
  EXPECT_EQ(audit["pairs"][2]["agreement"], false);
  // apples and bananas agree, rude does not: 2/3; by |weight| (3 + 1) / (3 + 1 + 2).
  EXPECT_DOUBLE_EQ(audit["label_agreement"].get<double>(), 2.0 / 3);
  EXPECT_DOUBLE_EQ(audit["weighted_label_agreement"].get<double>(), 4.0 / 6);
  EXPECT_DOUBLE_EQ(audit["primary_pass_rate"].get<double>(), 2.0 / 3);
  EXPECT_DOUBLE_EQ(audit["shadow_pass_rate"].get<double>(), 1.0 / 3);
  EXPECT_DOUBLE_EQ(audit["primary_pass_shadow_fail_rate"].get<double>(), 1.0 / 3);
  EXPECT_EQ(audit["primary_fail_shadow_pass_rate"], 0.0);
  EXPECT_EQ(audit["primary_rubric_score"], 0.25);
  EXPECT_EQ(audit["shadow_rubric_score"], 0.75); // 3 / (3 + 1)
  EXPECT_EQ(audit["shadow_minus_primary_score"], 0.5);
  EXPECT_EQ(result.metrics["shadow_judge_sampled"], 1.0);
  EXPECT_EQ(result.metrics["shadow_judge_error"], 0.0);
  EXPECT_EQ(result.metrics["shadow_judge_shadow_rubric_score"], 0.75);
  EXPECT_EQ(result.metrics.size(), 11u);
  const J written = J::parse(test::read_file(audits.path() / "policy_version=v7" / "traj_1.json"));
  EXPECT_EQ(written, audit);

  // Not sampled (rate 0): a note, no call, no file.
  args["shadow_judge_sample_rate"] = 0.0;
  result = scored("rubrichub-judge", args, record);
  EXPECT_EQ(result.info_update["jtc_rubrichub_shadow_judge"]["status"], "not_sampled");
  EXPECT_EQ(result.metrics, (J{{"shadow_judge_sampled", 0.0}, {"shadow_judge_error", 0.0}}));
  EXPECT_EQ(shadow.requests().size(), 1u);

  // A failing shadow (one attempt by default) is recorded; the reward stands.
  args["shadow_judge_sample_rate"] = 1.0;
  args["shadow_judge_server_url"] = test::unreachable_url("/judge");
  record["trajectory_id"] = nullptr; // then example_id (0 is falsy), then sha256 of the output
  record["example_id"] = 0;
  result = scored("rubrichub-judge", args, record);
  EXPECT_EQ(result.score.reward, 0.25);
  const J failed = result.info_update["jtc_rubrichub_shadow_judge"];
  EXPECT_EQ(failed["status"], "failed");
  EXPECT_EQ(failed["trajectory_id"], sha2::sha256_hex("Apples are red."));
  EXPECT_NE(failed["error"].get<std::string>().find("RuntimeError: Judge request failed after 1"),
            std::string::npos)
      << failed["error"];
  EXPECT_EQ(result.metrics["shadow_judge_error"], 1.0);
}

// Python's `state.get("trajectory_id") or ... or example_id`: an empty id is falsy, so it
// falls through to the next one.
TEST(ScoreWithServices, RubricHubShadowJudgeSkipsAnEmptyTrajectoryId) {
  FakeService primary;
  rubric_judge(primary);
  const std::string answer = py::dumps(rubric_answer(), {.sort_keys = true, .compact = true});
  const J args = {{"judge_model_path", "judge/llm"},
                  {"judge_server_url", primary.url("/judge")},
                  {"shadow_judge_model_path", "shadow/llm"},
                  {"shadow_judge_sample_rate", 0.0}}; // not sampled: the audit names the id
  J record = rollout(J::array({assistant("Apples are red.")}), answer);
  record["state"]["trajectory_id"] = "";
  record["trajectory_id"] = "";
  record["example_id"] = "ex-3";
  ServiceScore result = scored("rubrichub-judge", args, record);
  const J audit = result.info_update["jtc_rubrichub_shadow_judge"];
  EXPECT_EQ(audit["status"], "not_sampled");
  EXPECT_EQ(audit["trajectory_id"], "ex-3");

  // An empty example_id too: the sha256 of the output.
  record["example_id"] = "";
  result = scored("rubrichub-judge", args, record);
  EXPECT_EQ(result.info_update["jtc_rubrichub_shadow_judge"]["trajectory_id"],
            sha2::sha256_hex("Apples are red."));
}

TEST(ScoreWithServices, RubricHubWeighsTheJudgmentsOfTheSampledCriteria) {
  FakeService service;
  rubric_judge(service);
  const std::string answer = py::dumps(rubric_answer(), {.sort_keys = true, .compact = true});
  const J args = {{"judge_model_path", "judge/llm"}, {"judge_server_url", service.url("/judge")}};
  // (3 [apples, pass] + 0 [bananas, fail] - 2 [rude, pass]) / (3 + 1) = 0.25.
  ServiceScore result =
      scored("rubrichub-judge", args, rollout(J::array({assistant("Apples are red.")}), answer));
  EXPECT_EQ(result.score.reward, 0.25);
  EXPECT_EQ(result.score.metrics["jtc_weighted_score"], 0.25);
  EXPECT_EQ(result.score.metrics["orphan_think_close_tag"], 0.0);
  const J sent = service.requests()[0].json();
  EXPECT_EQ(sent["input"], "judge this");
  EXPECT_EQ(sent["output"], "Apples are red.");
  EXPECT_EQ(sent["model"], "judge/llm");
  EXPECT_EQ(sent["model_path"], "judge");
  EXPECT_EQ(sent["rubrics"].size(), 3u);
  EXPECT_EQ(result.info_update["jtc_rubrichub_judge"]["reward"], 0.25);
  EXPECT_EQ(result.info_update["jtc_rubrichub_judge"]["request"], sent);
  // An orphan </think> adds -0.2.
  EXPECT_NEAR(
      scored("rubrichub-judge", args, rollout(J::array({assistant("x</think>Apples.")}), answer))
          .score.reward,
      0.05,
      1e-12);
  EXPECT_EQ(service.requests().size(), 2u);
  // Truncated: no judge call, non_termination_penalty -0.25.
  J truncated = rollout(J::array({assistant("Apples")}), answer);
  truncated["is_truncated"] = true;
  result = scored("rubrichub-judge", args, truncated);
  EXPECT_EQ(result.score.reward, -0.25);
  EXPECT_TRUE(result.request.is_null());
  EXPECT_EQ(result.info_update, J::object());
  EXPECT_EQ(service.requests().size(), 2u);
}

TEST(ScoreWithServices, ABadJudgmentFailsTheRolloutAsAnEnvironmentError) {
  FakeService service;
  service.handle([](const test::RecordedRequest &) {
    return FakeReply{200, R"({"judgments": [{"rubric_index": 0, "label": "maybe"}]})"};
  });
  const J args = {{"judge_model_path", "jm"}, {"search_server_url", service.url("/search")}};
  EXPECT_PB_ERROR(scored("search-visit-agent-judge",
                         args,
                         rollout(J::array({assistant("Paris")}),
                                 "Paris",
                                 J::object(),
                                 J{{"question", "Capital?"}})),
                  3,
                  "must be pass or fail");
}

TEST(ScoreWithServices, SearchJudgesCallTheDerivedJudgeRoute) {
  FakeService service;
  service.script({{200, R"({"judgments": [{"rubric_index": 0, "label": "pass"}]})"},
                  {200, R"({"judgments": [{"rubric_index": 0, "label": "fail"}]})"}});
  const J args = {{"judge_model_path", "jm"}, {"search_server_url", service.url("/search")}};
  const J record = rollout(J::array({assistant("It is Paris.")}),
                           "Paris",
                           J{{"jtc_tool_command_error_count", 2}},
                           J{{"question", "Capital of France?"}});
  // pass: 1.0 - 0.05 x 2 stderr = 0.9; fail: -0.1.
  ServiceScore result = scored("search-agent-webterminal-judge", args, record);
  EXPECT_EQ(result.score.reward, 0.9);
  EXPECT_EQ(result.score.metrics["judge_answer"], 1.0);
  EXPECT_EQ(result.info_update["judge"]["response"]["judgments"][0]["label"], "pass");
  EXPECT_EQ(scored("search-agent-webterminal-judge", args, record).score.reward, -0.1);
  const auto requests = service.requests();
  ASSERT_EQ(requests.size(), 2u);
  EXPECT_EQ(requests[0].path, "/judge");
  EXPECT_EQ(
      requests[0].json().dump(),
      R"({"input":"Capital of France?","output":"It is Paris.","rubrics":["The response's final answer is: Paris"],"model":"jm","model_path":"judge"})");
  // Tool calls in the last message: no judge call.
  J calling = assistant("");
  calling["tool_calls"] = J::array({J{{"id", "1"}, {"name", "search"}, {"arguments", "{}"}}});
  EXPECT_EQ(scored("search-agent-webterminal-judge", args, rollout(J::array({calling}), "Paris"))
                .score.reward,
            -1.0);
  EXPECT_EQ(service.requests().size(), 2u);
}

TEST(ScoreWithServices, ServiceFailuresAreInfraAndCancellationIsCancelled) {
  FakeService service;
  service.handle([](const test::RecordedRequest &) { return FakeReply{503, "overloaded"}; });
  const J args = {{"reward_model_path", "rm"},
                  {"reward_server_url", service.url("/classify")},
                  {"reward_max_retries", 2}};
  const J record = rollout(J::array({assistant("x")}));
  try {
    scored("reward-model", args, record);
    ADD_FAILURE() << "no error";
  } catch (const ServiceError &error) {
    EXPECT_TRUE(error.infra());
    EXPECT_EQ(std::string(error.what()),
              "Reward model classification failed with HTTP 503 at " + service.url("/classify") +
                  ": overloaded");
  }
  EXPECT_EQ(service.requests().size(), 2u);
  std::atomic<bool> cancel{true};
  ScoringOptions options = fast();
  options.control.cancel = &cancel;
  try {
    score_with_services(environments::resolve("reward-model"), args, record, options);
    ADD_FAILURE() << "no error";
  } catch (const ServiceError &error) {
    EXPECT_EQ(error.kind(), FailureKind::cancelled);
  }
  EXPECT_EQ(service.requests().size(), 2u);
}

TEST(ScoreWithServices, EnvironmentsWithoutAServiceScoreAsRecorded) {
  const ServiceScore result = score_with_services(
      environments::resolve("label"),
      J::object(),
      rollout(J::array({assistant("<feedback>ok</feedback><label>yes</label>")}), "yes"));
  EXPECT_EQ(result.score.reward, 2.0);
  EXPECT_TRUE(result.request.is_null());
  EXPECT_TRUE(result.response.is_null());
}

} // namespace
} // namespace pb::tool_services
