// SPDX-License-Identifier: MIT
// Which image a launch runs, and so which Prime-RL reads its TOML (images/choose.hpp): known from
// the catalog or --prime-rl, never guessed from the keys; the keys only confirm it.
#include "test_support.hpp"

#include <primebeaker/core/error.hpp>
#include <primebeaker/images/catalog.hpp>
#include <primebeaker/images/choose.hpp>
#include <primebeaker/toml/value.hpp>

#include <gtest/gtest.h>

namespace pb::images {
namespace {

constexpr const char *k_fork_image = "beaker://01KZVDND2PYP538F5JSGJ469EC";
constexpr const char *k_v0_8_0_image = "ghcr.io/primeintellect-ai/prime-rl:v0.8.0";
constexpr const char *k_v0_9_image = "ghcr.io/primeintellect-ai/prime-rl:v0.8.1.dev67";

// A v0.9 TOML ([monitors.wandb], orchestrator.concurrency), a v0.8.0 one ([wandb]) with a key only
// the cataloged fork reads, one with a key only v0.8.0 reads, and one whose keys show no
// generation.
constexpr const char *k_v0_9 = "[monitors.wandb]\nproject = 'p'\n[trainer]\n[orchestrator]\n"
                               "[orchestrator.concurrency]\nmax_inflight = 4\n";
constexpr const char *k_fork = "[wandb]\nname = 'n'\n[trainer.optim]\neps = 1e-8\n[orchestrator]\n";
constexpr const char *k_v0_8_0 = "[wandb]\nname = 'n'\n[trainer]\n[orchestrator]\n"
                                 "env_server_base_port = 6000\n";
constexpr const char *k_either = "[trainer]\n[orchestrator]\nbatch_size = 8\n";

ImageChoice choose(const std::string &text,
                   const std::string &image = "",
                   const std::string &prime_rl = "",
                   const std::string &workspace = "ai2/oe-agents") {
  const auto document = toml::Document::parse(text, "t.toml");
  return choose_image(Catalog::builtin(),
                      {image, prime_rl, workspace, true, {}},
                      document,
                      primerl::ConfigRoot::rl);
}

Error error_of(const std::function<void()> &run) {
  try {
    run();
  } catch (const Error &error) {
    return error;
  }
  ADD_FAILURE() << "no error";
  return Error(1, "");
}

TEST(ChooseImage, WithoutImageTheCatalogsImageWhosePrimeRlReadsTheToml) {
  EXPECT_EQ(choose(k_v0_9).reference, k_v0_9_image);
  EXPECT_EQ(choose(k_v0_9).prime_rl.version, "v0.8.1.dev67");
  EXPECT_EQ(choose(k_v0_9).prime_rl.generation, primerl::Generation::v0_9);
  EXPECT_EQ(choose(k_fork).reference, k_fork_image);
  EXPECT_EQ(choose(k_fork).prime_rl.version, "v0.7.1.dev83");
  EXPECT_EQ(choose(k_v0_8_0).reference, k_v0_8_0_image);
  EXPECT_EQ(choose(k_either).reference, k_fork_image); // the first that reads it
  // A workspace without the fork's Beaker images: the registry images serve every workspace,
  // but a TOML only the fork reads is named as needing it (submit refuses, preview warns).
  EXPECT_EQ(choose(k_either, "", "", "ai2/other").reference, k_v0_8_0_image);
  const auto unplaced = choose(k_fork, "", "", "ai2/other");
  EXPECT_EQ(unplaced.reference, "");
  EXPECT_EQ(unplaced.missing,
            "no Prime-RL v0.7.1.dev83 image (prime_rl_training_base) is cataloged for workspace "
            "'ai2/other'");
  // --prime-rl narrows the catalog.
  EXPECT_EQ(choose(k_either, "", "v0.9").reference, k_v0_9_image);
  EXPECT_EQ(choose(k_either, "", "0.8.0").reference, k_v0_8_0_image);
}

// What an image holds decides which shapes may launch on it (docs/launch.md "What the image
// holds"): a disaggregated v0.8.0 TOML skips the fork's image (vllm-router only) for Prime-RL's
// published v0.8.0 one; --image-holds is for an uncataloged --image only, with known pieces.
TEST(ChooseImage, TheImageHoldsWhatTheShapeNeeds) {
  const std::string pd = std::string(k_either) +
                         "[deployment]\ntype = 'multi_node'\nnum_train_nodes = 1\n"
                         "[inference.deployment]\ntype = 'disaggregated'\n";
  EXPECT_EQ(choose(pd).prime_rl.version, "v0.8.0");
  const auto document = toml::Document::parse(pd, "t.toml");
  ImageRequest request{"beaker://team/mine", "v0.8.0", "ai2/oe-agents", true, {}};
  request.holds = std::vector<std::string>{"vllm-router"};
  const Error lacking = error_of(
      [&] { choose_image(Catalog::builtin(), request, document, primerl::ConfigRoot::rl); });
  EXPECT_EQ(lacking.code(), 3);
  EXPECT_NE(
      std::string(lacking.what())
          .find("needs nixl, which image beaker://team/mine does not hold (it holds vllm-router)"),
      std::string::npos)
      << lacking.what();
  request.holds = std::vector<std::string>{"vllm-router", "nixl", "deepep"};
  EXPECT_EQ(choose_image(Catalog::builtin(), request, document, primerl::ConfigRoot::rl).holds,
            *request.holds);
  request.holds = std::vector<std::string>{"nixl-from-pypi"};
  const Error unknown = error_of(
      [&] { choose_image(Catalog::builtin(), request, document, primerl::ConfigRoot::rl); });
  EXPECT_EQ(unknown.code(), 2);
  EXPECT_NE(std::string(unknown.what()).find("--image-holds: unknown piece 'nixl-from-pypi'"),
            std::string::npos);
  request.image.clear();
  request.holds = std::vector<std::string>{"nixl"};
  EXPECT_EQ(error_of([&] {
              choose_image(Catalog::builtin(), request, document, primerl::ConfigRoot::rl);
            }).code(),
            2);
}

TEST(ChooseImage, ACatalogedImageSaysItsPrimeRl) {
  const auto fork = choose(k_fork, k_fork_image);
  EXPECT_EQ(fork.prime_rl.version, "v0.7.1.dev83");
  EXPECT_EQ(fork.name, "goncalof/prime-rl-v071dev83-qwen35-renderer-eval-inflight");
  EXPECT_EQ(fork.role, "prime_rl_training_base");
  // By name too, and the registry image by its reference.
  EXPECT_EQ(choose(k_fork, "beaker://goncalof/prime-rl-v071dev83-qwen35-renderer-eval-inflight")
                .reference,
            k_fork_image);
  EXPECT_EQ(choose(k_v0_9, k_v0_9_image).prime_rl.generation, primerl::Generation::v0_9);
}

TEST(ChooseImage, AnImageTheCatalogDoesNotKnowNeedsPrimeRl) {
  const Error unknown = error_of([] { choose(k_either, "beaker://01ABC"); });
  EXPECT_EQ(unknown.code(), 2);
  EXPECT_EQ(std::string(unknown.what()),
            "--image beaker://01ABC is not in the image catalog, so primebeaker cannot know which "
            "Prime-RL reads the TOML: add --prime-rl VERSION (one of v0.7.1.dev83, v0.8.0, "
            "v0.8.1.dev67 (v0.9))");
  const auto given = choose(k_either, "beaker://01ABC", "v0.8.0");
  EXPECT_EQ(given.reference, "beaker://01ABC");
  EXPECT_EQ(given.prime_rl.schema, primerl::SchemaRelease::v0_8_0);
  EXPECT_EQ(error_of([] { choose(k_either, "beaker://01ABC", "v0.7.0"); }).code(), 2);
  // --prime-rl that the catalog contradicts.
  const Error contradicted = error_of([] { choose(k_fork, k_fork_image, "v0.8.0"); });
  EXPECT_EQ(contradicted.code(), 2);
  EXPECT_NE(std::string(contradicted.what()).find("holds Prime-RL v0.7.1.dev83"),
            std::string::npos);
}

TEST(ChooseImage, ATomlOfTheOtherGenerationIsRefusedInOneLine) {
  const Error error = error_of([] { choose(k_v0_9, k_fork_image); });
  EXPECT_EQ(error.code(), 3);
  EXPECT_EQ(std::string(error.what()),
            "t.toml: this TOML is written for Prime-RL v0.9 ([monitors] at t.toml:1:1), but image "
            "goncalof/prime-rl-v071dev83-qwen35-renderer-eval-inflight holds Prime-RL "
            "v0.7.1.dev83: use --image ghcr.io/primeintellect-ai/prime-rl:v0.8.1.dev67 (Prime-RL "
            "v0.8.1.dev67 (v0.9))");
  EXPECT_TRUE(error.context().empty());
  EXPECT_EQ(error_of([] { choose(k_fork, k_v0_9_image); }).code(), 3);
  EXPECT_EQ(error_of([] { choose(k_v0_9, "", "v0.8.0"); }).code(), 3);
}

TEST(ChooseImage, ImagesDefaultPrintsTheImageATomlGets) {
  test::TempDir dir;
  test::write_file(dir / "v09.toml", k_v0_9);
  test::write_file(dir / "fork.toml", k_fork);
  auto run = [&](const std::string &file, std::vector<std::string> extra = {}) {
    std::vector<std::string> args = {"images", "default", "--toml", (dir / file).string()};
    args.insert(args.end(), extra.begin(), extra.end());
    return test::run_primebeaker(args);
  };
  EXPECT_EQ(run("v09.toml").out, std::string(k_v0_9_image) + "\n");
  EXPECT_EQ(run("fork.toml").out, std::string(k_fork_image) + "\n");
  EXPECT_EQ(run("fork.toml", {"--workspace", "ai2/oe-agents-holmes"}).out,
            "beaker://01M0E15WYCV7T0J1CMCFPBQ21P\n");
  const auto refused = run("v09.toml", {"--prime-rl", "v0.8.0"});
  EXPECT_EQ(refused.exit_code, 3);
  EXPECT_EQ(refused.out, "");
}

} // namespace
} // namespace pb::images
