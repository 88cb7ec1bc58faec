// SPDX-License-Identifier: MIT
// The beaker client against a fake `beaker` program that records its argv.
#include "test_support.hpp"

#include <primebeaker/beaker/client.hpp>
#include <primebeaker/core/error.hpp>

#include <gtest/gtest.h>

namespace pb::beaker {
namespace {

class ClientTest : public ::testing::Test {
protected:
  // The fake beaker's path, answering `args` (and nothing else) with `answer` from now on.
  std::string fake(const std::vector<std::string> &args, const test::FakeAnswer &answer) {
    m_beaker.clear().on_sequence(args, {answer});
    return (m_fakes.bin() / "beaker").string();
  }
  test::TempDir m_tmp;
  test::FakeBin m_fakes{m_tmp.path()};
  test::FakeBeaker m_beaker{m_fakes};
  proc::SystemRunner m_runner;
};

const std::vector<std::string> k_create = {"experiment", "create"};

TEST_F(ClientTest, ProgramFromEnvironment) {
  EXPECT_EQ(program_from_environment({}), "beaker");
  EXPECT_EQ(program_from_environment({{"PRIMEBEAKER_BEAKER", ""}}), "beaker");
  EXPECT_EQ(program_from_environment({{"PRIMEBEAKER_BEAKER", "/opt/b"}}), "/opt/b");
}

TEST_F(ClientTest, CreateRunsTheDocumentedArgv) {
  Client client(m_runner,
                fake(k_create,
                     {R"([{"id": "01ABC", "name": "name with space"}])"
                      "\n"}));
  const auto out = client.create_experiment("name with space", "ai2/ws", "/weka/spec.json");
  EXPECT_EQ(parse_created_experiment_id(out), "01ABC");
  const auto calls = m_beaker.calls();
  ASSERT_EQ(calls.size(), 1u);
  EXPECT_EQ(calls[0].argv,
            (std::vector<std::string>{"beaker",
                                      "experiment",
                                      "create",
                                      "--name",
                                      "name with space",
                                      "--workspace",
                                      "ai2/ws",
                                      "--format",
                                      "json",
                                      "/weka/spec.json"}));
}

TEST_F(ClientTest, CreateFailureCarriesStderrOrStdout) {
  Client client(m_runner, fake(k_create, {"", 2, "denied\n"}));
  const auto error =
      test::thrown_error([&] { client.create_experiment("n", "ai2/ws", "/s.json"); });
  EXPECT_EQ(error.code(), 4);
  EXPECT_STREQ(error.what(), "beaker could not create experiment n (exit code 2): denied");
  Client quiet(m_runner, fake(k_create, {"only stdout\n", 1}));
  EXPECT_STREQ(
      test::thrown_error([&] { quiet.create_experiment("n", "ai2/ws", "/s.json"); }).what(),
      "beaker could not create experiment n (exit code 1): only stdout");
}

TEST_F(ClientTest, MissingProgramIsExit4WithAHint) {
  Client client(m_runner, (m_tmp.path() / "no-such-beaker").string());
  const auto error =
      test::thrown_error([&] { client.create_experiment("n", "ai2/ws", "/s.json"); });
  EXPECT_EQ(error.code(), 4);
  ASSERT_FALSE(error.context().empty());
  EXPECT_NE(error.context().back().find("PRIMEBEAKER_BEAKER"), std::string::npos);
}

TEST_F(ClientTest, GetExperimentParsesArrayOrObject) {
  const std::vector<std::string> get = {"experiment", "get"};
  Client array(m_runner,
               fake(get,
                    {R"([{"id": "01A", "jobs": []}])"
                     "\n"}));
  auto got = array.get_experiment("01A");
  ASSERT_TRUE(got.is_array());
  EXPECT_EQ(got[0]["id"], "01A");
  EXPECT_EQ(m_beaker.calls().back().argv,
            (std::vector<std::string>{"beaker", "experiment", "get", "01A", "--format", "json"}));
  Client object(m_runner,
                fake(get,
                     {R"({"id": "01B"})"
                      "\n"}));
  got = object.get_experiment("01B");
  EXPECT_EQ(got[0]["id"], "01B");
  Client garbage(m_runner, fake(get, {"not json\n"}));
  EXPECT_PB_ERROR(garbage.get_experiment("x"), 4, "");
}

TEST_F(ClientTest, StopAndParseId) {
  const std::vector<std::string> stop = {"experiment", "stop"};
  Client client(m_runner, fake(stop, {}));
  client.stop_experiment("01S");
  EXPECT_EQ(m_beaker.calls().back().argv,
            (std::vector<std::string>{"beaker", "experiment", "stop", "01S"}));
  Client failing(m_runner, fake(stop, {"", 1, "nope\n"}));
  EXPECT_PB_ERROR(failing.stop_experiment("01S"), 4, "nope");
  EXPECT_EQ(parse_created_experiment_id("\x1b[1mExperiment \x1b[32m01XYZ\x1b[0m submitted."),
            "01XYZ");
  EXPECT_EQ(parse_created_experiment_id("nothing here"), std::nullopt);
}

// `--format json`: the first experiment of the array (or a lone object), its URL when given; the
// text answer of older CLIs still read; JSON without an id is no id.
TEST(ParseCreated, JsonFirstTextAsFallback) {
  EXPECT_EQ(parse_created_experiment_id(R"([{"id": "01J", "name": "n"}])"), "01J");
  EXPECT_EQ(parse_created_experiment_id("[\n  {\n    \"id\": \"01P\"\n  }\n]\n"), "01P");
  EXPECT_EQ(parse_created_experiment_id(R"({"id": "01O"})"), "01O");
  EXPECT_EQ(parse_created_experiment_id("Warning: a newer CLI exists\n[{\"id\": \"01W\"}]\n"),
            "01W");
  const auto with_url =
      parse_created_experiment(R"([{"id": "01U", "url": "https://beaker.example/ex/01U"}])");
  ASSERT_TRUE(with_url.has_value());
  EXPECT_EQ(with_url->id, "01U");
  EXPECT_EQ(with_url->url, "https://beaker.example/ex/01U");
  const auto without_url = parse_created_experiment(R"([{"id": "01N"}])");
  ASSERT_TRUE(without_url.has_value());
  EXPECT_EQ(without_url->url, std::nullopt);
  EXPECT_EQ(parse_created_experiment_id("Experiment 01T submitted. See progress at x\n"), "01T");
  EXPECT_EQ(parse_created_experiment_id("[]"), std::nullopt);
  EXPECT_EQ(parse_created_experiment_id(R"([{"name": "no id"}])"), std::nullopt);
  EXPECT_EQ(parse_created_experiment_id(R"([{"id": ""}])"), std::nullopt);
  EXPECT_EQ(parse_created_experiment_id(""), std::nullopt);
}

} // namespace
} // namespace pb::beaker
