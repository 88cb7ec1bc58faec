// SPDX-License-Identifier: MIT
// Every command examples/README.md documents previews exactly as written, from a fresh copy of
// examples/, offline: no beaker call, nothing written, built-in catalog (no runtime image).
#include "../services/fake_literegistry.hpp"
#include "test_support.hpp"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

namespace pb::test {
namespace {

// The shell lines of the README's first code block after "previews offline", continuations
// joined.
std::vector<std::string> documented_commands() {
  const std::string readme = read_file(source_dir() / "examples" / "README.md");
  const size_t intro = readme.find("previews offline");
  const size_t open = readme.find("```\n", intro);
  const size_t close = readme.find("```", open + 4);
  const std::string block = readme.substr(open + 4, close - open - 4);
  std::vector<std::string> commands;
  std::string current;
  size_t start = 0;
  for (size_t end = block.find('\n'); end != std::string::npos; end = block.find('\n', start)) {
    std::string line = block.substr(start, end - start);
    start = end + 1;
    const bool continued = !line.empty() && line.back() == '\\';
    if (continued) {
      line.pop_back();
    }
    current += line;
    if (!continued) {
      commands.push_back(current);
      current.clear();
    }
  }
  return commands;
}

// Shell words of `command` (double quotes only, which is all the README uses), "$PWD" expanded.
std::vector<std::string> words(const std::string &command, const std::string &pwd) {
  std::vector<std::string> out;
  std::string word;
  bool quoted = false;
  bool any = false;
  for (size_t i = 0; i < command.size(); ++i) {
    const char c = command[i];
    if (c == '"') {
      quoted = !quoted;
      any = true;
    } else if (c == '$' && command.compare(i, 4, "$PWD") == 0) {
      word += pwd;
      i += 3;
      any = true;
    } else if (c == ' ' && !quoted) {
      if (any) {
        out.push_back(word);
      }
      word.clear();
      any = false;
    } else {
      word += c;
      any = true;
    }
  }
  if (any) {
    out.push_back(word);
  }
  return out;
}

TEST(Examples, EveryDocumentedPreviewCommandRunsAsWritten) {
  TempDir dir;
  const auto repo = dir / "clone";
  std::filesystem::create_directories(repo);
  std::filesystem::copy(
      source_dir() / "examples", repo / "examples", std::filesystem::copy_options::recursive);
  write_fake_literegistry(dir / "py");
  FakeBin fakes(dir / "fakes");
  FakeBeaker beaker(fakes); // no rules: any call would be recorded and fail
  const std::string before = tree_digest(repo);

  const auto commands = documented_commands();
  ASSERT_EQ(commands.size(), 8u);
  for (const auto &command : commands) {
    auto argv = words(command, repo.string());
    RunOptions options;
    options.cwd = repo;
    options.path_prepend = {fakes.bin()};
    options.env = {{"PYTHONPATH", (dir / "py").string()}};
    while (!argv.empty() && argv.front().find('=') != std::string::npos) {
      const auto eq = argv.front().find('=');
      options.env[argv.front().substr(0, eq)] = argv.front().substr(eq + 1);
      argv.erase(argv.begin());
    }
    ASSERT_EQ(argv.front(), "primebeaker") << command;
    argv.erase(argv.begin());
    const auto result = run_primebeaker(argv, options);
    ASSERT_EQ(result.exit_code, 0) << command << "\n" << result.err;
    const auto out = nlohmann::json::parse(result.out);
    EXPECT_TRUE(out.contains("spec") || (out.contains("rl") && out["rl"].contains("spec")))
        << command;
    // A fresh clone launches the staged binary on the cataloged Prime-RL image: nothing to build,
    // so nothing for submit to refuse (docs/staging.md).
    EXPECT_EQ(result.err.find("would refuse"), std::string::npos) << command << result.err;
  }
  EXPECT_TRUE(beaker.calls().empty());
  EXPECT_EQ(tree_digest(repo), before) << "a preview wrote into the clone";
}

} // namespace
} // namespace pb::test
