// SPDX-License-Identifier: MIT
// The claim of a checkpoint directory by one run (docs/recovery.md "One run per output dir").
#include "test_support.hpp"

#include <primebeaker/core/error.hpp>
#include <primebeaker/recovery/ledger.hpp>

#include <gtest/gtest.h>

#include <thread>
#include <vector>

namespace pb::recovery::ledger {
namespace {

TEST(Owner, TheFirstClaimWinsAndIsReadBack) {
  test::TempDir dir;
  const auto path = owner_path(dir.path() / "out");
  EXPECT_EQ(path, dir.path() / "out/primebeaker_recovery/owner.json");
  EXPECT_EQ(owner_path(dir.path() / "out", "my run"),
            dir.path() / "out/primebeaker_recovery/owner-my-run.json");
  EXPECT_FALSE(read_owner(path).has_value());
  const Owner first{"run-a", "01EXPA", "2026-12-05T10:00:00.000Z"};
  EXPECT_EQ(claim(path, first).run_id, "run-a");
  const Owner second{"run-b", "01EXPB", "2026-12-05T11:00:00.000Z"};
  const Owner kept = claim(path, second);
  EXPECT_EQ(kept.run_id, "run-a");
  EXPECT_EQ(kept.experiment, "01EXPA");
  EXPECT_EQ(read_owner(path)->claimed_at, "2026-12-05T10:00:00.000Z");
  const std::string line = ownership_refusal(path, dir.path() / "out", kept, "run-b");
  EXPECT_EQ(line.find('\n'), std::string::npos);
  EXPECT_NE(line.find("belongs to run run-a (experiment 01EXPA"), std::string::npos) << line;
  EXPECT_NE(line.find("run run-b must not resume from its checkpoints"), std::string::npos);
}

TEST(Owner, OfRacingClaimsExactlyOneWins) {
  test::TempDir dir;
  const auto path = owner_path(dir.path());
  std::vector<std::string> winners(8);
  std::vector<std::thread> threads;
  for (std::size_t i = 0; i < winners.size(); ++i) {
    threads.emplace_back([&, i] {
      winners[i] = claim(path, {"run-" + std::to_string(i), "", ""}).run_id;
    });
  }
  for (auto &thread : threads) {
    thread.join();
  }
  for (const auto &winner : winners) {
    EXPECT_EQ(winner, winners.front());
  }
  EXPECT_EQ(read_owner(path)->run_id, winners.front());
}

TEST(Owner, AnUnreadableRecordIsNamed) {
  test::TempDir dir;
  const auto path = owner_path(dir.path());
  test::write_file(path, "not json");
  try {
    read_owner(path);
    FAIL();
  } catch (const Error &error) {
    EXPECT_EQ(error.code(), 3);
    EXPECT_NE(std::string(error.what()).find(path.string()), std::string::npos);
  }
}

} // namespace
} // namespace pb::recovery::ledger
