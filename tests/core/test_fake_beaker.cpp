// SPDX-License-Identifier: MIT
// The shared test fakes themselves: a table-driven `beaker` and EXPECT_PB_ERROR.
#include "test_support.hpp"

#include <primebeaker/core/process.hpp>

#include <gtest/gtest.h>

#include <signal.h>

namespace {

using pb::test::FakeBeaker;
using pb::test::FakeBin;
using pb::test::TempDir;

pb::test::RunResult run_fake(const FakeBin &bin, const std::vector<std::string> &args) {
  // Run the fake through bash so no primebeaker code is involved in what is being tested.
  pb::test::RunResult result;
  std::vector<std::string> argv{"/bin/bash", (bin.bin() / "beaker").string()};
  argv.insert(argv.end(), args.begin(), args.end());
  pb::proc::SystemRunner runner;
  pb::proc::Command command;
  command.argv = argv;
  const auto out = runner.run(command);
  result.exit_code = out.exit_code;
  result.out = out.out;
  result.err = out.err;
  return result;
}

TEST(FakeBeaker, FirstMatchingRuleAnswersAndWildcardsMatchOneWord) {
  TempDir tmp;
  FakeBin bin(tmp.path());
  FakeBeaker beaker(bin);
  beaker.on({"experiment", "get", "01A"}, "{\"id\":\"01A\"}\n")
      .on({"experiment", "get", "*"}, "", 1, "not found\n");
  EXPECT_EQ(run_fake(bin, {"experiment", "get", "01A", "--format", "json"}).out,
            "{\"id\":\"01A\"}\n");
  const auto missing = run_fake(bin, {"experiment", "get", "01B"});
  EXPECT_EQ(missing.exit_code, 1);
  EXPECT_EQ(missing.err, "not found\n");
  const auto unexpected = run_fake(bin, {"job", "logs", "01J"});
  EXPECT_EQ(unexpected.exit_code, 97);
  EXPECT_NE(unexpected.err.find("unexpected call: job logs 01J"), std::string::npos);
  EXPECT_EQ(beaker.calls().size(), 3u);
  EXPECT_EQ(beaker.calls_matching({"experiment", "get"}).size(), 2u);
}

TEST(FakeBeaker, SequencePlaysInOrderThenRepeatsTheLast) {
  TempDir tmp;
  FakeBin bin(tmp.path());
  FakeBeaker beaker(bin);
  beaker.on_sequence({"job", "get"},
                     {{"pending\n", 0, ""}, {"running\n", 0, ""}, {"done\n", 0, ""}});
  EXPECT_EQ(run_fake(bin, {"job", "get", "x"}).out, "pending\n");
  EXPECT_EQ(run_fake(bin, {"job", "get", "x"}).out, "running\n");
  EXPECT_EQ(run_fake(bin, {"job", "get", "x"}).out, "done\n");
  EXPECT_EQ(run_fake(bin, {"job", "get", "x"}).out, "done\n");
}

TEST(FakeBeaker, KeepsTheLastArgumentFileAndClearForgetsTheRules) {
  TempDir tmp;
  FakeBin bin(tmp.path());
  FakeBeaker beaker(bin);
  pb::test::FakeAnswer created{"Experiment 01X submitted\n"};
  created.keep_last_argument = true;
  beaker.on_sequence({"experiment", "create"}, {created}).on({"experiment", "stop"}, "");
  pb::test::write_file(tmp / "spec.json", "{\"version\": \"v2\"}");
  EXPECT_EQ(run_fake(bin, {"experiment", "create", (tmp / "spec.json").string()}).out,
            "Experiment 01X submitted\n");
  EXPECT_EQ(run_fake(bin, {"experiment", "stop", "01X"}).exit_code, 0);
  EXPECT_EQ(beaker.kept_files(), std::vector<std::string>{"{\"version\": \"v2\"}"});
  beaker.clear().on({"experiment", "stop"}, "", 1, "denied\n");
  EXPECT_EQ(run_fake(bin, {"experiment", "stop", "01X"}).err, "denied\n");
  EXPECT_EQ(run_fake(bin, {"experiment", "create", "x"}).exit_code, 97);
  EXPECT_EQ(beaker.calls().size(), 4u);
}

TEST(FakeBeaker, SignalsItsCallerBeforeAnswering) {
  TempDir tmp;
  FakeBin bin(tmp.path());
  FakeBeaker beaker(bin);
  pb::test::FakeAnswer interrupted{"", 1, "terminated\n"};
  interrupted.signal_caller = SIGTERM;
  beaker.on_sequence({"experiment", "create"}, {interrupted});
  // The caller is a bash that traps SIGTERM and reports it.
  pb::proc::Command command;
  command.argv = {"/bin/bash",
                  "-c",
                  "trap 'echo caught' TERM; \"$0\" experiment create spec; echo \"exit $?\"",
                  (bin.bin() / "beaker").string()};
  const auto out = pb::proc::SystemRunner().run(command);
  EXPECT_EQ(out.out, "caught\nexit 1\n");
  EXPECT_EQ(out.err, "terminated\n");
}

TEST(FakeBeaker, AnswersCanNameTheCallsWords) {
  TempDir tmp;
  FakeBin bin(tmp.path());
  FakeBeaker beaker(bin);
  pb::test::FakeAnswer image{"[{\"id\": \"01-{4}\"}] {9} {x}\n"};
  image.expand_arguments = true;
  beaker.on_sequence({"image", "create"}, {image});
  EXPECT_EQ(run_fake(bin, {"image", "create", "sha256:1", "a b&c/{1}"}).out,
            "[{\"id\": \"01-a b&c/{1}\"}] {9} {x}\n");
  const auto calls = beaker.calls();
  ASSERT_EQ(calls.size(), 1u);
  EXPECT_GT(calls[0].time_ns, 0);
}

TEST(ExpectPbError, ChecksCodeAndMessage) {
  EXPECT_PB_ERROR(throw pb::input_error("bad key 'x'"), pb::ExitCode::bad_input, "bad key");
  EXPECT_PB_ERROR(throw pb::Error(pb::ExitCode::failure, "top", {"at line 3"}), 1, "line 3");
}

} // namespace
