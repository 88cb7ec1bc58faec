// SPDX-License-Identifier: MIT
// The pure half of the runs module: timestamps, job classification, the run's outcome,
// log slicing, --since/--timeout parsing, receipts, and the backoff of beaker calls.
#include "fixtures.hpp"
#include "test_support.hpp"

#include <primebeaker/runs/runs.hpp>

#include <gtest/gtest.h>

#include <deque>

namespace {

using namespace pb::runs;
using namespace pb::test::runs;
using pb::OrderedJson;

TEST(RunsTime, GoZeroTimeAndMissingAreUnset) {
  EXPECT_FALSE(parse_time(OrderedJson("0001-01-01T00:00:00Z")).has_value());
  EXPECT_FALSE(parse_time(OrderedJson(nullptr)).has_value());
  EXPECT_FALSE(parse_time(OrderedJson("")).has_value());
  EXPECT_FALSE(parse_time(OrderedJson("yesterday")).has_value());
  const auto a = parse_time(OrderedJson("2026-08-10T09:14:04.001Z"));
  const auto b = parse_time(OrderedJson("2026-08-10T09:14:04Z"));
  const auto c = parse_time(OrderedJson("2026-08-10T11:14:04.002+02:00"));
  ASSERT_TRUE(a && b && c);
  EXPECT_LT(*b, *a); // fractional seconds count (a string compare would say otherwise)
  EXPECT_EQ(*c - *a, std::chrono::milliseconds(1));
}

TEST(RunsClassify, EveryState) {
  EXPECT_EQ(classify_job(status_pending()), JobState::pending);
  EXPECT_EQ(classify_job(status_scheduled()), JobState::scheduled);
  EXPECT_EQ(classify_job(status_running()), JobState::running);
  EXPECT_EQ(classify_job(status_exited(0, 30)), JobState::succeeded);
  EXPECT_EQ(classify_job(status_exited(3, 30)), JobState::failed);
  auto uploading = status_running();
  uploading["exited"] = stamp(30);
  uploading["exitCode"] = 0;
  EXPECT_EQ(classify_job(uploading), JobState::uploading);
  auto failed_no_code = status_running();
  failed_no_code["failed"] = stamp(30);
  EXPECT_EQ(classify_job(failed_no_code), JobState::failed);
  EXPECT_EQ(classify_job(status_canceled(4, "stopped by jdoe", 30, 143)), JobState::canceled);
  auto stopping = status_running();
  stopping["canceled"] = stamp(20);
  stopping["canceledCode"] = 4;
  EXPECT_EQ(classify_job(stopping), JobState::running); // still shutting down
  auto never_started = status_pending();
  never_started["canceled"] = stamp(20);
  never_started["canceledCode"] = 4;
  EXPECT_EQ(classify_job(never_started), JobState::canceled);
  EXPECT_EQ(classify_job(status_canceled(0, "sibling task failed", 30, 143)),
            JobState::sibling_canceled);
}

TEST(RunsClassify, FinalizedAfterPreemptionIsPreemptedNotSucceededOrFailed) {
  EXPECT_EQ(classify_job(status_preempted(30)), JobState::preempted);
  auto user = status_preempted(30);
  user["canceledCode"] = 2;
  user["exitCode"] = 137;
  EXPECT_EQ(classify_job(user), JobState::preempted);
  auto named = status_exited(0, 30);
  named["canceledCode"] = "SIBLING_TASK_PREEMPTION";
  EXPECT_EQ(classify_job(named), JobState::preempted);
  // Preempted while running (not finalized yet) is still preemption.
  auto live = status_running();
  live["canceled"] = stamp(20);
  live["canceledCode"] = 1;
  EXPECT_EQ(classify_job(live), JobState::preempted);
}

TEST(RunsOutcome, RolesRanksAndRunning) {
  const auto run = parse_run(four(status_running()));
  ASSERT_EQ(run.replicas.size(), 4u);
  EXPECT_EQ(run.replicas[0].label(), "trainer:0");
  EXPECT_EQ(run.replicas[3].label(), "inference:3");
  EXPECT_EQ(run.replicas[2].node, "node-2");
  EXPECT_EQ(run.outcome, Outcome::running);
  EXPECT_EQ(state_summary(run), "4 running");
  EXPECT_EQ(parse_run(experiment({})).outcome, Outcome::running);
}

TEST(RunsOutcome, FirstRealFailureDecidesNotTheCancellations) {
  // inference:2 fails at minute 20; the trainer then exits 90 (a peer failed), inference:1 is
  // canceled for the sibling and inference:3 is canceled with no reason at all.
  auto run =
      parse_run(experiment({job(job_id(0), 0, status_exited(90, 21)),
                            job(job_id(1), 1, status_canceled(0, "sibling task failed", 22, 143)),
                            job(job_id(2), 2, status_exited(1, 20)),
                            job(job_id(3), 3, status_canceled(0, "", 23, 137))}));
  EXPECT_EQ(run.outcome, Outcome::failed);
  ASSERT_TRUE(run.deciding_replica);
  EXPECT_EQ(run.replicas[*run.deciding_replica].label(), "inference:2");
  EXPECT_EQ(run.replicas[2].detail, "exit code 1");
  EXPECT_TRUE(run.replicas[0].consequence);
  EXPECT_EQ(run.replicas[0].detail, "exit code 90 (a peer replica failed)");
  EXPECT_EQ(run.replicas[1].state, JobState::sibling_canceled);
  EXPECT_EQ(run.replicas[3].state, JobState::sibling_canceled); // canceled after the failure
  EXPECT_EQ(exit_code_for(run.outcome), k_exit_failed);
}

TEST(RunsOutcome, EarliestOfTwoRealFailuresWins) {
  auto run = parse_run(experiment(
      {job(job_id(0), 0, status_exited(1, 25)), job(job_id(1), 1, status_exited(2, 21))}));
  ASSERT_TRUE(run.deciding_replica);
  EXPECT_EQ(run.replicas[*run.deciding_replica].rank, 1);
}

TEST(RunsOutcome, SucceededWithSiblingCompletedCancellation) {
  // The spec's example: the trainer finished, inference was canceled "sibling task completed".
  auto run = parse_run(
      experiment({job(job_id(0), 0, status_exited(0, 30)),
                  job(job_id(1), 1, status_canceled(0, "sibling task completed", 31, 91))}));
  EXPECT_EQ(run.outcome, Outcome::succeeded);
  EXPECT_EQ(exit_code_for(run.outcome), 0);
  EXPECT_EQ(run.replicas[1].state, JobState::sibling_canceled);
}

TEST(RunsOutcome, PreemptedCanceledAndManualStaysManual) {
  auto preempted = parse_run(
      experiment({job(job_id(0), 0, status_preempted(30)),
                  job(job_id(1), 1, status_canceled(0, "sibling task preempted", 31, 143))}));
  EXPECT_EQ(preempted.outcome, Outcome::preempted);
  EXPECT_EQ(exit_code_for(preempted.outcome), k_exit_preempted);

  auto canceled = parse_run(four(status_canceled(4, "stopped by jdoe", 30, 143)));
  EXPECT_EQ(canceled.outcome, Outcome::canceled);
  EXPECT_EQ(exit_code_for(canceled.outcome), k_exit_canceled);

  // A manual stop after a failure is still a manual stop, shown as canceled.
  auto mixed =
      parse_run(experiment({job(job_id(0), 0, status_exited(1, 20)),
                            job(job_id(1), 1, status_canceled(4, "stopped by jdoe", 25, 143))}));
  EXPECT_EQ(mixed.outcome, Outcome::failed);
  EXPECT_EQ(mixed.replicas[1].state, JobState::canceled);
  EXPECT_EQ(exit_code_for(Outcome::running), k_exit_timed_out);
}

TEST(RunsOutcome, NewestJobPerReplicaAndPreemptionCount) {
  auto old_job = job(job_id(0, 1), 0, status_preempted(10));
  auto new_job = job(job_id(0, 2), 0, status_running());
  new_job["status"]["created"] = stamp(11);
  // Listed newest first: the order in the array must not matter.
  auto run = parse_run(experiment({new_job, old_job}));
  ASSERT_EQ(run.replicas.size(), 1u);
  EXPECT_EQ(run.replicas[0].job_id, job_id(0, 2));
  EXPECT_EQ(run.replicas[0].attempts, 2);
  EXPECT_EQ(run.replicas[0].preemptions, 1);
  EXPECT_EQ(run.outcome, Outcome::running);
}

TEST(RunsOutcome, RolesFromCommands) {
  auto single =
      job(job_id(0), 0, status_running(), "T", {}, {"primebeaker", "node", "single", "sft"});
  EXPECT_EQ(parse_run(experiment({single})).replicas[0].role, "sft");
  auto other = job(job_id(0), 0, status_running(), "T", {}, {"python", "serve.py"});
  EXPECT_EQ(parse_run(experiment({other})).replicas[0].role, "prime-rl-multinode");
}

TEST(RunsLaunches, RecognisesThisToolsExperiments) {
  EXPECT_TRUE(is_primebeaker_launch(four(status_running())));
  auto foreign = experiment({job(job_id(0), 0, status_running(), "T", {}, {"python", "x.py"})},
                            k_experiment,
                            "jdoe",
                            "someone else's");
  EXPECT_FALSE(is_primebeaker_launch(foreign));
  auto described = experiment({job(job_id(0),
                                   0,
                                   status_running(),
                                   "T",
                                   {{"CONFIG_PATH", "/c"}, {"OUTPUT_DIR", "o"}},
                                   {"bash"})},
                              k_experiment,
                              "jdoe",
                              "custom description");
  EXPECT_TRUE(is_primebeaker_launch(described));
}

TEST(RunsLogs, TakeNewLinesHoldsPartialLineUntilFinal) {
  std::vector<std::string> lines;
  const std::string log = "a\nb\r\npartial";
  const auto used = take_new_lines(log, 0, false, lines);
  EXPECT_EQ(lines, (std::vector<std::string>{"a", "b"}));
  EXPECT_EQ(used, 5u);
  lines.clear();
  EXPECT_EQ(take_new_lines(log + " line\nc\n", used, false, lines), 15u);
  EXPECT_EQ(lines, (std::vector<std::string>{"partial line", "c"}));
  lines.clear();
  take_new_lines(log, used, true, lines);
  EXPECT_EQ(lines, (std::vector<std::string>{"partial"}));
}

TEST(RunsLogs, SinceKeepsStampedLinesAndTheirContinuations) {
  const auto since = parse_time_text("2026-08-10T10:05:00Z");
  EXPECT_FALSE(keep_since("2026-08-10T10:04:59.9Z old", since, true));
  EXPECT_TRUE(keep_since("2026-08-10T10:05:00Z new", since, false));
  EXPECT_TRUE(keep_since("  continuation", since, true));
  EXPECT_FALSE(keep_since("  continuation", since, false));
  EXPECT_TRUE(keep_since("anything", std::nullopt, false));
}

TEST(RunsFlags, SinceAndTimeout) {
  const auto now = *parse_time_text("2026-08-10T10:00:00Z");
  EXPECT_EQ(parse_since("10m", now), now - std::chrono::minutes(10));
  EXPECT_EQ(parse_since("2026-08-10T09:00:00Z", now), now - std::chrono::hours(1));
  EXPECT_PB_ERROR(parse_since("soon", now), pb::ExitCode::usage, "--since");
  EXPECT_EQ(parse_timeout("90"), std::chrono::milliseconds(90000));
  EXPECT_EQ(parse_timeout("2h"), std::chrono::milliseconds(7200000));
  EXPECT_FALSE(parse_timeout("0").has_value());
  EXPECT_PB_ERROR(parse_timeout("-1"), pb::ExitCode::usage, "--timeout");
}

TEST(RunsReceipts, TodaysAndTomorrowsSubmitReceipts) {
  const OrderedJson today = {{"experiment_name", "search"},
                             {"launch_id", "abc"},
                             {"spec_path", "/weka/spec.json"},
                             {"stdout",
                              "Experiment \x1b[34m01ABCDEFGHJKMNPQRSTVWXYZ01\x1b[0m submitted. See "
                              "progress at https://beaker.org/ex/01ABCDEFGHJKMNPQRSTVWXYZ01\n"},
                             {"wandb_run", {{"url", "https://wandb.ai/e/p/runs/abc"}}}};
  const auto a = target_from_receipt(today, "r.json");
  EXPECT_EQ(a.reference, "01ABCDEFGHJKMNPQRSTVWXYZ01");
  EXPECT_EQ(a.wandb_url, "https://wandb.ai/e/p/runs/abc");
  EXPECT_FALSE(a.experiment_url.has_value());

  auto tomorrow = today;
  tomorrow["experiment_id"] = k_experiment;
  tomorrow["experiment_url"] = std::string("https://beaker.example/ex/") + k_experiment;
  const auto b = target_from_receipt(tomorrow, "r.json");
  EXPECT_EQ(b.reference, k_experiment);
  EXPECT_EQ(b.experiment_url, std::string("https://beaker.example/ex/") + k_experiment);

  const OrderedJson joint = {
      {"service_experiment_id", k_service}, {"service", OrderedJson::object()}, {"rl", tomorrow}};
  const auto c = target_from_receipt(joint, "run.json");
  EXPECT_EQ(c.reference, k_experiment);
  EXPECT_EQ(c.service_experiment_id, k_service);

  const OrderedJson resumed = {
      {"resume", OrderedJson::object()}, {"child_experiment_id", k_experiment}, {"stdout", ""}};
  EXPECT_EQ(target_from_receipt(resumed, "resume.json").reference, k_experiment);

  EXPECT_PB_ERROR(target_from_receipt(OrderedJson{{"stdout", "nothing"}}, "bad.json"),
                  pb::ExitCode::bad_input,
                  "bad.json: no experiment id");
  EXPECT_TRUE(looks_like_experiment_id(k_experiment));
  EXPECT_FALSE(looks_like_experiment_id("search"));
}

// A runner that answers from a script and records what it ran.
class ScriptedRunner final : public pb::proc::Runner {
public:
  std::deque<pb::proc::Result> answers;
  std::vector<pb::proc::Argv> ran;
  pb::proc::Result run(const pb::proc::Command &command) override {
    ran.push_back(command.argv);
    auto answer = answers.front();
    answers.pop_front();
    return answer;
  }
};

pb::proc::Result answer(int code, std::string out, std::string err = {}) {
  pb::proc::Result result;
  result.exit_code = code;
  result.out = std::move(out);
  result.err = std::move(err);
  return result;
}

TEST(BeakerClientRetries, TransientFailuresBackOffThenSucceed) {
  ScriptedRunner runner;
  runner.answers = {answer(1, "", "Get \"https://beaker.org/api\": dial tcp: connection refused"),
                    answer(1, "", "503 Service Unavailable"),
                    answer(1, "", "context deadline exceeded"),
                    answer(0, printed(four(status_running())))};
  std::vector<std::chrono::milliseconds> slept;
  Timing timing;
  timing.sleep = [&](std::chrono::milliseconds d) {
    slept.push_back(d);
    return true;
  };
  pb::beaker::Client beaker(runner, "beaker", timing, pb::beaker::RetryPolicy::for_reads());
  const auto got = beaker.get_experiment(k_experiment);
  EXPECT_EQ(parse_run(single_experiment(got, "x")).replicas.size(), 4u);
  EXPECT_EQ(slept,
            (std::vector<std::chrono::milliseconds>{std::chrono::milliseconds(1000),
                                                    std::chrono::milliseconds(2000),
                                                    std::chrono::milliseconds(4000)}));
  EXPECT_EQ(runner.ran.size(), 4u);
  EXPECT_EQ(runner.ran[0],
            (pb::proc::Argv{"beaker", "experiment", "get", k_experiment, "--format", "json"}));
}

TEST(BeakerClientRetries, PermanentFailureIsNotRetriedAndTransientGivesUp) {
  ScriptedRunner runner;
  runner.answers = {answer(1, "", "experiment \"nope\" not found")};
  Timing timing;
  int sleeps = 0;
  timing.sleep = [&](std::chrono::milliseconds) {
    ++sleeps;
    return true;
  };
  pb::beaker::Client beaker(runner, "beaker", timing, pb::beaker::RetryPolicy::for_reads());
  EXPECT_PB_ERROR(beaker.get_experiment("nope"), pb::ExitCode::tool_failed, "not found");
  EXPECT_EQ(sleeps, 0);
  // A takeover's look-up of a claimed name that was never created: an answer at once, even when
  // the name holds a status code (the CI chaos run waited 31 s on this one).
  runner.answers.push_back(answer(1, "", "experiment jdoe/chaos-3-recover2-45504860 not found"));
  EXPECT_FALSE(beaker.find_experiment("jdoe/chaos-3-recover2-45504860").has_value());
  EXPECT_EQ(sleeps, 0);

  for (int i = 0; i < 6; ++i) {
    runner.answers.push_back(answer(1, "", "502 Bad Gateway"));
  }
  EXPECT_PB_ERROR(beaker.job_logs("J"), pb::ExitCode::tool_failed, "gave up after 6 attempts");
  EXPECT_EQ(sleeps, 5);
  EXPECT_TRUE(is_transient_failure("read: connection reset by peer"));
  EXPECT_FALSE(is_transient_failure("unauthorized"));
  EXPECT_TRUE(is_transient_failure("Get https://beaker.org: 504 Gateway Timeout"));
  EXPECT_TRUE(is_transient_failure("unexpected status 504"));
  EXPECT_TRUE(is_transient_failure("unexpected EOF"));
  EXPECT_TRUE(is_transient_failure("read tcp 10.0.0.1:443: EOF"));
  EXPECT_TRUE(is_transient_failure("requests.exceptions.ReadTimeout"));
  // A status code inside a name is not one; a missing experiment is an answer, not a hiccup.
  EXPECT_FALSE(is_transient_failure("experiment jdoe/chaos-3-recover2-45504860 not found"));
  EXPECT_FALSE(is_transient_failure("workspace ai2/geoffrey-429x is forbidden"));
  EXPECT_FALSE(is_transient_failure("experiment 01X not found (request timed out earlier)"));
}

// follow_run against a scripted runner with a fake clock: no real time passes.
class FakeClock final : public pb::Clock {
public:
  std::chrono::system_clock::time_point t = *parse_time_text("2026-08-10T10:00:00Z");
  std::chrono::system_clock::time_point now() override { return t; }
};

// Sleeping only moves the fake clock on.
Timing fake_timing(FakeClock &clock) {
  Timing timing;
  timing.clock = &clock;
  timing.sleep = [&clock](std::chrono::milliseconds d) {
    clock.t += d;
    return true;
  };
  return timing;
}

TEST(RunsFollowLoop, TimeoutUsesTheInjectedClockAndNeverStops) {
  ScriptedRunner runner;
  std::string log;
  for (int i = 0; i < 50; ++i) {
    log += "step " + std::to_string(i) + "\n";
    runner.answers.push_back(answer(0, printed(experiment({job(job_id(0), 0, status_running())}))));
    runner.answers.push_back(answer(0, log));
  }
  FakeClock clock;
  const Timing timing = fake_timing(clock);
  pb::beaker::Client beaker(runner, "beaker", timing, pb::beaker::RetryPolicy::for_reads());
  FollowOptions options;
  options.timeout = std::chrono::minutes(5);
  options.poll_interval = std::chrono::seconds(60);
  std::ostringstream out, err;
  EXPECT_EQ(follow_run(k_experiment, options, beaker, out, err), k_exit_timed_out);
  EXPECT_NE(err.str().find("keeps running"), std::string::npos) << err.str();
  for (const auto &argv : runner.ran) {
    EXPECT_NE(argv[1] + " " + argv[2], "experiment stop");
  }
  // Polls at 0,1,...,5 minutes; the log grew by a line each poll, each line shown once.
  EXPECT_EQ(out.str(),
            "[trainer:0] step 0\n[trainer:0] step 1\n[trainer:0] step 2\n[trainer:0] step 3\n"
            "[trainer:0] step 4\n[trainer:0] step 5\n");
  EXPECT_EQ(runner.ran.size(), 12u);
}

TEST(RunsFollowLoop, KeepsFollowingThroughAnAutoResumedPreemption) {
  // Single-node: Beaker resumes a preempted task by itself (context.autoResume), with a new job.
  auto first =
      job(job_id(0, 1), 0, status_running(), "T", {}, {"primebeaker", "node", "single", "rl"});
  first["execution"]["spec"]["context"]["autoResume"] = true;
  auto preempted = first;
  preempted["status"] = status_preempted(20);
  auto second =
      job(job_id(0, 2), 0, status_running(), "T", {}, {"primebeaker", "node", "single", "rl"});
  second["status"]["created"] = stamp(21);
  auto finished = second;
  finished["status"] = status_exited(0, 40);
  finished["status"]["created"] = stamp(21);

  ScriptedRunner runner;
  runner.answers = {answer(0, printed(experiment({first}))),
                    answer(0, "before\n"),
                    answer(0, printed(experiment({preempted}))), // no new job yet: wait
                    answer(0, "before\ncut off"),
                    answer(0, printed(experiment({preempted, second}))),
                    answer(0, "after 1\n"),
                    answer(0, printed(experiment({preempted, finished}))),
                    answer(0, "after 1\nafter 2\n")};
  FakeClock clock;
  const Timing timing = fake_timing(clock);
  pb::beaker::Client beaker(runner, "beaker", timing, pb::beaker::RetryPolicy::for_reads());
  FollowOptions options;
  options.poll_interval = std::chrono::seconds(30);
  std::ostringstream out, err;
  EXPECT_EQ(follow_run(k_experiment, options, beaker, out, err), 0) << err.str();
  EXPECT_EQ(out.str(), "[rl:0] before\n[rl:0] cut off\n[rl:0] after 1\n[rl:0] after 2\n");
  EXPECT_NE(err.str().find("waiting for Beaker to resume it"), std::string::npos) << err.str();
  EXPECT_NE(err.str().find("[rl:0] new job " + job_id(0, 2) + " (attempt 2)"), std::string::npos)
      << err.str();
  EXPECT_TRUE(runner.answers.empty());
}

TEST(RunsFollowLoop, PreemptionWithoutAutoResumeEndsTheFollow) {
  ScriptedRunner runner;
  runner.answers = {answer(0, printed(four(status_preempted(20)))),
                    answer(0, ""),
                    answer(0, ""),
                    answer(0, ""),
                    answer(0, "")};
  Timing timing;
  timing.sleep = [](std::chrono::milliseconds) { return true; };
  pb::beaker::Client beaker(runner, "beaker", timing, pb::beaker::RetryPolicy::for_reads());
  std::ostringstream out, err;
  EXPECT_EQ(follow_run(k_experiment, FollowOptions{}, beaker, out, err), k_exit_preempted);
  EXPECT_NE(err.str().find("experiment " + std::string(k_experiment) + " preempted: trainer:0"),
            std::string::npos)
      << err.str();
}

} // namespace
