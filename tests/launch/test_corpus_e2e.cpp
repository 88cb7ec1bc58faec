// SPDX-License-Identifier: MIT
// The shared corpus, read in place: every primebeaker example previews with the shape its
// deployment.type asks for; every Prime-RL TOML previews or fails with one specific line.
#include "launch_fixture.hpp"

#include <primebeaker/primerl/pieces.hpp>
#include <primebeaker/primerl/release.hpp>
#include <primebeaker/toml/edit.hpp>
#include <primebeaker/toml/value.hpp>

#include <fmt/format.h>

#include <regex>
#include <set>

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
  const std::regex component("^primebeaker: error: .*\\.toml: this is a Prime-RL .+ "
                             "(inference|trainer|orchestrator) config .*, not an (rl|sft) one: .*");
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
    if (std::regex_match(lines[0], generation) || std::regex_match(lines[0], component)) {
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

// Issue 27: a misspelt key, a wrong type and a value Prime-RL does not allow, planted in every
// v0.8.0 corpus TOML and reference example, are each named at FILE:LINE:COL in one preview
// (beside whatever "add this" keys the file lacks), and by `toml check --prime-rl`.
TEST(Corpus, PrimeRlWouldRefuseIsNamedAtPreviewInOneRun) {
  struct Plant {
    std::string key, literal;
    bool at_key; // an unknown key is located at the key, the others at the value
  };
  std::vector<std::filesystem::path> files;
  for (const auto &file : tomls_in(shared_dir() / "corpus" / "prime-rl")) {
    if (file.filename().string().rfind("v0.8.0-", 0) == 0) {
      files.push_back(file);
    }
  }
  for (const auto &file : tomls_in(shared_dir() / "corpus" / "primebeaker-examples")) {
    files.push_back(file);
  }
  ASSERT_EQ(files.size(), 11u);
  TempDir dir;
  for (const auto &file : files) {
    const std::string name = file.filename().string();
    std::string text = read_file(file);
    const bool sft = text.find("[orchestrator]") == std::string::npos &&
                     text.find("[data]") != std::string::npos;
    const std::vector<Plant> plants =
        sft ? std::vector<Plant>{{"max_stesp", "10", true},
                                 {"data.batch_size", "\"lots\"", false},
                                 {"matmul_precision", "\"ultra\"", false}}
            : std::vector<Plant>{{"max_stesp", "10", true},
                                 {"orchestrator.batch_size", "\"lots\"", false},
                                 {"trainer.model.impl", "\"fast\"", false}};
    toml::Editor editor(toml::Document::parse(text, name));
    for (const auto &plant : plants) {
      editor.set(plant.key, plant.literal);
    }
    const auto copy = dir.path() / name;
    write_file(copy, editor.text());
    // Where each one is, found without the checker: the value's position, or the key on its line.
    const auto document = toml::Document::load(copy);
    std::vector<std::string> want;
    for (const auto &plant : plants) {
      const auto at = toml::lookup(document, toml::KeyPath::parse(plant.key)).at(0)->position();
      const auto line = lines_of(editor.text()).at(at.line - 1);
      const auto column = plant.at_key ? line.find(plant.key) + 1 : at.column;
      want.push_back(fmt::format("{}:{}:{}: ", copy.string(), at.line, column));
    }
    const auto preview = preview_in_place(sft ? "sft" : "rl", copy);
    EXPECT_EQ(preview.exit_code, 3) << name << "\n" << preview.err;
    for (const auto &location : want) {
      EXPECT_NE(preview.err.find(location), std::string::npos)
          << name << ": preview does not name " << location << "\n"
          << preview.err;
    }
    const auto check = run_primebeaker({"toml", "check", "--prime-rl", copy.string()});
    EXPECT_EQ(check.exit_code, 3) << name << "\n" << check.err;
    // Each mistake, then the line naming the reading (release and entrypoint).
    EXPECT_EQ(lines_of(check.err).size(), plants.size() + 1) << name << "\n" << check.err;
    for (const auto &location : want) {
      EXPECT_NE(check.err.find(location), std::string::npos)
          << name << ": toml check does not name " << location << "\n"
          << check.err;
    }
    // The unedited file: nothing for Prime-RL to refuse.
    const auto clean = run_primebeaker({"toml", "check", "--prime-rl", file.string()});
    EXPECT_EQ(clean.exit_code, 0) << name << "\n" << clean.err;
  }
}

// Issue 36: Prime-RL's own rl/sft TOMLs (configs/ and examples/ at v0.8.0 and 559b4477) preview
// as they are, with Prime-RL's defaults taken, on the image whose Prime-RL reads them; the shapes
// primebeaker does not place are refused in one line at their key, never with a value that
// would change the experiment.
TEST(Corpus, PrimeRlsOwnTomlsLaunchAsTheyAre) {
  const auto root = shared_dir() / "corpus" / "prime-rl-repo";
  // What is refused, and the line that says why.
  // llm-d's router needs llm-d's programs, which no cataloged image holds (Prime-RL's published
  // images do not): refused in one line naming the piece (docs/launch.md "What the image holds").
  const std::map<std::string, std::string> refused = {
      {"main-559b4477/examples/advanced/glm-5.2/swe-llmd.toml",
       "the llm-d router (inference.router.type) needs llm-d, which image"},
      {"v0.8.0/examples/advanced/glm-5.2/swe-llmd.toml",
       "the llm-d router (inference.router.type) needs llm-d, which image"},
  };
  // Placed as Prime-RL's own launcher places them (docs/launch.md "Placements"); before, these
  // were refused (several trainer nodes, EP, a trainer node tp could not share).
  const std::set<std::string> prime_rl_placement = {
      "v0.8.0/examples/advanced/glm-4.5-air/search.toml",
      "v0.8.0/examples/advanced/glm-4.5-air/swe.toml",
      "v0.8.0/examples/advanced/glm-4.5-air/terminal.toml",
      "v0.8.0/examples/advanced/intellect-3.1/rl.toml",
      "v0.8.0/examples/advanced/minimax-m2.5/swe.toml",
      "v0.8.0/examples/advanced/nemotron-3-super/swe.toml",
      "v0.8.0/examples/advanced/qwen3-30b-a3b/math.toml",
      "v0.8.0/examples/advanced/qwen3-30b-a3b/swe.toml",
      "v0.8.0/examples/advanced/qwen3-30b-a3b/tool.toml",
      "main-559b4477/examples/advanced/nemotron-3-super/swe.toml",
      "main-559b4477/examples/advanced/glm-5.2/swe.toml",
      "v0.8.0/examples/advanced/glm-5.2/swe.toml",
  };
  std::size_t placed = 0, llmd_placed = 0;
  std::size_t previewed = 0, refusals = 0;
  std::map<std::string, int> images;
  for (const auto &entry : std::filesystem::recursive_directory_iterator(root)) {
    const std::string name = std::filesystem::relative(entry.path(), root).string();
    if (entry.path().extension() != ".toml" || name.find("/k8s/") != std::string::npos) {
      continue;
    }
    const auto document = toml::Document::load(entry.path());
    const auto reading = primerl::read_prime_rl_file(document, std::nullopt, std::nullopt);
    if (reading.root != primerl::ConfigRoot::rl && reading.root != primerl::ConfigRoot::sft) {
      continue;
    }
    const std::string program = reading.root == primerl::ConfigRoot::sft ? "sft" : "rl";
    RunOptions options;
    options.cwd = std::filesystem::temp_directory_path();
    options.env = {{"PRIMEBEAKER_LAUNCH_ID", "corpus"}};
    std::vector<std::string> args = {
        program, "preview", "--toml", entry.path().string(), "--mount-path", "/", "--card"};
    const bool multi = read_file(entry.path()).find("multi_node") != std::string::npos;
    if (program == "rl" && multi && reading.prime_rl.generation == primerl::Generation::v0_8) {
      args.insert(args.end(), {"--registry", "redis://registry:6379"});
    }
    const auto result = run_primebeaker(args, options);
    const auto why = refused.find(name);
    if (why == refused.end()) {
      EXPECT_EQ(result.exit_code, 0) << name << ":\n" << result.err;
      if (prime_rl_placement.count(name) > 0) {
        // v0.8.0's card says which placement; v0.9 has only Prime-RL's.
        EXPECT_TRUE(name.rfind("main-", 0) == 0 ||
                    result.out.find("Prime-RL's placement") != std::string::npos)
            << name << ":\n"
            << result.out;
        ++placed;
      }
      // The card names the Prime-RL that reads it, the one `toml check` found, unless that
      // image (the fork's) lacks a piece the shape needs: then Prime-RL's published v0.8.0.
      std::string expected = reading.prime_rl.version;
      const auto needed = primerl::pieces_needed(document);
      if (expected == "v0.7.1.dev83" &&
          std::any_of(needed.begin(), needed.end(), [](const auto &piece) {
            return piece.piece != primerl::k_piece_vllm_router;
          })) {
        expected = "v0.8.0";
      }
      const auto line = result.out.find("  Prime-RL   " + expected);
      EXPECT_NE(line, std::string::npos) << name << ":\n" << result.out;
      ++images[expected];
      ++previewed;
      continue;
    }
    EXPECT_EQ(result.exit_code, 3) << name;
    const auto lines = lines_of(result.err);
    ASSERT_FALSE(lines.empty()) << name;
    // One line, or "N problems" whose lines all name a shape primebeaker does not place.
    EXPECT_NE(result.err.find(why->second), std::string::npos) << name << ":\n" << result.err;
    EXPECT_EQ(result.err.find("replaces the current value"), std::string::npos)
        << name << ": suggests a value that changes the experiment\n"
        << result.err;
    EXPECT_EQ(lines.size(), 1u) << name << ":\n" << result.err;
    ++refusals;
    // On an image that holds llm-d and Mooncake, the same file is placed (docs/node.md).
    auto held = args;
    held.insert(held.end(),
                {"--image",
                 "beaker://team/llmd",
                 "--prime-rl",
                 reading.prime_rl.version,
                 "--image-holds",
                 "vllm-router,deepep,nixl,llm-d,mooncake"});
    const auto on_llmd_image = run_primebeaker(held, options);
    EXPECT_EQ(on_llmd_image.exit_code, 0) << name << ":\n" << on_llmd_image.err;
    EXPECT_NE(on_llmd_image.out.find("llm-d's router (epp + Envoy) on the router port"),
              std::string::npos)
        << name << ":\n"
        << on_llmd_image.out;
    EXPECT_NE(on_llmd_image.out.find("KV offload: Mooncake's shared store"), std::string::npos)
        << name;
    ++llmd_placed;
  }
  EXPECT_EQ(llmd_placed, 2u);
  for (const auto &[version, count] : images) {
    std::cout << "[ corpus ] previewed on Prime-RL " << version << ": " << count << "\n";
  }
  EXPECT_EQ(refusals, refused.size());
  EXPECT_EQ(placed, prime_rl_placement.size());
  EXPECT_GE(previewed, 100u);
}

// A v0.9 TOML on an image holding Prime-RL v0.7.1.dev83 is refused at preview in one line; the
// same TOML without --image gets the v0.9 image, and the card says so.
TEST(Corpus, TheImageAndTheTomlCannotDisagreeUnseen) {
  const auto wordle = shared_dir() / "corpus" / "prime-rl-repo" / "main-559b4477" / "examples" /
                      "basic" / "wordle" / "rl.toml";
  RunOptions options;
  options.cwd = std::filesystem::temp_directory_path();
  options.env = {{"PRIMEBEAKER_LAUNCH_ID", "corpus"}};
  const auto refused = run_primebeaker({"rl",
                                        "preview",
                                        "--toml",
                                        wordle.string(),
                                        "--mount-path",
                                        "/",
                                        "--image",
                                        "beaker://01KZVDND2PYP538F5JSGJ469EC"},
                                       options);
  EXPECT_EQ(refused.exit_code, 3);
  EXPECT_EQ(refused.out, "");
  ASSERT_EQ(lines_of(refused.err).size(), 1u) << refused.err;
  EXPECT_NE(refused.err.find("this TOML is written for Prime-RL v0.9"), std::string::npos);
  EXPECT_NE(refused.err.find("holds Prime-RL v0.7.1.dev83: use --image "
                             "ghcr.io/primeintellect-ai/prime-rl:v0.8.1.dev67"),
            std::string::npos)
      << refused.err;
  const auto chosen =
      run_primebeaker({"rl", "preview", "--toml", wordle.string(), "--mount-path", "/"}, options);
  ASSERT_EQ(chosen.exit_code, 0) << chosen.err;
  const auto spec = json::parse(chosen.out)["spec"]["tasks"][0];
  EXPECT_EQ(spec["image"]["docker"], "ghcr.io/primeintellect-ai/prime-rl:v0.8.1.dev67");
  bool version = false;
  for (const auto &env : spec["envVars"]) {
    version = version || (env["name"] == "PRIME_RL_VERSION" && env["value"] == "v0.8.1.dev67");
  }
  EXPECT_TRUE(version) << spec.dump();
  const auto card = run_primebeaker(
      {"rl", "preview", "--toml", wordle.string(), "--mount-path", "/", "--card"}, options);
  EXPECT_NE(card.out.find("  Prime-RL   v0.8.1.dev67, v0.9 generation "
                          "(ghcr.io/primeintellect-ai/prime-rl:v0.8.1.dev67)\n"),
            std::string::npos)
      << card.out;
  // `toml check --prime-rl VERSION FILE`: read as that release only.
  EXPECT_EQ(run_primebeaker({"toml", "check", "--prime-rl", "v0.9", wordle.string()}).exit_code, 0);
  const auto as_v0_8_0 =
      run_primebeaker({"toml", "check", "--prime-rl", "v0.8.0", wordle.string()});
  EXPECT_EQ(as_v0_8_0.exit_code, 3) << as_v0_8_0.err;
  EXPECT_NE(as_v0_8_0.err.find("read as Prime-RL v0.8.0's `rl` entrypoint"), std::string::npos)
      << as_v0_8_0.err;
  // An image the catalog does not know needs --prime-rl.
  const auto unknown = run_primebeaker(
      {"rl", "preview", "--toml", wordle.string(), "--mount-path", "/", "--image", "my/img:1"},
      options);
  EXPECT_EQ(unknown.exit_code, 2);
  EXPECT_NE(unknown.err.find("add --prime-rl VERSION"), std::string::npos) << unknown.err;
  EXPECT_EQ(run_primebeaker({"rl",
                             "preview",
                             "--toml",
                             wordle.string(),
                             "--mount-path",
                             "/",
                             "--image",
                             "my/img:1",
                             "--prime-rl",
                             "v0.9"},
                            options)
                .exit_code,
            0);
}

} // namespace
} // namespace pb::test
