// SPDX-License-Identifier: MIT
// The recovery decision of every start (docs/recovery.md), as pure functions over a ledger and
// listed checkpoints, plus the ledger's exclusive writes on a real directory.
#include "test_support.hpp"

// The node module's private recovery glue, run here on real v0.9 directory trees.
#include "../../src/node/recovery.hpp"

#include <primebeaker/core/fs.hpp>
#include <primebeaker/recovery/decision.hpp>
#include <primebeaker/recovery/ledger.hpp>
#include <primebeaker/toml/value.hpp>

#include <gtest/gtest.h>

#include <thread>

namespace {

namespace fs = std::filesystem;
namespace ledger = pb::recovery::ledger;
namespace rec = pb::recovery;
using pb::checkpoints::StepStatus;

StepStatus step(std::int64_t n, bool complete) {
  StepStatus s;
  s.step = n;
  s.name = "step_" + std::to_string(n);
  s.complete = complete;
  return s;
}

rec::DiskFacts disk(std::vector<StepStatus> steps, std::optional<std::int64_t> trained = {}) {
  rec::DiskFacts d;
  d.steps = std::move(steps);
  d.newest_trained_step = trained;
  return d;
}

rec::StartFacts facts(double now = 1000, std::string launch = "L1") {
  rec::StartFacts f;
  f.run_id = "run";
  f.launch_key = std::move(launch);
  f.job_id = "job";
  f.replica = "node rl";
  f.now_unix = now;
  return f;
}

ledger::Attempt attempt(std::int64_t n,
                        std::string cause,
                        std::optional<std::int64_t> resumed,
                        std::optional<int> end_code,
                        double started = 0,
                        std::string launch = "L1") {
  ledger::Attempt a;
  a.start.attempt = n;
  a.start.cause = std::move(cause);
  a.start.resume_step = resumed;
  a.start.launch_id = std::move(launch);
  a.start.started_unix = started;
  if (end_code) {
    a.end = ledger::End{n, started + 100, *end_code, *end_code, ""};
  }
  return a;
}

ledger::Ledger history(std::vector<ledger::Attempt> attempts) {
  ledger::Ledger l;
  l.attempts = std::move(attempts);
  return l;
}

TEST(RecoveryCause, ComesFromHowTheLastAttemptEnded) {
  EXPECT_EQ(rec::cause_of({}, "L1").name, "first_start");
  EXPECT_EQ(rec::cause_of(history({attempt(1, "first_start", {}, {})}), "L1").name, "preemption");
  const auto sigterm = rec::cause_of(history({attempt(1, "first_start", {}, 143)}), "L1");
  EXPECT_EQ(sigterm.name, "preemption");
  EXPECT_EQ(sigterm.exit_code, 143);
  const auto error = rec::cause_of(history({attempt(1, "first_start", {}, 7)}), "L1");
  EXPECT_EQ(error.name, "error");
  EXPECT_EQ(error.exit_code, 7);
  EXPECT_FALSE(error.first_of_launch);
  EXPECT_EQ(rec::cause_of(history({attempt(1, "first_start", {}, 0)}), "L1").name, "after_success");
  // A new launch of the same run: rl resume by hand...
  const auto by_hand = rec::cause_of(history({attempt(1, "first_start", {}, 143)}), "L2");
  EXPECT_EQ(by_hand.name, "resubmission");
  EXPECT_TRUE(by_hand.first_of_launch);
  // ...or follow --recover, which says why it resubmitted.
  auto followed = history({attempt(1, "first_start", {}, 143)});
  followed.attempts[0].recover = ledger::Recover{1, 200, "preemption", 143, "01SRC", "01CHILD", ""};
  const auto recovered = rec::cause_of(followed, "L2");
  EXPECT_EQ(recovered.name, "preemption");
  EXPECT_TRUE(recovered.first_of_launch);
}

TEST(RecoveryDecision, ResumesTheNewestCompleteStepAndSetsNewerIncompleteOnesAside) {
  const auto d = rec::decide(
      history({attempt(1, "first_start", 0, {})}),
      disk({step(5, false), step(10, true), step(15, true), step(20, false), step(25, false)}, 27),
      facts());
  EXPECT_TRUE(d.refusal.empty()) << d.refusal;
  EXPECT_EQ(d.resume_step, 15);
  EXPECT_EQ(d.set_aside, (std::vector<std::string>{"step_20", "step_25"}));
  EXPECT_EQ(d.stale_above, 15);
  EXPECT_TRUE(d.keep_output);
  EXPECT_EQ(d.record.cause, "preemption");
  EXPECT_EQ(d.record.preemptions_recovered, 1);
  EXPECT_EQ(d.record.newest_complete, 15);
  EXPECT_EQ(d.record.last_step_seen, 27);
  EXPECT_EQ(d.record.steps_lost, 12);
}

TEST(RecoveryDecision, AFirstStartOverAnEmptyOutputDirStartsFresh) {
  const auto d = rec::decide({}, disk({}), facts());
  EXPECT_TRUE(d.refusal.empty());
  EXPECT_FALSE(d.resume_step);
  EXPECT_TRUE(d.set_aside.empty());
  EXPECT_EQ(d.stale_above, -1);
  EXPECT_EQ(d.record.cause, "first_start");
  EXPECT_EQ(d.record.steps_lost, 0);
}

TEST(RecoveryDecision, NothingCompleteMeansFreshWithEveryStepSetAside) {
  auto f = facts();
  f.toml.resume_step = -1; // the shipped examples: "latest", which Prime-RL would take blindly
  const auto d = rec::decide(history({attempt(1, "first_start", {}, {})}),
                             disk({step(10, false), step(20, false)}, 21),
                             f);
  EXPECT_FALSE(d.resume_step);
  EXPECT_EQ(d.set_aside, (std::vector<std::string>{"step_10", "step_20"}));
  EXPECT_EQ(d.stale_above, -1);
  EXPECT_EQ(d.record.steps_lost, 21);
}

TEST(RecoveryDecision, APinnedStepIsHonouredOnlyOnTheFirstStartOfALaunch) {
  auto f = facts(1000, "L2");
  f.toml.resume_step = 10; // rl resume --resume-step 10 wrote this
  const auto old = history({attempt(1, "first_start", {}, 143, 0, "L1")});
  const auto listed = disk({step(10, true), step(20, true), step(30, false)});
  const auto d = rec::decide(old, listed, f);
  EXPECT_TRUE(d.refusal.empty()) << d.refusal;
  EXPECT_TRUE(d.honours_pin);
  EXPECT_EQ(d.resume_step, 10);
  // Newer steps belong to the abandoned timeline: moved aside, complete or not.
  EXPECT_EQ(d.set_aside, (std::vector<std::string>{"step_20", "step_30"}));
  EXPECT_TRUE(rec::needs_full_listing(old, f));

  // A later restart of that launch decides for itself.
  auto later = old;
  later.attempts.push_back(attempt(2, "resubmission", 10, {}, 10, "L2"));
  const auto again = rec::decide(later, disk({step(10, true), step(12, true)}), f);
  EXPECT_FALSE(again.honours_pin);
  EXPECT_EQ(again.resume_step, 12);
  EXPECT_FALSE(rec::needs_full_listing(later, f));
}

TEST(RecoveryDecision, APinnedStepThatIsNotCompleteIsRefusedAsABadConfig) {
  auto f = facts();
  f.toml.resume_step = 20;
  const auto d = rec::decide({}, disk({step(10, true), step(20, false)}), f);
  EXPECT_EQ(d.refusal_code, 3);
  EXPECT_NE(d.refusal.find("ckpt.resume_step = 20"), std::string::npos) << d.refusal;
  EXPECT_NE(d.refusal.find("available: 10"), std::string::npos) << d.refusal;
  EXPECT_TRUE(d.set_aside.empty());
  EXPECT_EQ(d.record.refused, d.refusal);
}

TEST(RecoveryDecision, CleanOutputDirOnAFirstStartIsAFreshRunWithEarlierStepsAside) {
  auto f = facts();
  f.toml.clean_output_dir = true;
  const auto d = rec::decide({}, disk({step(10, true), step(20, false)}), f);
  EXPECT_FALSE(d.resume_step);
  EXPECT_FALSE(d.keep_output);
  EXPECT_EQ(d.set_aside, (std::vector<std::string>{"step_10", "step_20"}));
  // On a recovery the same TOML must never wipe what survived.
  const auto recovery =
      rec::decide(history({attempt(1, "first_start", {}, {})}), disk({step(10, true)}), f);
  EXPECT_TRUE(recovery.keep_output);
  EXPECT_EQ(recovery.resume_step, 10);
}

TEST(RecoveryDecision, BudgetsAreEnforcedFromTheLedger) {
  auto f = facts();
  f.policy.max_recoveries = 2;
  // Two preemptions recovered already; a third is refused.
  const auto spent = history({attempt(1, "first_start", {}, {}),
                              attempt(2, "preemption", 4, {}),
                              attempt(3, "preemption", 8, {})});
  const auto d = rec::decide(spent, disk({step(8, true)}), f);
  EXPECT_EQ(d.refusal_code, 1);
  EXPECT_NE(d.refusal.find("this would be recovery 3 and --max-recoveries is 2"), std::string::npos)
      << d.refusal;
  EXPECT_TRUE(d.set_aside.empty());

  f.policy.max_recoveries = 0;
  const auto off = rec::decide(history({attempt(1, "first_start", {}, 143)}), disk({}), f);
  EXPECT_NE(off.refusal.find("automatic recovery is off (--max-recoveries 0)"), std::string::npos);

  f.policy.max_recoveries = 10;
  f.policy.max_restarts_on_errors = 1;
  const auto first_error =
      rec::decide(history({attempt(1, "first_start", {}, 7)}), disk({step(4, true)}), f);
  EXPECT_TRUE(first_error.refusal.empty()) << first_error.refusal;
  EXPECT_EQ(first_error.record.error_restarts, 1);
  const auto second_error =
      rec::decide(history({attempt(1, "first_start", {}, 7), attempt(2, "error", 4, 7)}),
                  disk({step(4, true)}),
                  f);
  EXPECT_NE(second_error.refusal.find(
                "restart after an error (exit code 7) refused: this would be restart 2"),
            std::string::npos)
      << second_error.refusal;

  // Refused starts are not recoveries.
  f.policy.max_recoveries = 1;
  auto refused = attempt(2, "preemption", {}, 1);
  refused.start.refused = "earlier refusal";
  const auto after_refusal =
      rec::decide(history({attempt(1, "first_start", {}, {}), refused}), disk({step(4, true)}), f);
  EXPECT_EQ(after_refusal.record.cause, "error"); // the refused start ended with 1
}

TEST(RecoveryDecision, RefusesToTrainOverCheckpointsThatWentMissing) {
  const auto d =
      rec::decide(history({attempt(1, "first_start", {}, {}), attempt(2, "preemption", 20, {})}),
                  disk({step(10, true), step(30, false)}),
                  facts());
  EXPECT_EQ(d.refusal_code, 1);
  EXPECT_NE(d.refusal.find("the newest complete checkpoint is step 10, but attempt 2 resumed "
                           "from step 20"),
            std::string::npos)
      << d.refusal;
  EXPECT_TRUE(d.set_aside.empty()); // nothing is moved when refusing
}

TEST(RecoveryDecision, TimeLostIsThePreviousAttemptsRunAfterItsLastSurvivingCheckpoint) {
  auto listed = disk({step(10, true)}, 12);
  listed.complete_mtimes[10] = 160;
  // Started at 100, ended (end record) at 200, checkpoint 10 written at 160; now 260.
  const auto d =
      rec::decide(history({attempt(1, "first_start", {}, 143, 100)}), listed, facts(260));
  EXPECT_DOUBLE_EQ(d.record.time_lost_seconds, 40);
  EXPECT_DOUBLE_EQ(d.record.downtime_seconds, 60);
  // Killed without an end record: the newest evidence marks its end.
  listed.newest_evidence_mtime = 190;
  const auto killed =
      rec::decide(history({attempt(1, "first_start", {}, {}, 100)}), listed, facts(260));
  EXPECT_DOUBLE_EQ(killed.record.time_lost_seconds, 30);
  EXPECT_DOUBLE_EQ(killed.record.downtime_seconds, 70);
}

TEST(RecoveryToml, ThePrimeRlCopyCarriesTheDecisionAndNothingElseChanges) {
  const std::string text = "# my run\noutput_dir = \"out\" # keep\nclean_output_dir = true\n\n"
                           "[ckpt]\ninterval = 5\nresume_step = -1 # latest\n\n"
                           "[trainer.ckpt]\nresume_step = -1\n";
  const auto document = pb::toml::Document::parse(text, "run.toml");
  rec::Decision decision;
  decision.resume_step = 15;
  const std::string resumed = rec::resume_toml(document, decision);
  EXPECT_EQ(resumed,
            "# my run\noutput_dir = \"out\" # keep\nclean_output_dir = false\n\n"
            "[ckpt]\ninterval = 5\nresume_step = 15 # latest\n\n"
            "[trainer.ckpt]\nresume_step = 15\n");
  decision.resume_step.reset();
  const std::string fresh = rec::resume_toml(document, decision);
  EXPECT_EQ(fresh.find("resume_step"), std::string::npos) << fresh;
  EXPECT_NE(fresh.find("interval = 5"), std::string::npos);
  // No [ckpt] at all and a step to resume: the shared key is added.
  decision.resume_step = 3;
  const auto bare = pb::toml::Document::parse("output_dir = \"o\"\n", "bare.toml");
  const auto added = pb::toml::Document::parse(rec::resume_toml(bare, decision), "added.toml");
  EXPECT_EQ(added.root().find_path({"ckpt", "resume_step"})->integer(), 3);
  EXPECT_EQ(rec::read_intent(document).resume_step, -1);
  EXPECT_TRUE(rec::read_intent(document).clean_output_dir);
}

TEST(RecoveryEvidence, SftStepsNeedNoOrchestratorSide) {
  pb::checkpoints::TreeListing listing;
  listing.source.expected_ranks = 2;
  listing.source.output_dir = "/o";
  listing.source.trainer_root = "/o/checkpoints";
  listing.source.orchestrator_root = "/o/run_default/checkpoints";
  pb::checkpoints::StepListing s;
  s.name = "step_4";
  s.step = 4;
  s.in_trainer_root = true;
  s.trainer_dir = {pb::checkpoints::EntryKind::directory, 0};
  s.metadata = {pb::checkpoints::EntryKind::regular, 10};
  s.rank_shards = {{pb::checkpoints::EntryKind::regular, 5},
                   {pb::checkpoints::EntryKind::regular, 5}};
  listing.steps.push_back(s);
  s.name = "step_8";
  s.step = 8;
  s.rank_shards[1] = {pb::checkpoints::EntryKind::missing, 0};
  listing.steps.push_back(s);
  const auto statuses = rec::evaluate_trainer_only(listing);
  ASSERT_EQ(statuses.size(), 2U);
  EXPECT_TRUE(statuses[0].complete);
  EXPECT_FALSE(statuses[1].complete);
  EXPECT_EQ(statuses[1].missing,
            (std::vector<std::string>{"checkpoints/step_8/trainer/__1_0.distcp"}));
  // The full rule (RL) wants progress.pt too.
  EXPECT_FALSE(pb::checkpoints::evaluate(listing)[0].complete);
}

TEST(RecoveryLedger, StartsAreAppendedExclusivelyAndNeverRewritten) {
  pb::test::TempDir tmp;
  const fs::path dir = tmp / "ledger/run";
  // Concurrent writers each get their own number.
  std::vector<std::int64_t> numbers(8);
  std::vector<std::thread> writers;
  for (std::size_t i = 0; i < numbers.size(); ++i) {
    writers.emplace_back([&, i] {
      ledger::Start s;
      s.cause = "first_start";
      s.job_id = "job" + std::to_string(i);
      s.started_unix = 1.5;
      numbers[i] = ledger::append_start(dir, s);
    });
  }
  for (auto &w : writers) {
    w.join();
  }
  std::sort(numbers.begin(), numbers.end());
  EXPECT_EQ(numbers, (std::vector<std::int64_t>{1, 2, 3, 4, 5, 6, 7, 8}));
  const std::string first = pb::test::read_file(dir / "1.json");
  EXPECT_FALSE(pb::fs::create_exclusive(dir / "1.json", "other"));
  EXPECT_EQ(pb::test::read_file(dir / "1.json"), first);
  EXPECT_TRUE(ledger::write_end(dir, {3, 9.0, 143, 143, "terminated"}));
  EXPECT_FALSE(ledger::write_end(dir, {3, 10.0, 0, 0, ""}));
  EXPECT_TRUE(ledger::write_recover(dir, {3, 11.0, "preemption", 143, "01A", "01B", ""}));
  // Nothing but records is left behind: no temporaries.
  for (const auto &entry : fs::directory_iterator(dir)) {
    EXPECT_EQ(entry.path().filename().string().find(".tmp"), std::string::npos);
  }
  pb::test::write_file(dir / "9.json", "{not json");
  pb::test::write_file(dir / ".9.json.123.tmp", "ignored");
  const auto read = ledger::read(dir);
  ASSERT_EQ(read.attempts.size(), 8U);
  EXPECT_EQ(read.unreadable, (std::vector<std::string>{"9.json"}));
  EXPECT_EQ(read.attempts[2].end->exit_code, 143);
  EXPECT_EQ(read.attempts[2].recover->child_experiment, "01B");
  EXPECT_EQ(read.attempts[2].start.started_unix, 1.5);
  EXPECT_TRUE(ledger::read(tmp / "missing").attempts.empty());
}

TEST(RecoveryLedger, SummaryCountsRecoveriesAndUsefulTime) {
  auto l = history({attempt(1, "first_start", {}, {}, 0),
                    attempt(2, "preemption", 10, {}, 500),
                    attempt(3, "error", 20, 0, 900)});
  l.attempts[1].start.steps_lost = 3;
  l.attempts[1].start.time_lost_seconds = 40;
  l.attempts[1].start.downtime_seconds = 60;
  l.attempts[2].start.downtime_seconds = 100;
  const auto s = ledger::summarize(l, 5000);
  EXPECT_EQ(s.attempts, 3);
  EXPECT_EQ(s.preemptions_recovered, 1);
  EXPECT_EQ(s.error_restarts, 1);
  EXPECT_EQ(s.steps_lost_per_preemption, (std::vector<std::int64_t>{3}));
  EXPECT_EQ(s.last_resume_step, 20);
  EXPECT_DOUBLE_EQ(s.total_seconds, 1000); // ended at 900 + 100
  EXPECT_DOUBLE_EQ(s.useful_seconds, 800);
}

// ---- Prime-RL v0.9 -------------------------------------------------------------------------

TEST(RecoveryToml, V09IntentIsTheResumeTableAndClean) {
  const auto intent = [](const std::string &text) {
    return rec::read_intent(pb::toml::Document::parse(text, "v09.toml"));
  };
  EXPECT_EQ(intent("[resume]\nstep = 15\n").resume_step, 15);
  EXPECT_EQ(intent("[resume]\nstep = 15\n").resume_key, "resume.step");
  EXPECT_EQ(intent("[resume]\n").resume_step, -1); // empty: latest
  EXPECT_FALSE(intent("[run]\nname = \"r\"\n").resume_step);
  const auto fork = intent("[resume]\ndir = \"/o/other/checkpoints/step_50\"\n");
  EXPECT_FALSE(fork.resume_step);
  EXPECT_EQ(fork.resume_dir, "/o/other/checkpoints/step_50");
  EXPECT_TRUE(intent("clean = true\n[deployment]\ntype = \"single_node\"\n").clean_output_dir);
  // A v0.9 TOML never reads the v0.8.0 keys, and the other way round.
  EXPECT_FALSE(intent("[run]\nname = \"r\"\n[ckpt]\nresume_step = 4\n").resume_step);
  EXPECT_FALSE(intent("clean_output_dir = true\n[wandb]\n").resume_step);
}

TEST(RecoveryToml, V09CopyWritesAnExplicitResumeStep) {
  const std::string text = "# my run\noutput_dir = \"out\" # keep\nclean = true\n\n"
                           "[run]\nname = \"r\"\n\n[resume] # latest\n\n"
                           "[trainer.resume]\nstep = 3\n\n[ckpt]\ninterval = 5\n";
  const auto document = pb::toml::Document::parse(text, "run.toml");
  rec::Decision decision;
  decision.resume_step = 15;
  EXPECT_EQ(rec::resume_toml(document, decision),
            "# my run\noutput_dir = \"out\" # keep\nclean = false\n\n"
            "[run]\nname = \"r\"\n\n[resume] # latest\nstep = 15\n\n"
            "[trainer.resume]\nstep = 15\n\n[ckpt]\ninterval = 5\n");
  // A fresh start over a used run directory: every step was moved aside, so an empty [resume]
  // starts from scratch without Prime-RL refusing the earlier attempts' logs.
  decision.resume_step.reset();
  const auto fresh = pb::toml::Document::parse(rec::resume_toml(document, decision), "f.toml");
  EXPECT_TRUE(fresh.root().find("resume")->table()->empty());
  EXPECT_EQ(fresh.root().find_path({"trainer", "resume", "step"}), nullptr);
  EXPECT_EQ(fresh.root().find("clean")->boolean(), false);
  const auto bare = pb::toml::Document::parse("[run]\nname = \"r\"\n", "bare.toml");
  const auto added = pb::toml::Document::parse(rec::resume_toml(bare, decision), "a.toml");
  ASSERT_NE(added.root().find("resume"), nullptr);
  EXPECT_TRUE(added.root().find("resume")->table()->empty());
  // clean = true asked for on a launch's first start: [resume] goes, clean stays.
  decision.keep_output = false;
  const auto cleaned = pb::toml::Document::parse(rec::resume_toml(document, decision), "c.toml");
  EXPECT_EQ(cleaned.root().find("resume"), nullptr);
  EXPECT_EQ(cleaned.root().find_path({"trainer", "resume"}), nullptr);
  EXPECT_EQ(cleaned.root().find("clean")->boolean(), true);
  // resume.dir forks another run while this one has no step: left as written.
  const std::string forked = "[run]\nname = \"r\"\n[resume]\ndir = \"/o/a/checkpoints/step_50\"\n";
  decision = rec::Decision{};
  decision.keeps_fork = true;
  EXPECT_EQ(rec::resume_toml(pb::toml::Document::parse(forked, "k.toml"), decision), forked);
  // Once it has one, the step replaces the dir (they are exclusive).
  decision.keeps_fork = false;
  decision.resume_step = 60;
  EXPECT_EQ(rec::resume_toml(pb::toml::Document::parse(forked, "k.toml"), decision),
            "[run]\nname = \"r\"\n[resume]\nstep = 60\n");
}

TEST(RecoveryDecision, V09PinsAndForks) {
  auto f = facts();
  f.toml.resume_step = 20;
  f.toml.resume_key = "resume.step";
  const auto refused = rec::decide({}, disk({step(10, true), step(20, false)}), f);
  EXPECT_NE(refused.refusal.find("resume.step = 20 in the training TOML"), std::string::npos)
      << refused.refusal;
  f.toml.resume_step.reset();
  f.toml.resume_dir = "/o/a/checkpoints/step_50";
  const auto fork = rec::decide({}, disk({step(10, false)}), f);
  EXPECT_TRUE(fork.keeps_fork);
  EXPECT_FALSE(fork.resume_step);
  EXPECT_EQ(fork.set_aside, std::vector<std::string>{"step_10"});
  const auto own = rec::decide({}, disk({step(10, true)}), f);
  EXPECT_FALSE(own.keeps_fork);
  EXPECT_EQ(own.resume_step, 10);
}

// Work lost (docs/recovery.md "Work lost"), pinned on real trees: the trainer saved step 8
// (complete) and went on to train steps 9-11, broadcasting each; the orchestrator, one step
// ahead, wrote rollouts/step_12 and checkpointed its own progress at step 12. Steps 9-11 must be
// trained again: 3 steps lost. The rollouts and the orchestrator-only step are not trained steps.
struct WorkLostTree {
  pb::test::TempDir tmp;
  fs::path out = tmp / "out";
  pb::primerl::RunLayout layout;
  int ranks = 2;

  explicit WorkLostTree(pb::primerl::Generation generation) {
    layout = pb::primerl::run_layout(generation, out, "my-run", std::nullopt);
  }
  fs::path trainer(std::int64_t n) const {
    return layout.trainer_checkpoints / ("step_" + std::to_string(n)) / "trainer";
  }
  fs::path orchestrator(std::int64_t n) const {
    return layout.orchestrator_checkpoints / ("step_" + std::to_string(n)) / "orchestrator";
  }
  void complete(std::int64_t n) const {
    for (int rank = 0; rank < ranks; ++rank) {
      pb::test::write_file(trainer(n) / ("__" + std::to_string(rank) + "_0.distcp"), "shard");
    }
    pb::test::write_file(trainer(n) / ".metadata", "meta");
    pb::test::write_file(orchestrator(n) / "progress.pt", "progress");
  }
  void broadcast(std::int64_t n) const {
    pb::test::write_file(layout.broadcasts / ("step_" + std::to_string(n)) / "STABLE", "");
  }
  void rollouts(std::int64_t n) const {
    // The orchestrator's rollouts: <run>/rollouts (v0.9), <out>/run_default/rollouts (v0.8.0).
    const fs::path root =
        layout.is_v0_9() ? layout.run_dir / "rollouts" : layout.output_dir / "run_default/rollouts";
    pb::test::write_file(root / ("step_" + std::to_string(n)) / "rank_0.bin", "r");
  }
  // The trainer reached step 11; the orchestrator ran one step ahead.
  void trained_to_11() const {
    complete(4);
    complete(8);
    for (std::int64_t n = 5; n <= 11; ++n) {
      broadcast(n);
    }
    for (std::int64_t n = 5; n <= 12; ++n) {
      rollouts(n);
    }
    pb::test::write_file(orchestrator(12) / "progress.pt", "progress");
  }
  rec::Decision decide(bool trainer_only = false) const {
    const auto facts_on_disk = rec::gather(
        pb::checkpoints::source_from_layout(layout, ranks), layout, trainer_only, false);
    // A previous attempt, killed without an end record: this start recovers a preemption.
    return rec::decide(history({attempt(1, "first_start", 4, {})}), facts_on_disk, facts());
  }
};

TEST(RecoveryWorkLost, CountsTrainedStepsNotRolloutsWrittenAheadV080) {
  WorkLostTree tree(pb::primerl::Generation::v0_8);
  tree.trained_to_11();
  auto d = tree.decide();
  EXPECT_EQ(d.resume_step, 8);
  EXPECT_EQ(d.record.last_step_seen, 11);
  EXPECT_EQ(d.record.steps_lost, 3);
  // A save of step 12 cut off by the kill: the trainer had trained step 12 too.
  pb::test::write_file(tree.trainer(12) / "__0_0.distcp", "shard");
  d = tree.decide();
  EXPECT_EQ(d.resume_step, 8);
  EXPECT_EQ(d.set_aside, std::vector<std::string>{"step_12"});
  EXPECT_EQ(d.record.last_step_seen, 12);
  EXPECT_EQ(d.record.steps_lost, 4);
}

TEST(RecoveryWorkLost, CountsTrainedStepsNotRolloutsWrittenAheadV09) {
  WorkLostTree tree(pb::primerl::Generation::v0_9);
  tree.trained_to_11();
  // One root for both owners: step_12 holds only the orchestrator's progress.
  ASSERT_TRUE(fs::is_directory(tree.layout.trainer_checkpoints / "step_12"));
  auto d = tree.decide();
  EXPECT_EQ(d.resume_step, 8);
  EXPECT_EQ(d.set_aside, std::vector<std::string>{"step_12"}); // incomplete: moved aside
  EXPECT_EQ(d.record.last_step_seen, 11);
  EXPECT_EQ(d.record.steps_lost, 3);
  pb::test::write_file(tree.trainer(12) / "__1_0.distcp", "shard");
  d = tree.decide();
  EXPECT_EQ(d.record.last_step_seen, 12);
  EXPECT_EQ(d.record.steps_lost, 4);
}

TEST(RecoveryWorkLost, NothingTrainedSinceTheResumedStepIsNoStepLost) {
  // Killed right after saving step 8: the orchestrator had already written step 9's rollouts.
  WorkLostTree tree(pb::primerl::Generation::v0_8);
  tree.complete(8);
  tree.broadcast(8);
  tree.rollouts(9);
  const auto d = tree.decide();
  EXPECT_EQ(d.resume_step, 8);
  EXPECT_EQ(d.record.last_step_seen, 8);
  EXPECT_EQ(d.record.steps_lost, 0);
}

TEST(RecoveryWorkLost, SftSeesOnlyItsStepDirectories) {
  // SFT writes nothing per step: only a step directory shows a trained step.
  WorkLostTree tree(pb::primerl::Generation::v0_8);
  for (int rank = 0; rank < tree.ranks; ++rank) {
    pb::test::write_file(tree.trainer(8) / ("__" + std::to_string(rank) + "_0.distcp"), "shard");
  }
  pb::test::write_file(tree.trainer(8) / ".metadata", "meta");
  auto d = tree.decide(true);
  EXPECT_EQ(d.resume_step, 8);
  EXPECT_EQ(d.record.steps_lost, 0);
  pb::test::write_file(tree.trainer(12) / "__0_0.distcp", "shard"); // a cut-off save
  d = tree.decide(true);
  EXPECT_EQ(d.record.last_step_seen, 12);
  EXPECT_EQ(d.record.steps_lost, 4);
}

// A v0.9 run directory on disk: <out>/<run>/checkpoints/step_N/{trainer,orchestrator},
// rollouts, broadcasts and logs.
struct V09Run {
  struct Tree {
    fs::path run;
    fs::path run_dir() const { return run; }
    fs::path step(const std::string &name) const { return run / "checkpoints" / name; }
    void complete_step(const std::string &name, int ranks) const {
      for (int rank = 0; rank < ranks; ++rank) {
        pb::test::write_file(step(name) / "trainer" / ("__" + std::to_string(rank) + "_0.distcp"),
                             "shard");
      }
      pb::test::write_file(step(name) / "trainer/.metadata", "meta");
      pb::test::write_file(step(name) / "orchestrator/progress.pt", "progress");
    }
  };
  pb::test::TempDir tmp;
  fs::path out = tmp / "out";
  Tree tree{out / "my-run"};
  fs::path config = tmp / "rl.toml";

  V09Run() {
    tree.complete_step("step_10", 2);
    tree.complete_step("step_20", 2);
    pb::test::write_file(tree.step("step_30") / "trainer/__0_0.distcp", "s"); // cut off
    for (int n : {10, 20, 30, 31}) {
      pb::test::write_file(tree.run_dir() / "rollouts" / ("step_" + std::to_string(n)) / "r", "r");
    }
    pb::test::write_file(tree.run_dir() / "broadcasts/step_30/STABLE", "");
    pb::test::write_file(tree.run_dir() / "logs/attempt_1/trainer.log", "log");
    pb::test::write_file(config,
                         "output_dir = \"out\"\n[run]\nname = \"my-run\"\n[resume]\n"
                         "[deployment]\ntype = \"multi_node\"\nnum_train_nodes = 1\n");
  }

  pb::node::RecoveryRequest request() const {
    pb::node::RecoveryRequest r;
    r.replica = "node rl";
    r.working_dir = tmp.path();
    r.output_dir = "out";
    r.config_path = config;
    r.trainer_ranks = 2;
    r.generation = pb::primerl::Generation::v0_9;
    r.run_dir_name = "my-run";
    r.run_id = "wandb-run";
    r.launch_key = "L1";
    r.job_id = "job1";
    return r;
  }
};

TEST(RecoveryStart, V09RunDirectoryIsReadSetAsideAndCleaned) {
  V09Run run;
  std::vector<std::string> notes;
  const auto outcome = pb::node::start_recovery(
      run.request(), [&](const std::string &line) { notes.push_back(line); });
  EXPECT_TRUE(outcome.decision.refusal.empty()) << outcome.decision.refusal;
  EXPECT_EQ(outcome.decision.resume_step, 20);
  EXPECT_EQ(outcome.layout.run_dir, run.out / "my-run");
  // The incomplete step went aside under output_dir, outside the run directory that a later
  // `clean = true` deletes; so does the ledger.
  ASSERT_EQ(outcome.decision.record.set_aside.size(), 1U);
  const fs::path moved = outcome.decision.record.set_aside.front();
  EXPECT_EQ(moved.filename(), "step_30");
  EXPECT_EQ(moved.parent_path().filename(), "checkpoints");
  EXPECT_EQ(moved.parent_path().parent_path().filename(), "my-run");
  EXPECT_EQ(moved.string().rfind((run.out / "primebeaker_recovery/set_aside").string(), 0), 0U)
      << moved;
  EXPECT_TRUE(fs::exists(moved / "trainer/__0_0.distcp"));
  EXPECT_FALSE(fs::exists(run.tree.run_dir() / "checkpoints/step_30"));
  EXPECT_EQ(outcome.ledger_dir, run.out / "primebeaker_recovery/ledger/wandb-run");
  EXPECT_TRUE(fs::exists(outcome.ledger_dir / "1.json"));
  // Rollouts and broadcasts past the step are Prime-RL's stale state: removed; logs stay.
  EXPECT_TRUE(fs::exists(run.tree.run_dir() / "rollouts/step_20"));
  EXPECT_FALSE(fs::exists(run.tree.run_dir() / "rollouts/step_30"));
  EXPECT_FALSE(fs::exists(run.tree.run_dir() / "rollouts/step_31"));
  EXPECT_FALSE(fs::exists(run.tree.run_dir() / "broadcasts/step_30"));
  EXPECT_TRUE(fs::exists(run.tree.run_dir() / "logs/attempt_1/trainer.log"));
  // The trainer reached step 30 (its cut-off save, its broadcast); rollouts/step_31 was written
  // ahead by the orchestrator and is not a trained step.
  EXPECT_EQ(outcome.decision.record.last_step_seen, 30);
  EXPECT_EQ(outcome.helper_request()["generation"], "v0.9");
  // What Prime-RL is given: the explicit step.
  const auto document = pb::toml::Document::load(run.config);
  const auto copy =
      pb::toml::Document::parse(rec::resume_toml(document, outcome.decision), "copy.toml");
  EXPECT_EQ(copy.root().find_path({"resume", "step"})->integer(), 20);
}

TEST(RecoveryStart, V09RunDirectoryNameComesFromTheRequestOrTheToml) {
  V09Run run;
  auto request = run.request();
  request.run_dir_name.clear();                       // the TOML's run.name names it
  request.generation = pb::primerl::Generation::v0_8; // detected from the TOML anyway
  const auto outcome = pb::node::start_recovery(request, [](const std::string &) {});
  EXPECT_EQ(outcome.decision.resume_step, 20);
  EXPECT_TRUE(outcome.layout.is_v0_9());
  // No name anywhere: exit 3, nothing moved.
  pb::test::write_file(run.config, "[resume]\n[deployment]\ntype = \"multi_node\"\n");
  const auto error = pb::test::thrown_error(
      [&] { pb::node::start_recovery(request, [](const std::string &) {}); });
  EXPECT_EQ(error.code(), 3);
  EXPECT_NE(std::string(error.what()).find("PRIME_RL_RUN_DIR"), std::string::npos) << error.what();
}

TEST(RecoveryStart, V09TrainerRootMovedByCkptOutputDir) {
  V09Run run;
  // The trainer's shards live under <ckpt.output_dir>/checkpoints; progress.pt stays.
  fs::create_directories(run.tmp / "fast/checkpoints/step_20");
  fs::rename(run.tree.run_dir() / "checkpoints/step_20/trainer",
             run.tmp / "fast/checkpoints/step_20/trainer");
  pb::test::write_file(run.config,
                       "output_dir = \"out\"\n[run]\nname = \"my-run\"\n[ckpt]\noutput_dir = "
                       "\"fast\"\n[deployment]\ntype = \"multi_node\"\nnum_train_nodes = 1\n");
  const auto outcome = pb::node::start_recovery(run.request(), [](const std::string &) {});
  EXPECT_EQ(outcome.layout.trainer_checkpoints, run.tmp / "fast/checkpoints");
  EXPECT_EQ(outcome.layout.orchestrator_checkpoints, run.out / "my-run/checkpoints");
  EXPECT_EQ(outcome.decision.resume_step, 20);
}

} // namespace
