// SPDX-License-Identifier: MIT
// The launch card (docs/launch.md "The launch card"): golden cards of the example topologies,
// the card on stderr only when stderr is a terminal, submit's question on a pseudo-terminal,
// --yes, no question when stdin is not a terminal; and submit reading beaker's JSON answer.
#include "launch_fixture.hpp"

#include <primebeaker/core/process.hpp>

using nlohmann::json;

namespace pb::test {
namespace {

// Runs `argv` (argv[0] an absolute program) on a new pseudo-terminal that is its stdin, stdout
// and stderr; when the output shows "[y/N]", types `answer` and Enter. Prints everything the
// terminal showed and exits with the program's exit code.
const char *const k_pty_driver = R"PY(
import os, pty, select, sys
answer = sys.argv[1]
argv = sys.argv[2:]
pid, fd = pty.fork()
if pid == 0:
    os.execv(argv[0], argv)
out = b""
sent = False
while True:
    ready, _, _ = select.select([fd], [], [], 60)
    if not ready:
        os.kill(pid, 9)
        break
    try:
        data = os.read(fd, 4096)
    except OSError:
        break
    if not data:
        break
    out += data
    if not sent and b"[y/N]" in out:
        os.write(fd, answer.encode() + b"\n")
        sent = True
_, status = os.waitpid(pid, 0)
sys.stdout.buffer.write(out)
sys.exit(os.waitstatus_to_exitcode(status))
)PY";

class Card : public LaunchFixture {
protected:
  // The card of a preview (`--card`: alone on stdout), checked against its golden file.
  std::string card(const std::vector<std::string> &args, const std::string &golden) {
    std::vector<std::string> with_card = args;
    with_card.push_back("--card");
    const std::string before = tree_digest(m_tmp.path());
    const auto result = run(with_card);
    EXPECT_EQ(result.exit_code, 0) << result.err;
    EXPECT_EQ(result.err, "");
    EXPECT_EQ(tree_digest(m_tmp.path()), before) << "a card changed the file tree";
    EXPECT_TRUE(m_beaker.calls().empty()) << "a card ran beaker";
    expect_golden(golden, normalized(result.out));
    return result.out;
  }

  // `primebeaker args... + mount flags` on a pseudo-terminal, answering `answer` when asked.
  RunResult run_on_terminal(std::vector<std::string> args, const std::string &answer) {
    const auto driver = m_tmp.path() / "pty_driver.py";
    write_file(driver, k_pty_driver);
    const auto flags = mount_flags();
    args.insert(args.begin() + 2, flags.begin(), flags.end());
    proc::Command command;
    command.argv = {"/usr/bin/python3", driver.string(), answer, binary_path().string()};
    command.argv.insert(command.argv.end(), args.begin(), args.end());
    command.clear_env = true;
    command.env_set = {{"PATH", m_fakes.bin().string() + ":/usr/local/bin:/usr/bin:/bin"},
                       {"LANG", "C.UTF-8"},
                       {"TZ", "UTC"},
                       {"NO_COLOR", "1"},
                       {"HOME", m_tmp.path().string()},
                       {"PRIMEBEAKER_LAUNCH_ID", "0123456789abcdef0123456789abcdef"},
                       {"PRIMEBEAKER_IMAGE_CATALOG", runtime_catalog().string()}};
    command.cwd = mount();
    command.timeout = std::chrono::seconds(300);
    proc::SystemRunner runner;
    const auto result = runner.run(command);
    return {result.signal != 0 ? 128 + result.signal : result.exit_code, result.out, result.err};
  }

  std::string sft_spec_path() const {
    return at("primebeaker/beaker_experiments/primebeaker-example-sft-0123456789abcdef0123456789abcdef.json");
  }
};

bool has(const std::string &text, const std::string &part) {
  return text.find(part) != std::string::npos;
}

TEST_F(Card, SingleNodeSft) {
  const auto text =
      card({"sft", "preview", "--toml", "examples/sft/sft.toml"}, "card-sft-single-node.txt");
  EXPECT_TRUE(has(text, "GPUs 0-1 trainer (2 ranks)")) << text;
  EXPECT_TRUE(has(text, "2 GPU-hours per hour of run time")) << text;
}

TEST_F(Card, SingleNodeRl) {
  const auto text = card({"rl",
                          "preview",
                          "--toml",
                          "examples/rl/rl.toml",
                          "--registry",
                          "redis://registry:6379",
                          "--max-recoveries",
                          "3",
                          "--max-restarts-on-errors",
                          "1"},
                         "card-rl-single-node.txt");
  EXPECT_TRUE(has(text, "up to 3 recoveries after preemption, 1 restart after errors")) << text;
  EXPECT_TRUE(has(text, "registry   redis://registry:6379")) << text;
}

TEST_F(Card, MultiNodeSft) {
  const auto text =
      card({"sft", "preview", "--toml", "data/multinode-sft.toml"}, "card-sft-multi-node.txt");
  EXPECT_TRUE(has(text, "3 replicas x 8 GPUs = 24 GPUs")) << text;
  EXPECT_TRUE(has(text, "replica 2  GPUs 0-7 trainer (global ranks 16-23)")) << text;
  EXPECT_TRUE(has(text, "24 GPU-hours per hour of run time")) << text;
}

TEST_F(Card, MultiNodeRlShowsEachGpusRoleAndTheServices) {
  const auto text = card({"rl",
                          "preview",
                          "--toml",
                          "examples/multinode-rl/rl.toml",
                          "--registry",
                          "redis://registry:6379",
                          "--required-service",
                          "terminal=4",
                          "--required-service",
                          "judge=1",
                          "--cluster",
                          "ai2/jupiter",
                          "--min-runtime-hours",
                          "2",
                          "--wandb-run-id",
                          "shared-run"},
                         "card-rl-multi-node.txt");
  EXPECT_TRUE(has(text, "6 workers on 12 GPUs (dp 6, tp 2)")) << text;
  EXPECT_TRUE(has(text, "replica 0  GPUs 0-3 trainer (4 ranks), GPUs 4-7 inference (workers 0-1)"))
      << text;
  EXPECT_TRUE(has(text, "replica 1  GPUs 0-7 inference (workers 2-5)")) << text;
  EXPECT_TRUE(has(text, "tool gateway on port 1212 (8 workers)")) << text;
  EXPECT_TRUE(has(text, "waits for judge x1, terminal x4")) << text;
  EXPECT_TRUE(has(text, "16 GPU-hours per hour of run time (held at least 2h)")) << text;
}

TEST_F(Card, ExampleMultiNodeRlTopologies) {
  for (const auto &[toml, golden] :
       {std::pair{"examples/podman-terminal/multinode-rl.toml", "card-podman-terminal.txt"},
        std::pair{"examples/search-agent-webterminal/multinode-rl.toml",
                  "card-search-agent-webterminal.txt"}}) {
    const auto text =
        card({"rl", "preview", "--toml", toml, "--registry", "redis://registry:6379"}, golden);
    EXPECT_TRUE(has(text, "GPU-hours per hour of run time")) << toml;
  }
}

TEST_F(Card, NoStageNamesTheImagesProgram) {
  const auto result =
      run({"sft", "preview", "--toml", "examples/sft/sft.toml", "--no-stage", "--card"});
  ASSERT_EQ(result.exit_code, 0) << result.err;
  EXPECT_TRUE(has(result.out, "primebeaker from the image's PATH (--no-stage)")) << result.out;
}

// Without --card, a preview whose stderr is not a terminal prints the JSON alone (the golden
// previews also check that stderr stays empty); on a terminal the card comes on stderr.
TEST_F(Card, PreviewOnATerminalShowsTheCardBesideTheJson) {
  const auto result = run_on_terminal({"sft", "preview", "--toml", "examples/sft/sft.toml"}, "");
  ASSERT_EQ(result.exit_code, 0) << result.out;
  EXPECT_TRUE(has(result.out, "single-node SFT: primebeaker-example-sft")) << result.out;
  EXPECT_TRUE(has(result.out, "\"experiment_name\": \"primebeaker-example-sft\"")) << result.out;
  EXPECT_FALSE(has(result.out, "[y/N]")) << result.out;

  const auto piped = run({"sft", "preview", "--toml", "examples/sft/sft.toml"});
  ASSERT_EQ(piped.exit_code, 0) << piped.err;
  EXPECT_EQ(piped.err, "");
  EXPECT_TRUE(json::accept(piped.out)) << piped.out;
}

TEST_F(Card, SubmitOnATerminalAsksAndYesSubmits) {
  beaker_creates();
  const auto result = run_on_terminal({"sft", "submit", "--toml", "examples/sft/sft.toml"}, "y");
  ASSERT_EQ(result.exit_code, 0) << result.out;
  const auto card_at = result.out.find("single-node SFT: primebeaker-example-sft");
  const auto question_at =
      result.out.find("Submit primebeaker-example-sft to Beaker (ai2/oe-agents)? [y/N]");
  ASSERT_NE(card_at, std::string::npos) << result.out;
  ASSERT_NE(question_at, std::string::npos) << result.out;
  EXPECT_LT(card_at, question_at);
  EXPECT_TRUE(has(result.out, "\"experiment_id\": \"01FAKEEXPERIMENT0000000000\"")) << result.out;
  EXPECT_EQ(m_beaker.calls_matching({"experiment", "create"}).size(), 1u);
}

TEST_F(Card, SubmitOnATerminalAnsweredNoSubmitsNothing) {
  beaker_creates();
  for (const std::string answer : {"n", "", "maybe"}) {
    const auto result =
        run_on_terminal({"sft", "submit", "--toml", "examples/sft/sft.toml"}, answer);
    EXPECT_EQ(result.exit_code, 1) << answer << ": " << result.out;
    EXPECT_TRUE(has(result.out, "[y/N]")) << result.out;
    EXPECT_TRUE(has(result.out, "not submitted: the answer was not yes")) << result.out;
    EXPECT_FALSE(std::filesystem::exists(sft_spec_path())) << answer;
  }
  EXPECT_TRUE(m_beaker.calls_matching({"experiment", "create"}).empty());
  EXPECT_FALSE(std::filesystem::exists(mount() / "primebeaker" / "bin")) << "staged anyway";
}

TEST_F(Card, YesSubmitsOnATerminalWithoutAsking) {
  beaker_creates();
  const auto result =
      run_on_terminal({"sft", "submit", "--toml", "examples/sft/sft.toml", "--yes"}, "n");
  ASSERT_EQ(result.exit_code, 0) << result.out;
  EXPECT_FALSE(has(result.out, "[y/N]")) << result.out;
  EXPECT_TRUE(has(result.out, "single-node SFT: primebeaker-example-sft")) << result.out;
  EXPECT_EQ(m_beaker.calls_matching({"experiment", "create"}).size(), 1u);
}

// CI: stdin a pipe (even one holding "n"), stderr not a terminal: no card, no question.
TEST_F(Card, NoQuestionWhenStdinIsNotATerminal) {
  beaker_creates();
  RunOptions options;
  const auto flags = mount_flags();
  std::vector<std::string> args = {"sft", "submit"};
  args.insert(args.end(), flags.begin(), flags.end());
  args.insert(args.end(), {"--toml", "examples/sft/sft.toml"});
  options.cwd = mount();
  options.path_prepend = {m_fakes.bin()};
  options.env = {{"PRIMEBEAKER_LAUNCH_ID", "0123456789abcdef0123456789abcdef"},
                 {"PRIMEBEAKER_IMAGE_CATALOG", runtime_catalog().string()}};
  options.stdin_data = "n\n";
  const auto result = run_primebeaker(args, options);
  ASSERT_EQ(result.exit_code, 0) << result.err;
  EXPECT_TRUE(std::regex_match(result.err, staged_line())) << result.err; // no card, no question
  EXPECT_EQ(json::parse(result.out)["experiment_id"], "01FAKEEXPERIMENT0000000000");
}

// Submit asks beaker for JSON and reads the id (and a URL, when beaker gives one) from it.
TEST_F(Card, SubmitReadsTheIdAndUrlFromBeakersJson) {
  m_beaker.on(
      {"experiment", "create"},
      R"([{"id": "01JSONURL0000000000000000", "url": "https://beaker.example/ex/01JSONURL0000000000000000"}])");
  const auto result = run({"sft", "submit", "--toml", "examples/sft/sft.toml"});
  ASSERT_EQ(result.exit_code, 0) << result.err;
  const auto receipt = json::parse(result.out);
  EXPECT_EQ(receipt["experiment_id"], "01JSONURL0000000000000000");
  EXPECT_EQ(receipt["experiment_url"], "https://beaker.example/ex/01JSONURL0000000000000000");
  const auto calls = m_beaker.calls_matching({"experiment", "create"});
  ASSERT_EQ(calls.size(), 1u);
  const auto &argv = calls[0].argv;
  ASSERT_GE(argv.size(), 4u);
  EXPECT_EQ(std::vector<std::string>(argv.end() - 3, argv.end() - 1),
            (std::vector<std::string>{"--format", "json"}));
}

TEST_F(Card, TheOldTextAnswerIsStillRead) {
  m_beaker.on({"experiment", "create"}, k_created_text_stdout);
  const auto result = run({"sft", "submit", "--toml", "examples/sft/sft.toml"});
  ASSERT_EQ(result.exit_code, 0) << result.err;
  const auto receipt = json::parse(result.out);
  EXPECT_EQ(receipt["experiment_id"], "01FAKEEXPERIMENT0000000000");
  EXPECT_EQ(receipt["experiment_url"], "https://beaker.org/ex/01FAKEEXPERIMENT0000000000");
}

// A create that succeeded but names no experiment: exit 4 naming what beaker printed and the
// spec, no receipt.
TEST_F(Card, AnIdThatCannotBeFoundIsAnError) {
  for (const std::string answer : {"[]\n", "Created.\n", "[{\"name\": \"x\"}]\n"}) {
    m_beaker.clear().on({"experiment", "create"}, answer);
    const auto result = run({"sft", "submit", "--toml", "examples/sft/sft.toml"});
    EXPECT_EQ(result.exit_code, 4) << answer << result.err;
    EXPECT_EQ(result.out, "") << answer;
    const std::string printed(answer.substr(0, answer.size() - 1));
    EXPECT_TRUE(has(result.err,
                    "beaker experiment create succeeded but named no experiment id; it printed: " +
                        printed))
        << result.err;
    EXPECT_TRUE(has(result.err, "the spec it submitted: " + sft_spec_path())) << result.err;
  }
}

} // namespace
} // namespace pb::test
