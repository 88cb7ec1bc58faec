// SPDX-License-Identifier: MIT
// Golden scoring fixtures: every reward term of every behaviour, with penalties, clamping,
// NaN, missing reward files and budget overruns (docs/environments.md "Scoring").
#include "rollouts.hpp"
#include "test_support.hpp"

#include <primebeaker/core/text.hpp>
#include <primebeaker/environments/catalog.hpp>
#include <primebeaker/environments/python.hpp>
#include <primebeaker/environments/scoring.hpp>

#include <gtest/gtest.h>

#include <cmath>

namespace pb::environments {
namespace {

using J = OrderedJson;

using test::assistant;
using test::rollout;

Score score(const std::string &env, const J &r, const J &args = J::object()) {
  return score_rollout(resolve(env), args, r);
}

// "reward | term=value ..." in metric order, values in Python repr.
std::string summary(const Score &s) {
  std::string out = py::float_repr(s.reward) + " |";
  for (auto it = s.metrics.begin(); it != s.metrics.end(); ++it) {
    out += " " + it.key() + "=" + py::dumps(it.value());
  }
  return out;
}

const char *const verdict = R"({"feedback": "evidence", "label": "Correct"})";

TEST(Scoring, Label) {
  EXPECT_EQ(
      summary(score(
          "label",
          rollout(J::array({assistant("<feedback>ok</feedback>\n<LABEL> Mostly  Right </label>")}),
                  "mostly right"))),
      "2.0 | valid_format=1.0 correct_label=1.0");
  EXPECT_EQ(
      summary(score(
          "label", rollout(J::array({assistant("<feedback>ok</feedback><label>x</label>")}), "y"))),
      "1.0 | valid_format=1.0 correct_label=0.0");
  EXPECT_EQ(
      summary(score("label",
                    rollout(J::array({assistant("<feedback></feedback><label>x</label>")}), "x"))),
      "0.0 | valid_format=0.0 correct_label=0.0");
  EXPECT_EQ(
      summary(score("label",
                    rollout(J::array({assistant("<feedback>a</feedback><label>x</label>")}), ""))),
      "1.0 | valid_format=1.0 correct_label=0.0"); // missing answer scores 0
}

TEST(Scoring, CodeToolLabel) {
  const J code = assistant("<code>\n```python\nprint(len(output))\n```\n</code>");
  const J tool = {{"role", "tool"}, {"tool_call_id", "python"}, {"content", "```stdout\n3\n```"}};
  EXPECT_EQ(
      summary(score(
          "code-tool-label",
          rollout(J::array({code, tool, assistant("<feedback>f</feedback><label>Pass</label>")}),
                  "pass"))),
      "3.0 | valid_first_turn=1.0 valid_final_format=1.0 correct_final_label=1.0");
  EXPECT_EQ(summary(score(
                "code-tool-label",
                rollout(J::array({assistant("<feedback>f</feedback><label>no</label>")}), "pass"))),
            "2.0 | valid_first_turn=1.0 valid_final_format=1.0 correct_final_label=0.0");
  EXPECT_EQ(summary(score("code-tool-label", rollout(J::array({assistant("just text")}), "pass"))),
            "0.0 | valid_first_turn=0.0 valid_final_format=0.0 correct_final_label=0.0");
}

TEST(Scoring, ToolLabelTermsPenaltiesAndRoutes) {
  const J state = {{"jtc_route", "final"},
                   {"jtc_tool_call_count", 80},
                   {"jtc_tool_command_error_count", 2},
                   {"jtc_unknown_tool_call_count", 3},
                   {"jtc_browse_call_count", 4},
                   {"jtc_browse_url_not_in_output_count", 1},
                   {"jtc_successful_browse_count", 2},
                   {"jtc_standalone_command_count", 4},
                   {"jtc_targeted_standalone_command_count", 3}};
  const J args = {{"tool_use_reward_coef", 0.5},
                  {"browse_url_not_in_output_penalty", 0.25},
                  {"browse_success_reward_coef", 0.2},
                  {"standalone_command_repeat_penalty", 1.0}};
  // tool use clamps at max_tool_calls (80 > 64): 0.5; stderr -0.2; unknown -0.3; browse -0.25;
  // success +0.2; repeat -(3-1)/4 = -0.5; final terms: 1 + 1 + 0 + 1.
  EXPECT_EQ(
      summary(score("tool-label", rollout(J::array({assistant(verdict)}), "correct", state), args)),
      "3.45 | valid_tool_or_final_turn=1.0 invalid_trace_penalty_reward=0.0 tool_use_reward=0.5 "
      "tool_stderr_penalty_reward=-0.2 unknown_tool_penalty_reward=-0.30000000000000004 "
      "browse_url_not_in_output_penalty_reward=-0.25 browse_success_reward=0.2 "
      "standalone_command_repeat_penalty_reward=-0.5 valid_final_format=1.0 strict_final_json=1.0 "
      "reasoning_only_final_penalty_reward=0.0 correct_final_label=1.0 browse_call_count=4.0 "
      "browse_url_not_in_output_count=1.0 successful_browse_count=2.0");
  // The stored route wins: an over-budget call is invalid (-4), not re-scored as tool.
  EXPECT_EQ(score("tool-label",
                  rollout(J::array({assistant("<tool_call>{\"name\": \"terminal\", \"arguments\": "
                                              "{\"command\": \"ls\"}}</tool_call>")}),
                          "x",
                          J{{"jtc_route", "invalid"}}))
                .reward,
            -4.0);
  // Without a stored route: computed from the last message. Blank command -> invalid.
  EXPECT_EQ(score("tool-label",
                  rollout(J::array({assistant("<tool_call>{\"name\": \"terminal\", \"arguments\": "
                                              "{\"command\": \" \"}}</tool_call>")}),
                          "x"))
                .metrics["invalid_trace_penalty_reward"],
            -4.0);
  // Unadvertised (fake) tool names still route as tool.
  EXPECT_EQ(
      score("tool-label",
            rollout(J::array({assistant("<tool_call>{\"name\": \"browser\"}</tool_call>")}), "x"))
          .metrics["valid_tool_or_final_turn"],
      1.0);
  // Infrastructure failure zeroes the route terms.
  EXPECT_EQ(
      summary(score("tool-label",
                    rollout(J::array({assistant("nothing")}),
                            "x",
                            J{{"jtc_route", "invalid"}, {"jtc_infrastructure_failure", true}})))
          .substr(0, 80),
      "0.0 | valid_tool_or_final_turn=0.0 invalid_trace_penalty_reward=0.0 tool_use_rew");
  // Reasoning-only verdict: valid format, penalty -4, not strict.
  J reasoning_only = assistant("");
  reasoning_only["reasoning_content"] = verdict;
  const Score r = score("tool-label",
                        rollout(J::array({reasoning_only}), "correct", J{{"jtc_route", "final"}}));
  EXPECT_EQ(r.metrics["valid_final_format"], 1.0);
  EXPECT_EQ(r.metrics["strict_final_json"], 0.0);
  EXPECT_EQ(r.metrics["reasoning_only_final_penalty_reward"], -4.0);
  EXPECT_EQ(r.metrics["correct_final_label"], 1.0);
  // max_tool_calls 0: no tool-use reward, no division.
  EXPECT_EQ(score("tool-label",
                  rollout(J::array({assistant(verdict)}), "x", J{{"jtc_tool_call_count", 3}}),
                  J{{"max_tool_calls", 0}, {"tool_use_reward_coef", 1.0}, {"tools", J::array()}})
                .metrics["tool_use_reward"],
            0.0);
}

TEST(Scoring, ArticulatedHarnessRubrics) {
  const J info = {{"expected_rubric_ids", J::array({"1", "2", "3", "4"})},
                  {"gold_submissions",
                   J::array({J{{"rubric_id", 1}, {"label", "PASS"}},
                             J{{"rubric_id", "2"}, {"label", "fail"}},
                             J{{"rubric_id", "3"}, {"label", "maybe"}}})}};
  const J state = {
      {"jtc_route", "tool"},
      {"jtc_submit_submissions",
       {{"1", {{"label", "pass"}}}, {"2", {{"label", "pass"}}}, {"3", {{"label", "pass"}}}}}};
  const Score s =
      score("articulated-harness",
            rollout(J::array({assistant("")}), "", state, info),
            J{{"rubric_completion_reward_coef", 2.0}, {"tools", J::array({"terminal", "submit"})}});
  EXPECT_EQ(s.metrics["rubric_completion_reward"], 0.5);  // 1 correct of 4, coef 2
  EXPECT_EQ(s.metrics["missing_rubric_penalty"], -0.25);  // 1 waiting of 4
  EXPECT_FALSE(s.metrics.contains("valid_final_format")); // no final response required
  EXPECT_EQ(s.reward, 1.0 + 0.5 - 0.25);
  // Without gold labels: completed / expected, no missing penalty. Ids from indexed_rubrics.
  const J info2 = {{"indexed_rubrics", J::array({J{{"rubric_id", 7}}, J{{"id", "8"}}})}};
  const Score s2 = score(
      "articulated-harness",
      rollout(J::array({assistant("")}),
              "",
              J{{"jtc_submit_submissions", J::array({J{{"rubric_id", 7}, {"label", "fail"}}})}},
              info2));
  EXPECT_EQ(s2.metrics["rubric_completion_reward"], 0.5);
  EXPECT_EQ(s2.metrics["missing_rubric_penalty"], 0.0);
}

TEST(Scoring, PodmanTerminalCases) {
  const J done = {{"podman_terminal_complete", true},
                  {"podman_reward_file_score", 0.75},
                  {"podman_reward_file_present", true},
                  {"podman_test_output", {{"exit_code", 0}}}};
  EXPECT_EQ(score("podman-terminal",
                  rollout(J::array(), "", done),
                  J{{"reward_file_weight", 2.0},
                    {"termination_reward_weight", 0.25},
                    {"podman_failure_penalty_weight", 3.0}})
                .reward,
            1.75);
  EXPECT_EQ(summary(score("podman-terminal", rollout(J::array(), "", done))),
            "0.85 | task_reward_file=0.75 episode_terminated=1.0 podman_failed_reward=0.0 "
            "fake_tool_penalty=-0.0 "
            "terminal_completion_metric=1.0 reward_file_present_metric=1.0 "
            "podman_test_success_metric=1.0 "
            "podman_failure_metric=0.0 podman_oom_metric=0.0 fake_tool_count_metric=0.0");
  // Setup failure, OOM, no reward file, fake tools, unfinished.
  EXPECT_EQ(
      score(
          "podman-terminal",
          rollout(J::array(), "", podman_failure_fields("setup", "ValueError: row needs an image")))
          .reward,
      -1.0);
  const J oom = podman_failure_fields("execute", "RuntimeError: container was OOM-killed");
  EXPECT_EQ(oom["podman_failure_type"], "RuntimeError");
  EXPECT_EQ(oom["podman_failure_message"], "container was OOM-killed");
  EXPECT_EQ(oom["podman_failure_oom"], true);
  EXPECT_EQ(score("podman-terminal", rollout(J::array(), "", oom)).metrics["podman_oom_metric"],
            1.0);
  EXPECT_EQ(
      podman_failure_fields(
          "test", "no live Podman task session is available for tests")["podman_failure_type"],
      "PodmanError");
  EXPECT_FALSE(detail_mentions_oom("zoom boom"));
  EXPECT_TRUE(detail_mentions_oom("Killed: OOM"));
  EXPECT_TRUE(detail_mentions_oom("CUDA out of memory"));
  EXPECT_EQ(score("podman-terminal", rollout(J::array(), "", J{{"podman_terminal_complete", true}}))
                .reward,
            0.1);
  EXPECT_EQ(score("podman-terminal",
                  rollout(J::array(), "", J{{"jtc_unknown_tool_call_count", 2}}),
                  J{{"fake_tool_penalty_weight", 0.25}})
                .reward,
            -0.5);
  EXPECT_EQ(score("podman-terminal", rollout(J::array(), "")).reward, 0.0);
  // Clamping, NaN and legacy weight.
  EXPECT_EQ(score("podman-terminal", rollout(J::array(), "", J{{"podman_reward_file_score", 7.0}}))
                .reward,
            1.0);
  EXPECT_EQ(score("podman-terminal",
                  rollout(J::array(), "", J{{"podman_reward_file_score", std::nan("")}}))
                .reward,
            0.0);
  EXPECT_EQ(score("podman-terminal",
                  rollout(J::array(), "", J{{"podman_verifier_reward", 0.5}}),
                  J{{"verifier_reward_weight", 2.0}})
                .reward,
            1.0);
}

TEST(Scoring, RewardFileProbe) {
  auto probe = [](const std::string &body) {
    const RewardFile r = parse_reward_probe(std::string(reward_file_sentinel) + "\n" + body + "\n");
    return py::float_repr(r.value) + (r.present ? " present" : " absent") +
           (r.error.empty() ? "" : " error=" + r.error);
  };
  EXPECT_EQ(probe("1.5"), "1.0 present");
  EXPECT_EQ(probe(" 0.25 "), "0.25 present");
  EXPECT_EQ(probe("1_0"), "1.0 present");
  EXPECT_EQ(probe("-inf"), "0.0 present error=non-finite reward file value: '-inf'");
  EXPECT_EQ(probe("nan"), "0.0 present error=non-finite reward file value: 'nan'"); // not 1.0
  EXPECT_EQ(probe("not-a-number"), "0.0 present error=invalid reward file value: 'not-a-number'");
  EXPECT_EQ(parse_reward_probe("").present, false);
  EXPECT_EQ(parse_reward_probe("0.9\n").present, false); // missing sentinel: missing file
}

TEST(Scoring, TerminalToolLabel) {
  J call = assistant("");
  call["tool_calls"] =
      J::array({J{{"id", "t1"}, {"name", "terminal"}, {"arguments", "{\"command\": \"rg x\"}"}}});
  EXPECT_EQ(
      summary(score("terminal-tool-label", rollout(J::array({call}), "x"))),
      "0.0 | valid_terminal_or_final_turn=1.0 invalid_trace_penalty_reward=-1.0 "
      "valid_final_format=0.0 "
      "strict_final_json=0.0 reasoning_only_final_penalty_reward=0.0 correct_final_label=0.0");
  EXPECT_EQ(
      score("terminal-tool-label",
            rollout(J::array({assistant("```json\n" + std::string(verdict) + "\n```")}), "correct"))
          .reward,
      1.0 + 1.0 + 0.0 + 1.0); // fenced: permissive yes, strict no
  EXPECT_EQ(score("terminal-tool-label", rollout(J::array({assistant("no idea")}), "x")).reward,
            -4.0);
}

TEST(Scoring, RewardModelAndMultipleChoice) {
  const J state = {
      {"reward_model_response", {{"data", J::array({J{{"probs", J::array({0.8, 0.2})}}})}}}};
  const J args = {{"reward_model_path", "rm"}, {"log_science_accuracy", true}};
  const J r = rollout(J::array({assistant("The answer is (C).")}), "C", state);
  EXPECT_EQ(summary(score("reward-model", r, args)), "0.8 | reward_model_score=0.8 accuracy=1.0");
  const Score logit = score(
      "reward-model",
      r,
      J{{"reward_model_path", "rm"}, {"score_transform", "logit"}, {"standardization_std", 2.0}});
  EXPECT_NEAR(logit.reward, std::log(4.0) / 2.0, 1e-12);
  const J certain = {
      {"reward_model_response", {{"data", J::array({J{{"probs", J::array({1.0})}}})}}}};
  EXPECT_NEAR(score("reward-model",
                    rollout(J::array({assistant("x")}), "", certain),
                    J{{"reward_model_path", "rm"}, {"score_transform", "logit"}})
                  .reward,
              std::log(1 - 1e-7) - std::log(1e-7),
              1e-9);
  EXPECT_PB_ERROR(score("reward-model",
                        rollout(J::array({assistant("x")}),
                                "",
                                J{{"reward_model_response",
                                   {{"data", J::array({J{{"probs", J::array({1.5})}}})}}}}),
                        args),
                  3,
                  "must be a number in [0, 1]");
  EXPECT_EQ(
      service_request(resolve("reward-model"), args, r).dump(),
      R"({"model":"rm","messages":[{"role":"user","content":"judge this"},{"role":"assistant","content":"The answer is (C)."}],"add_generation_prompt":false})");
  EXPECT_EQ(summary(score("multiple-choice-accuracy",
                          rollout(J::array({assistant("B then D")}), "Answer: D"))),
            "0.0 | accuracy=1.0");
}

J rubric_row(const std::vector<std::pair<std::string, double>> &rubrics) {
  J list = J::array();
  for (size_t i = 0; i < rubrics.size(); ++i) {
    list.push_back(
        {{"original_index", i}, {"text", rubrics[i].first}, {"weight", rubrics[i].second}});
  }
  return J{{"record_id", "rec-1"}, {"rubrics", list}};
}

TEST(Scoring, RubricHubJudge) {
  const std::string answer =
      py::dumps(rubric_row({{"cites sources", 2.0}, {"is rude", -1.0}, {"is short", 1.0}}),
                {.sort_keys = true, .compact = true});
  J judged = rollout(J::array({assistant("A fine answer.")}),
                     answer,
                     J{{"judge_response",
                        {{"judgments",
                          J::array({J{{"rubric_index", 0}, {"label", "PASS"}},
                                    J{{"rubric_index", 1}, {"label", "pass"}},
                                    J{{"rubric_index", 2}, {"label", "fail"}}})}}}});
  // (2 - 1) / (2 + 1) = 1/3.
  EXPECT_EQ(
      summary(score("rubrichub-judge", judged, J{{"judge_model_path", "m"}})),
      "0.3333333333333333 | jtc_weighted_score=0.3333333333333333 invalid_final_output=0.0 "
      "non_terminated_policy_output=0.0 orphan_think_close_tag=0.0 orphan_think_close_penalty=0.0");
  const J request =
      service_request(resolve("rubrichub-judge"), J{{"judge_model_path", "m"}}, judged);
  EXPECT_EQ(request["input"], "judge this");
  EXPECT_EQ(request["rubrics"][0], "cites sources");
  EXPECT_NE(request["rubrics"][1].get<std::string>().find("pass ONLY"), std::string::npos);
  EXPECT_EQ(request["model_path"], "judge");
  // Orphan </think>, truncation, empty output.
  judged["completion"] = J::array({assistant("reasoning</think>A fine answer.")});
  EXPECT_NEAR(score("rubrichub-judge", judged).reward, 1.0 / 3.0 - 0.2, 1e-12);
  judged["is_truncated"] = true;
  EXPECT_NEAR(score("rubrichub-judge", judged).reward, -0.45, 1e-12);
  judged["is_truncated"] = false;
  judged["completion"] = J::array({assistant("  ")});
  EXPECT_EQ(
      summary(score("rubrichub-judge", judged, J{{"invalid_output_penalty", -0.5}})).substr(0, 48),
      "-0.5 | jtc_weighted_score=0.0 invalid_final_outp");
  EXPECT_TRUE(service_request(resolve("rubrichub-judge"), J::object(), judged).is_null());
  // Bad judgments fail the rollout; negative-only samples too.
  judged["completion"] = J::array({assistant("ok")});
  judged["state"]["judge_response"]["judgments"][2]["label"] = "maybe";
  EXPECT_PB_ERROR(score("rubrichub-judge", judged), 3, "must be pass or fail");
  judged["answer"] = py::dumps(rubric_row({{"is rude", -1.0}}));
  EXPECT_PB_ERROR(score("rubrichub-judge", judged), 3, "no positive weight");
}

TEST(Scoring, SearchAgentsExactMatchAndJudges) {
  const std::string final =
      "Per https://x.y the answer:\n```json\n{\"answer\": \" STRASSE \"}\n```";
  EXPECT_EQ(
      summary(score("search-agent-dataset", rollout(J::array({assistant(final)}), "stra\u00dfe"))),
      "2.0 | final_json_format=1.0 answer_exact_match=1.0");
  J with_calls = assistant(final);
  with_calls["tool_calls"] = J::array({J{{"id", "1"}, {"name", "search"}, {"arguments", "{}"}}});
  EXPECT_EQ(score("search-visit-agent-dataset", rollout(J::array({with_calls}), "strasse")).reward,
            0.0);

  const J state = {
      {"judge_response", {{"judgments", J::array({J{{"rubric_index", 0}, {"label", "pass"}}})}}},
      {"jtc_tool_command_error_count", 3}};
  const J args = {{"judge_model_path", "jm"}};
  J r = rollout(
      J::array({assistant("It is Paris.")}), "Paris", state, J{{"question", "Capital of France?"}});
  EXPECT_EQ(summary(score("search-agent-webterminal-judge", r, args)),
            "0.85 | judge_answer=1.0 tool_stderr_penalty_reward=-0.15000000000000002 "
            "missing_final_answer_penalty_reward=0.0");
  EXPECT_EQ(
      py::dumps(service_request(resolve("search-agent-visit-judge"), args, r)),
      R"({"input": "Capital of France?", "output": "It is Paris.", "rubrics": ["The response's final answer is: Paris"], "model": "jm", "model_path": "judge"})");
  EXPECT_EQ(summary(score("search-visit-agent-judge", r, args)), "1.0 | judge_answer=1.0");
  // Tool calls in the last message: no judge, missing-final penalty.
  J unfinished = rollout(J::array({with_calls}), "Paris", state);
  EXPECT_EQ(score("search-agent-webterminal-judge", unfinished, args).reward,
            -1.0 - 0.15000000000000002);
  EXPECT_TRUE(
      service_request(resolve("search-agent-webterminal-judge"), args, unfinished).is_null());
  r["state"]["judge_response"]["judgments"][0]["label"] = "unsure";
  EXPECT_PB_ERROR(
      score("search-visit-agent-judge", r, args), 3, "judge label must be pass or fail");
}

TEST(Scoring, CliScoresJsonLines) {
  test::TempDir dir;
  std::string lines;
  for (const char *label : {"Correct", "wrong"}) {
    J r = rollout(
        J::array({assistant(std::string("{\"feedback\": \"f\", \"label\": \"") + label + "\"}")}),
        "correct",
        J{{"jtc_route", "final"}, {"jtc_tool_call_count", 2}});
    lines += r.dump() + "\n";
  }
  lines += "not json\n";
  test::write_file(dir / "r.jsonl", lines);
  const auto run = test::run_primebeaker({"environments",
                                          "score",
                                          "jtc_tool_label",
                                          "--args",
                                          "{\"tool_use_reward_coef\": 1.0}",
                                          "--rollouts",
                                          (dir / "r.jsonl").string()});
  EXPECT_EQ(run.exit_code, 1) << run.err;
  const auto out = pb::text::split(run.out, '\n');
  ASSERT_GE(out.size(), 3u) << run.out;
  EXPECT_EQ(J::parse(out[0])["reward"], 4.03125);
  EXPECT_EQ(J::parse(out[1])["reward"], 3.03125);
  EXPECT_NE(J::parse(out[2])["error"].get<std::string>().find("line 3: invalid JSON"),
            std::string::npos);
  EXPECT_NE(run.err.find("1 of 3 rollouts could not be scored"), std::string::npos);
}

} // namespace
} // namespace pb::environments
