// SPDX-License-Identifier: MIT
#include "checkpoint_tree.hpp"
#include "test_support.hpp"

#include <primebeaker/checkpoints/scan.hpp>
#include <primebeaker/core/error.hpp>

#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <set>

namespace {

namespace fs = std::filesystem;
using namespace pb::checkpoints;
using pb::test::CheckpointTree;
using pb::test::TempDir;
using pb::test::thrown_error;

CheckpointSource v080(const fs::path &out, int ranks) {
  CheckpointSource source;
  source.output_dir = out;
  source.trainer_root = out / "checkpoints";
  source.orchestrator_root = out / "run_default" / "checkpoints";
  source.expected_ranks = ranks;
  return source;
}

struct Scan {
  TreeListing listing;
  std::vector<StepStatus> statuses;
  const StepStatus &step(std::int64_t number, const std::string &name = "") const {
    for (const auto &status : statuses) {
      if (status.step == number && (name.empty() || status.name == name)) {
        return status;
      }
    }
    throw std::runtime_error("step not listed: " + std::to_string(number));
  }
  std::vector<std::int64_t> complete() const {
    std::vector<std::int64_t> out;
    for (const auto &status : statuses) {
      if (status.complete) {
        out.push_back(status.step);
      }
    }
    return out;
  }
};

Scan scan(const fs::path &out, int ranks) {
  Scan result{list_steps(v080(out, ranks)), {}};
  result.statuses = evaluate(result.listing);
  return result;
}

using Steps = std::vector<std::int64_t>;
using Lines = std::vector<std::string>;

TEST(CheckpointScan, ParsesStepNames) {
  EXPECT_EQ(parse_step_name("step_20"), 20);
  EXPECT_EQ(parse_step_name("step_007"), 7);
  EXPECT_EQ(parse_step_name("step_0"), 0);
  EXPECT_EQ(parse_step_name("step_9223372036854775807"), INT64_MAX);
  for (const char *bad : {"step_",
                          "step_x",
                          "step_1a",
                          "step_-1",
                          "Step_1",
                          "step_9223372036854775808",
                          "step_ 1",
                          "xstep_1",
                          "latest"}) {
    EXPECT_EQ(parse_step_name(bad), std::nullopt) << bad;
  }
}

TEST(CheckpointScan, CompleteStepsSelectTheNewest) {
  TempDir tmp;
  CheckpointTree tree(tmp / "out");
  for (const char *name : {"step_10", "step_20", "step_30"}) {
    tree.complete_step(name, 4);
  }
  const auto result = scan(tree.output_dir(), 4);
  EXPECT_EQ(result.complete(), (Steps{10, 20, 30}));
  EXPECT_EQ(newest_complete(result.statuses), 30);
  EXPECT_EQ(require_step(result.statuses, std::nullopt).step, 30);
  EXPECT_EQ(require_step(result.statuses, 20).step, 20);
  for (const auto &status : result.statuses) {
    EXPECT_TRUE(status.missing.empty());
    EXPECT_EQ(status.shards_found, 4U);
  }
}

// The Python reference tool's own test evidence: of its example tree only step 10 is complete.
TEST(CheckpointScan, ReferenceEvidenceOnlyStepTenIsComplete) {
  TempDir tmp;
  CheckpointTree tree(tmp / "out");
  tree.complete_step("step_10", 2);
  tree.write_shard("step_20", 0);
  tree.write_shard("step_20", 1);
  tree.write_metadata("step_20");
  tree.write_shard("step_30", 0);
  tree.write_metadata("step_30");
  tree.write_progress("step_30");
  const auto result = scan(tree.output_dir(), 2);
  EXPECT_EQ(result.complete(), Steps{10});
  EXPECT_EQ(require_step(result.statuses, std::nullopt).step, 10);
  EXPECT_EQ(result.step(20).missing,
            Lines{"run_default/checkpoints/step_20/orchestrator/progress.pt"});
  EXPECT_EQ(result.step(30).missing, Lines{"checkpoints/step_30/trainer/__1_0.distcp"});
  const auto error = thrown_error([&] { require_step(result.statuses, 20); });
  EXPECT_STREQ(error.what(), "step 20 is not a complete common checkpoint; available: 10");
  EXPECT_EQ(error.code(), 1);
  EXPECT_EQ(error.context(),
            Lines{"missing: run_default/checkpoints/step_20/orchestrator/progress.pt"});
}

TEST(CheckpointScan, MissingOrEmptyMetadata) {
  TempDir tmp;
  CheckpointTree tree(tmp / "out");
  tree.complete_step("step_1", 2);
  tree.complete_step("step_2", 2);
  fs::remove(tree.metadata("step_1"));
  tree.write_metadata("step_2", "");
  const auto result = scan(tree.output_dir(), 2);
  EXPECT_EQ(result.complete(), Steps{});
  EXPECT_EQ(result.step(1).missing, Lines{"checkpoints/step_1/trainer/.metadata"});
  EXPECT_EQ(result.step(2).missing, Lines{"checkpoints/step_2/trainer/.metadata (empty)"});
  EXPECT_FALSE(result.step(1).metadata_ok);
}

TEST(CheckpointScan, MissingEmptyAndExtraRankShards) {
  TempDir tmp;
  CheckpointTree tree(tmp / "out");
  for (const char *name : {"step_1", "step_2", "step_3", "step_4", "step_5"}) {
    tree.complete_step(name, 3);
  }
  fs::remove(tree.shard("step_1", 1)); // missing
  tree.write_shard("step_2", 2, "");   // empty
  tree.write_shard("step_3", 3);       // an extra rank (a larger world size)
  pb::test::write_file(tree.trainer_dir("step_4") / "__0_1.distcp",
                       "x"); // a second file for rank 0
  pb::test::write_file(tree.trainer_dir("step_5") / "__01_0.distcp", "x"); // not rank 1's name
  const auto result = scan(tree.output_dir(), 3);
  EXPECT_EQ(result.complete(), Steps{});
  EXPECT_EQ(result.step(1).missing, Lines{"checkpoints/step_1/trainer/__1_0.distcp"});
  EXPECT_EQ(result.step(2).missing, Lines{"checkpoints/step_2/trainer/__2_0.distcp (empty)"});
  EXPECT_EQ(
      result.step(3).missing,
      Lines{"checkpoints/step_3/trainer/__3_0.distcp (extra shard; 3 trainer ranks expected)"});
  EXPECT_EQ(result.step(3).shards_found, 4U);
  EXPECT_EQ(
      result.step(4).missing,
      Lines{"checkpoints/step_4/trainer/__0_1.distcp (extra shard; 3 trainer ranks expected)"});
  EXPECT_EQ(
      result.step(5).missing,
      Lines{"checkpoints/step_5/trainer/__01_0.distcp (extra shard; 3 trainer ranks expected)"});
}

TEST(CheckpointScan, MissingOrEmptyProgress) {
  TempDir tmp;
  CheckpointTree tree(tmp / "out");
  tree.complete_step("step_5", 1);
  tree.complete_step("step_6", 1);
  fs::remove(tree.progress("step_5"));
  tree.write_progress("step_6", "");
  const auto result = scan(tree.output_dir(), 1);
  EXPECT_EQ(result.complete(), Steps{});
  EXPECT_EQ(result.step(5).missing,
            Lines{"run_default/checkpoints/step_5/orchestrator/progress.pt"});
  EXPECT_EQ(result.step(6).missing,
            Lines{"run_default/checkpoints/step_6/orchestrator/progress.pt (empty)"});
  EXPECT_FALSE(result.step(6).progress_ok);
  EXPECT_TRUE(result.step(6).metadata_ok);
}

TEST(CheckpointScan, NewestStepHalfWrittenFallsBackToTheNewestCompleteOne) {
  TempDir tmp;
  CheckpointTree tree(tmp / "out");
  tree.complete_step("step_100", 4);
  tree.complete_step("step_200", 4);
  // Preempted mid-save: two of four shards, no .metadata yet, orchestrator already done.
  tree.write_shard("step_300", 0);
  tree.write_shard("step_300", 1);
  tree.write_progress("step_300");
  // And an orchestrator step the trainer never started.
  tree.write_progress("step_400");
  const auto result = scan(tree.output_dir(), 4);
  EXPECT_EQ(require_step(result.statuses, std::nullopt).step, 200);
  EXPECT_EQ(result.step(300).missing,
            (Lines{"checkpoints/step_300/trainer/.metadata",
                   "checkpoints/step_300/trainer/__2_0.distcp",
                   "checkpoints/step_300/trainer/__3_0.distcp"}));
  EXPECT_EQ(result.step(400).missing, Lines{"checkpoints/step_400/trainer"});
  const auto missing_shards = thrown_error([&] { require_step(result.statuses, 300); });
  EXPECT_STREQ(missing_shards.what(),
               "step 300 is not a complete common checkpoint; available: 100, 200");
  EXPECT_EQ(missing_shards.context().size(), 3U);
  const auto no_directory = thrown_error([&] { require_step(result.statuses, 250); });
  EXPECT_STREQ(no_directory.what(),
               "step 250 is not a complete common checkpoint; available: 100, 200");
  EXPECT_EQ(no_directory.context(), Lines{"no step_250 directory in either checkpoint root"});
}

TEST(CheckpointScan, ZeroPaddedNamesAreListedButNeverSelected) {
  TempDir tmp;
  CheckpointTree tree(tmp / "out");
  tree.complete_step("step_5", 1);
  tree.complete_step("step_007", 1); // Prime-RL would look for step_7 and not find it
  const auto result = scan(tree.output_dir(), 1);
  const auto &padded = result.step(7, "step_007");
  EXPECT_FALSE(padded.complete);
  EXPECT_EQ(padded.missing,
            Lines{"checkpoints/step_7 (found step_007; Prime-RL resumes step 7 from step_7)"});
  EXPECT_TRUE(padded.metadata_ok);
  EXPECT_TRUE(padded.progress_ok);
  EXPECT_EQ(require_step(result.statuses, std::nullopt).step, 5);

  // With the canonical directory present as well, step 7 is the canonical one.
  tree.complete_step("step_7", 1);
  const auto both = scan(tree.output_dir(), 1);
  ASSERT_EQ(both.statuses.size(), 3U);
  EXPECT_EQ(both.statuses[1].name, "step_007");
  EXPECT_EQ(both.statuses[2].name, "step_7");
  EXPECT_EQ(require_step(both.statuses, 7).name, "step_7");
  EXPECT_EQ(require_step(both.statuses, std::nullopt).name, "step_7");
}

TEST(CheckpointScan, NonStepEntriesAreIgnoredAndNamed) {
  TempDir tmp;
  CheckpointTree tree(tmp / "out");
  tree.complete_step("step_3", 1);
  pb::test::write_file(tmp / "out/checkpoints/notes.txt", "hello");
  pb::test::write_file(tmp / "out/checkpoints/step_4", "a file, not a directory");
  fs::create_directories(tmp / "out/checkpoints/step_latest/trainer");
  fs::create_directories(tmp / "out/checkpoints/latest");
  fs::create_directories(tmp / "out/run_default/checkpoints/step_x");
  pb::test::write_file(tree.trainer_dir("step_3") / "dataloader/rank_0.pt", "sft only");
  pb::test::write_file(tree.trainer_dir("step_3") / ".metadata.tmp", "in flight");
  const auto result = scan(tree.output_dir(), 1);
  ASSERT_EQ(result.statuses.size(), 1U);
  EXPECT_TRUE(result.statuses[0].complete);
  EXPECT_EQ(result.listing.ignored,
            (Lines{"checkpoints/latest",
                   "checkpoints/notes.txt",
                   "checkpoints/step_4",
                   "checkpoints/step_latest",
                   "run_default/checkpoints/step_x"}));
}

TEST(CheckpointScan, SymlinksAreFollowedAndDanglingOnesAreMissing) {
  TempDir tmp;
  CheckpointTree tree(tmp / "out");
  tree.complete_step("step_1", 2);
  // A step directory that lives elsewhere (e.g. moved to another volume).
  CheckpointTree elsewhere(tmp / "elsewhere");
  elsewhere.complete_step("step_2", 2);
  fs::create_directories(tmp / "out/checkpoints");
  fs::create_symlink(tmp / "elsewhere/checkpoints/step_2", tmp / "out/checkpoints/step_2");
  tree.write_progress("step_2");
  // A shard that is a symlink to a real file counts; a dangling one does not.
  tree.complete_step("step_3", 2);
  fs::remove(tree.shard("step_3", 1));
  fs::create_symlink(tree.shard("step_1", 1), tree.shard("step_3", 1));
  tree.complete_step("step_4", 2);
  fs::remove(tree.shard("step_4", 0));
  fs::create_symlink(tmp / "nowhere", tree.shard("step_4", 0));
  // A dangling progress.pt, a self-referencing metadata link, a dangling step directory.
  tree.complete_step("step_5", 2);
  fs::remove(tree.progress("step_5"));
  fs::create_symlink(tmp / "nowhere", tree.progress("step_5"));
  tree.complete_step("step_6", 2);
  fs::remove(tree.metadata("step_6"));
  fs::create_symlink(tree.metadata("step_6"), tree.metadata("step_6"));
  fs::create_symlink(tmp / "nowhere", tmp / "out/checkpoints/step_7");

  const auto result = scan(tree.output_dir(), 2);
  EXPECT_EQ(result.complete(), (Steps{1, 2, 3}));
  const auto &linked = std::find_if(result.listing.steps.begin(),
                                    result.listing.steps.end(),
                                    [](const StepListing &s) { return s.name == "step_2"; });
  EXPECT_TRUE(linked->via_symlink);
  EXPECT_EQ(result.step(4).missing,
            Lines{"checkpoints/step_4/trainer/__0_0.distcp (dangling symlink)"});
  EXPECT_EQ(result.step(5).missing,
            Lines{"run_default/checkpoints/step_5/orchestrator/progress.pt (dangling symlink)"});
  EXPECT_EQ(result.step(6).missing,
            Lines{"checkpoints/step_6/trainer/.metadata (dangling symlink)"});
  EXPECT_EQ(result.listing.ignored, Lines{"checkpoints/step_7"});
  EXPECT_EQ(require_step(result.statuses, std::nullopt).step, 3);
}

TEST(CheckpointScan, TrainerDirectoryThatIsAFile) {
  TempDir tmp;
  CheckpointTree tree(tmp / "out");
  pb::test::write_file(tmp / "out/checkpoints/step_1/trainer", "oops");
  tree.write_progress("step_1");
  const auto result = scan(tree.output_dir(), 1);
  EXPECT_EQ(result.step(1).missing, Lines{"checkpoints/step_1/trainer (not a directory)"});
}

TEST(CheckpointScan, ShardThatIsADirectory) {
  TempDir tmp;
  CheckpointTree tree(tmp / "out");
  tree.complete_step("step_1", 2);
  fs::remove(tree.shard("step_1", 1));
  fs::create_directories(tree.shard("step_1", 1));
  const auto result = scan(tree.output_dir(), 2);
  EXPECT_EQ(result.step(1).missing,
            Lines{"checkpoints/step_1/trainer/__1_0.distcp (not a regular file)"});
}

TEST(CheckpointScan, NoCompleteStepAtAll) {
  TempDir tmp;
  CheckpointTree tree(tmp / "out");
  tree.make_roots();
  auto result = scan(tree.output_dir(), 2);
  EXPECT_EQ(newest_complete(result.statuses), std::nullopt);
  EXPECT_STREQ(thrown_error([&] { require_step(result.statuses, std::nullopt); }).what(),
               "no complete common checkpoint; a resumable step needs every trainer shard, "
               "trainer .metadata and orchestrator progress.pt (no step directories found)");
  tree.write_shard("step_1", 0);
  result = scan(tree.output_dir(), 2);
  EXPECT_STREQ(thrown_error([&] { require_step(result.statuses, 1); }).what(),
               "step 1 is not a complete common checkpoint; available: none");
}

TEST(CheckpointScan, MissingRoots) {
  TempDir tmp;
  // Before the first checkpoint: no steps, nothing to resume from.
  const auto empty = list_steps(v080(tmp / "out", 1));
  EXPECT_FALSE(empty.trainer_root_exists);
  EXPECT_FALSE(empty.orchestrator_root_exists);
  EXPECT_TRUE(empty.steps.empty());
  EXPECT_TRUE(list_latest(v080(tmp / "out", 1)).steps.empty());
  EXPECT_TRUE(list_latest(v080(tmp / "out", 1), 5).steps.empty());
  // The orchestrator may be first: its steps are listed, each without its trainer side.
  pb::test::write_file(tmp / "early/run_default/checkpoints/step_1/orchestrator/progress.pt", "p");
  const auto early = evaluate(list_steps(v080(tmp / "early", 1)));
  ASSERT_EQ(early.size(), 1U);
  EXPECT_FALSE(early[0].complete);
  EXPECT_EQ(early[0].missing, Lines{"checkpoints/step_1/trainer"});
  // A root that is there but cannot be listed is an error.
  pb::test::write_file(tmp / "file/checkpoints", "x");
  const auto error = thrown_error([&] { list_steps(v080(tmp / "file", 1)); });
  EXPECT_EQ(error.what(),
            "cannot read the trainer checkpoint root " + (tmp / "file/checkpoints").string() +
                " (Not a directory)");
  EXPECT_EQ(error.code(), 1);
  // Trainer checkpoints without any orchestrator root: listed, every step lacks progress.pt.
  CheckpointTree tree(tmp / "out");
  tree.write_shard("step_1", 0);
  tree.write_metadata("step_1");
  const auto result = scan(tree.output_dir(), 1);
  EXPECT_FALSE(result.listing.orchestrator_root_exists);
  EXPECT_EQ(result.step(1).missing,
            Lines{"run_default/checkpoints/step_1/orchestrator/progress.pt"});
}

// Stat calls are what a scan costs on Weka: exactly one per file completeness depends on.
TEST(CheckpointScan, StatCallsPerStepAreRanksPlusTwo) {
  TempDir tmp;
  CheckpointTree tree(tmp / "out");
  for (int step = 1; step <= 25; ++step) {
    tree.complete_step("step_" + std::to_string(step), 8);
    pb::test::write_file(tree.trainer_dir("step_" + std::to_string(step)) / "unrelated.json", "{}");
  }
  const auto result = scan(tree.output_dir(), 8);
  EXPECT_EQ(result.complete().size(), 25U);
  EXPECT_EQ(result.listing.stats.stat_calls, 25U * (8 + 2));
  EXPECT_EQ(result.listing.stats.directories_read, 2U + 25U);
}

// Large trees are listed by several workers; the result and the counts must not depend on it.
TEST(CheckpointScan, ParallelListingMatchesTheRule) {
  TempDir tmp;
  CheckpointTree tree(tmp / "out");
  std::vector<std::int64_t> expected;
  for (int step = 1; step <= 400; ++step) {
    const std::string name = "step_" + std::to_string(step);
    tree.complete_step(name, 2);
    if (step % 7 == 0) {
      fs::remove(tree.shard(name, 1));
    } else if (step % 11 == 0) {
      tree.write_progress(name, "");
    } else {
      expected.push_back(step);
    }
  }
  const auto result = scan(tree.output_dir(), 2);
  EXPECT_EQ(result.complete(), expected);
  EXPECT_EQ(result.listing.stats.directories_read, 2U + 400U);
  // Four per step, minus the shards that are not there.
  EXPECT_EQ(result.listing.stats.stat_calls, 400U * 4 - 400U / 7);
  EXPECT_EQ(require_step(result.statuses, std::nullopt).step, 400);
}

TEST(CheckpointScan, ListingOneStepMatchesTheFullListing) {
  TempDir tmp;
  CheckpointTree tree(tmp / "out");
  tree.complete_step("step_1", 3);
  tree.complete_step("step_2", 3);
  tree.write_shard("step_2", 7);
  const auto source = v080(tree.output_dir(), 3);
  const auto full = list_steps(source);
  for (const auto &step : full.steps) {
    const auto one = list_steps(source, step.name);
    ASSERT_EQ(one.steps.size(), 1U);
    EXPECT_EQ(one.steps[0].rank_shards, step.rank_shards);
    EXPECT_EQ(one.steps[0].extra_shards, step.extra_shards);
    EXPECT_EQ(one.steps[0].progress, step.progress);
    EXPECT_EQ(one.steps[0].metadata, step.metadata);
    EXPECT_LE(one.stats.stat_calls, 2U + 3U + 2U);
  }
  EXPECT_TRUE(list_steps(source, "step_9").steps.empty());
}

TEST(CheckpointScan, RecordHasAbsolutePathsAndSizesInRankOrder) {
  TempDir tmp;
  CheckpointTree tree(tmp / "out");
  for (int rank = 0; rank < 12; ++rank) {
    tree.write_shard("step_20", rank, std::string(static_cast<std::size_t>(rank + 1), 'x'));
  }
  tree.write_metadata("step_20", "12345");
  tree.write_progress("step_20", "12345678");
  const auto source = v080(tree.output_dir(), 12);
  const auto listing = list_steps(source);
  const auto record = make_record(listing.steps.at(0), source);
  EXPECT_EQ(record.step, 20);
  EXPECT_EQ(record.trainer_dir, tree.trainer_dir("step_20"));
  EXPECT_EQ(record.trainer_metadata, tree.metadata("step_20"));
  EXPECT_EQ(record.trainer_metadata_size, 5U);
  ASSERT_EQ(record.trainer_shards.size(), 12U);
  EXPECT_EQ(record.trainer_shards[10].path, tree.shard("step_20", 10));
  EXPECT_EQ(record.trainer_shards[10].size, 11U);
  EXPECT_EQ(record.orchestrator_progress, tree.progress("step_20"));
  EXPECT_EQ(record.orchestrator_progress_size, 8U);
}

TEST(CheckpointScan, V09LayoutIsDetectedAndScannedInPlace) {
  TempDir tmp;
  const fs::path run = tmp / "out" / "my-run";
  for (int step : {5, 10}) {
    const fs::path dir = run / "checkpoints" / ("step_" + std::to_string(step));
    pb::test::write_file(dir / "trainer/.metadata", "m");
    pb::test::write_file(dir / "trainer/__0_0.distcp", "s");
    pb::test::write_file(dir / "trainer/__1_0.distcp", "s");
    if (step == 5) {
      pb::test::write_file(dir / "orchestrator/progress.pt", "p");
    } else {
      fs::create_directories(dir / "orchestrator");
    }
  }
  for (const fs::path &given : {tmp / "out", run}) {
    const auto source = detect_source(given, 2);
    EXPECT_EQ(source.layout, Layout::v0_9) << given;
    EXPECT_EQ(source.output_dir, run);
    EXPECT_EQ(source.trainer_root, run / "checkpoints");
    EXPECT_EQ(source.orchestrator_root, run / "checkpoints");
    const auto statuses = evaluate(list_steps(source));
    ASSERT_EQ(statuses.size(), 2U);
    EXPECT_TRUE(statuses[0].complete);
    EXPECT_EQ(statuses[1].missing, Lines{"checkpoints/step_10/orchestrator/progress.pt"});
  }
  // A v0.8.0 tree is never mistaken for it.
  CheckpointTree tree(tmp / "old");
  tree.complete_step("step_1", 1);
  const auto old = detect_source(tmp / "old", 1);
  EXPECT_EQ(old.layout, Layout::v0_8_0);
  EXPECT_EQ(old.orchestrator_root, tmp / "old/run_default/checkpoints");
  // Two run directories: ambiguous, so say so.
  pb::test::write_file(tmp / "out/other-run/checkpoints/step_1/orchestrator/progress.pt", "p");
  const auto ambiguous = thrown_error([&] { detect_source(tmp / "out", 2); });
  EXPECT_NE(std::string(ambiguous.what()).find("holds 2 v0.9 run directories"), std::string::npos);
  EXPECT_EQ(ambiguous.context().size(), 2U);
  // Nothing written yet: v0.8.0, the primary target, which lists no steps.
  const auto empty = detect_source(tmp / "empty", 1);
  EXPECT_EQ(empty.layout, Layout::v0_8_0);
  EXPECT_EQ(empty.trainer_root, tmp / "empty/checkpoints");
  EXPECT_TRUE(list_steps(empty).steps.empty());
}

// Randomised trees against an independent oracle written with std::filesystem: whatever the
// damage, the chosen step is the newest one that both owners finished.
TEST(CheckpointScan, ChosenStepIsAlwaysTheNewestCompleteCommonOne) {
  std::mt19937 random(20260802);
  for (int round = 0; round < 40; ++round) {
    TempDir tmp;
    CheckpointTree tree(tmp / "out");
    tree.make_roots();
    const int ranks = 1 + static_cast<int>(random() % 5);
    std::set<std::int64_t> expected;
    const int steps = 1 + static_cast<int>(random() % 12);
    for (int i = 0; i < steps; ++i) {
      const std::string name = "step_" + std::to_string((i + 1) * 10);
      tree.complete_step(name, ranks);
      switch (random() % 9) {
      case 0:
        fs::remove(tree.metadata(name));
        break;
      case 1:
        tree.write_shard(name, static_cast<int>(random() % ranks), "");
        break;
      case 2:
        fs::remove(tree.shard(name, static_cast<int>(random() % ranks)));
        break;
      case 3:
        tree.write_shard(name, ranks);
        break;
      case 4:
        fs::remove(tree.progress(name));
        break;
      case 5:
        tree.write_progress(name, "");
        break;
      case 6:
        fs::remove_all(tree.trainer_dir(name).parent_path());
        break;
      default:
        break; // stays complete
      }
    }
    // The oracle: the rule of docs/checkpoints.md spelled out directly.
    for (const auto &entry : fs::directory_iterator(tmp / "out/checkpoints")) {
      const std::string name = entry.path().filename().string();
      const fs::path trainer = entry.path() / "trainer";
      bool ok =
          fs::is_regular_file(trainer / ".metadata") && fs::file_size(trainer / ".metadata") > 0;
      int distcp = 0;
      for (const auto &file : fs::directory_iterator(trainer)) {
        distcp += file.path().extension() == ".distcp" ? 1 : 0;
      }
      for (int rank = 0; rank < ranks; ++rank) {
        const fs::path shard = tree.shard(name, rank);
        ok = ok && fs::is_regular_file(shard) && fs::file_size(shard) > 0;
      }
      const fs::path progress = tree.progress(name);
      ok = ok && distcp == ranks && fs::is_regular_file(progress) && fs::file_size(progress) > 0;
      if (ok) {
        expected.insert(std::stoll(name.substr(5)));
      }
    }
    const auto result = scan(tree.output_dir(), ranks);
    const auto complete = result.complete();
    EXPECT_EQ(std::set<std::int64_t>(complete.begin(), complete.end()), expected)
        << "round " << round;
    if (expected.empty()) {
      EXPECT_PB_ERROR(
          require_step(result.statuses, std::nullopt), 1, "no complete common checkpoint");
    } else {
      EXPECT_EQ(require_step(result.statuses, std::nullopt).step, *expected.rbegin())
          << "round " << round;
    }
    for (const auto &status : result.statuses) {
      EXPECT_EQ(status.complete, status.missing.empty()) << status.name;
    }
    // Reading newest first picks the same step, and the same refusal when there is none; so
    // does asking for each listed step (and one that does not exist).
    const auto source = v080(tree.output_dir(), ranks);
    const auto select = [](const std::vector<StepStatus> &statuses,
                           std::optional<std::int64_t> requested) -> std::string {
      try {
        return std::to_string(require_step(statuses, requested).step);
      } catch (const pb::Error &e) {
        return e.what();
      }
    };
    const auto latest = list_latest(source);
    EXPECT_EQ(select(evaluate(latest), std::nullopt), select(result.statuses, std::nullopt))
        << "round " << round;
    for (std::int64_t requested = 0; requested <= (steps + 1) * 10; requested += 10) {
      EXPECT_EQ(select(evaluate(list_latest(source, requested)), requested),
                select(result.statuses, requested))
          << "round " << round << ", step " << requested;
    }
  }
}

// The resume pick reads the two roots and then step directories newest first, down to the first
// complete one: a few directory reads however long the run was.
TEST(CheckpointScan, LatestReadsNewestFirstAndStopsAtTheFirstCompleteStep) {
  TempDir tmp;
  CheckpointTree tree(tmp / "out");
  for (int step = 1; step <= 60; ++step) {
    tree.complete_step("step_" + std::to_string(step), 3);
  }
  fs::remove(tree.progress("step_60")); // the orchestrator had not finished
  tree.write_shard("step_59", 2, "");   // a rank was still writing
  tree.write_progress("step_61");       // the orchestrator is ahead of the trainer
  const auto source = v080(tree.output_dir(), 3);
  const auto latest = list_latest(source);
  std::vector<std::string> names;
  for (const auto &step : latest.steps) {
    names.push_back(step.name);
  }
  EXPECT_EQ(names, Lines({"step_58", "step_59", "step_60", "step_61"}));
  EXPECT_EQ(latest.stats.directories_read, 2u + 3u); // two roots, three trainer directories
  const auto statuses = evaluate(latest);
  EXPECT_EQ(require_step(statuses, std::nullopt).step, 58);
  EXPECT_EQ(newest_complete(statuses), std::optional<std::int64_t>(58));
  // The steps it did read are evaluated exactly as in the full listing.
  const auto full = scan(tree.output_dir(), 3);
  for (const auto &status : statuses) {
    EXPECT_EQ(status.missing, full.step(status.step).missing) << status.name;
  }

  // A requested complete step is one directory read; an incomplete one falls back to the full
  // listing so that the refusal names what is available.
  const auto one = list_latest(source, 30);
  ASSERT_EQ(one.steps.size(), 1u);
  EXPECT_EQ(one.steps.front().name, "step_30");
  EXPECT_EQ(one.stats.directories_read, 1u);
  EXPECT_PB_ERROR(require_step(evaluate(list_latest(source, 60)), 60),
                  1,
                  "step 60 is not a complete common checkpoint; available: 1, 2, 3");
}

// evaluate_step() is pure: literal listings, no disk.
TEST(CheckpointEvaluate, LiteralListings) {
  CheckpointSource source = v080("/o", 2);
  StepListing step;
  step.name = "step_3";
  step.step = 3;
  step.in_trainer_root = true;
  step.in_orchestrator_root = true;
  step.trainer_dir = {EntryKind::directory, 0};
  step.metadata = {EntryKind::regular, 10};
  step.rank_shards = {{EntryKind::regular, 1}, {EntryKind::regular, 1}};
  step.progress = {EntryKind::regular, 1};
  EXPECT_TRUE(evaluate_step(step, source).complete);
  step.rank_shards[1] = {EntryKind::other, 0};
  EXPECT_EQ(evaluate_step(step, source).missing,
            Lines{"checkpoints/step_3/trainer/__1_0.distcp (not a regular file)"});
  // Roots outside the output directory (ckpt.output_dir) are named absolutely.
  source.trainer_root = "/elsewhere/checkpoints";
  EXPECT_EQ(evaluate_step(step, source).missing,
            Lines{"/elsewhere/checkpoints/step_3/trainer/__1_0.distcp (not a regular file)"});
}

} // namespace
