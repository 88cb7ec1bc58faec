// SPDX-License-Identifier: MIT
// The shared corpus, read in place: every primebeaker example previews with the shape its
// deployment.type asks for; every Prime-RL TOML previews or fails with one specific line.
#include "launch_fixture.hpp"

#include <regex>

using nlohmann::json;

namespace pb::test {
namespace {

std::vector<std::filesystem::path> tomls_in(const std::filesystem::path &dir) {
  std::vector<std::filesystem::path> files;
  for (const auto &entry : std::filesystem::directory_iterator(dir)) {
    if (entry.path().extension() == ".toml") {
      files.push_back(entry.path());
    }
  }
  std::sort(files.begin(), files.end());
  return files;
}

// The corpus holds absolute /weka/... paths and lives outside any mount, so "/" is the mount.
RunResult preview_in_place(const std::string &program, const std::filesystem::path &toml) {
  RunOptions options;
  options.cwd = std::filesystem::temp_directory_path();
  options.env = {{"PRIMEBEAKER_LAUNCH_ID", "corpus"}};
  std::vector<std::string> args = {
      program, "preview", "--toml", toml.string(), "--mount-path", "/"};
  if (program == "rl") {
    args.insert(args.end(), {"--registry", "redis://registry:6379"});
  }
  return run_primebeaker(args, options);
}

TEST(Corpus, PrimebeakerExamplesPreviewWithTheirShape) {
  const auto files = tomls_in(shared_dir() / "corpus" / "primebeaker-examples");
  ASSERT_EQ(files.size(), 5u);
  for (const auto &file : files) {
    const std::string name = file.filename().string();
    const bool sft = name.find("sft") != std::string::npos;
    const auto result = preview_in_place(sft ? "sft" : "rl", file);
    ASSERT_EQ(result.exit_code, 0) << name << ": " << result.err;
    const auto out = json::parse(result.out);
    const auto &task = out["spec"]["tasks"][0];
    const bool multi = read_file(file).find("type = \"multi_node\"") != std::string::npos;
    EXPECT_EQ(task.contains("replicas"), multi) << name;
    EXPECT_EQ(out.contains("launch_id"), multi) << name;
    if (multi) {
      EXPECT_EQ(task["name"], "prime-rl-multinode") << name;
      EXPECT_EQ(task["context"]["autoResume"], false);
    } else {
      EXPECT_EQ(task["name"], sft ? "sft" : "rl") << name;
    }
  }
}

TEST(Corpus, PrimebeakerExampleFiguresMatchTheSpec) {
  const auto dir = shared_dir() / "corpus" / "primebeaker-examples";
  const auto env = [](const json &out, const std::string &name) {
    for (const auto &e : out["spec"]["tasks"][0]["envVars"]) {
      if (e["name"] == name) {
        return e["value"].get<std::string>();
      }
    }
    return std::string("<absent>");
  };
  auto out =
      json::parse(preview_in_place("rl", dir / "examples-podman-terminal-multinode-rl.toml").out);
  EXPECT_EQ(out["spec"]["tasks"][0]["replicas"], 2);
  EXPECT_EQ(env(out, "TOTAL_INFER_RANKS"), "8");
  EXPECT_EQ(env(out, "MIXED_INFER_GPU_COUNT"), "0");
  out = json::parse(
      preview_in_place("rl", dir / "examples-search-agent-webterminal-multinode-rl.toml").out);
  EXPECT_EQ(out["spec"]["tasks"][0]["replicas"], 4);
  EXPECT_EQ(env(out, "TOTAL_INFER_RANKS"), "24");
  EXPECT_EQ(env(out, "LOCAL_SEARCH_MODEL_PATHS_JSON"), R"(["localsearch:bc-rl-v1"])");
  out = json::parse(preview_in_place("rl", dir / "examples-rl-config.toml").out);
  EXPECT_EQ(out["spec"]["tasks"][0]["resources"]["gpuCount"], 2);
  out = json::parse(preview_in_place("sft", dir / "examples-sft-config.toml").out);
  EXPECT_EQ(out["spec"]["tasks"][0]["resources"]["gpuCount"], 2);
}

TEST(Corpus, PrimeRlTomlsPreviewOrNameEveryProblem) {
  const auto files = tomls_in(shared_dir() / "corpus" / "prime-rl");
  ASSERT_GE(files.size(), 20u);
  // One line naming the generation or a key, or "N problems" and then N such lines.
  const std::regex generation("^primebeaker: error: .*\\.toml: this is a Prime-RL "
                              "(v0\\.2-v0\\.4|v0\\.5|v0\\.6-v0\\.7|post-v0\\.8\\.0) config "
                              "\\(.+ at .+\\.toml:[0-9]+:[0-9]+\\).*");
  const std::regex summary("^primebeaker: error: .*\\.toml: ([0-9]+) problems .*");
  const std::regex problem("^(primebeaker: error: |  ).*\\.toml(:[0-9]+:[0-9]+)?: .*"
                           "(\\[[a-z_.]+\\]|[a-z_]+\\.[a-z_.]+|output_dir|mounted path).*");
  for (const auto &file : files) {
    const std::string name = file.filename().string();
    const std::string program = name.find("sft") != std::string::npos ? "sft" : "rl";
    const auto result = preview_in_place(program, file);
    if (result.exit_code == 0) {
      EXPECT_TRUE(json::parse(result.out).contains("spec")) << name;
      continue;
    }
    EXPECT_EQ(result.exit_code, 3) << name << ": " << result.err;
    EXPECT_EQ(result.out, "") << name;
    std::vector<std::string> lines = lines_of(result.err);
    ASSERT_FALSE(lines.empty()) << name;
    if (std::regex_match(lines[0], generation)) {
      EXPECT_EQ(lines.size(), 1u) << name << ": " << result.err;
      continue;
    }
    std::smatch match;
    size_t count = 1;
    size_t first = 0;
    if (std::regex_match(lines[0], match, summary)) {
      count = std::stoul(match[1].str());
      first = 1;
    }
    ASSERT_GE(lines.size(), first + count) << name << ": " << result.err;
    for (size_t i = first; i < first + count; ++i) {
      EXPECT_TRUE(std::regex_match(lines[i], problem)) << name << ": " << lines[i];
    }
  }
}

} // namespace
} // namespace pb::test
