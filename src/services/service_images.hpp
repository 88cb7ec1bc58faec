// SPDX-License-Identifier: MIT
// `services images install` (docs/services.md): build LiteRegistry's images at the
// exact installed launcher version and publish them as Beaker images.
#pragma once

#include <primebeaker/core/command_tree.hpp>
#include <primebeaker/core/json.hpp>
#include <primebeaker/core/process.hpp>
#include <primebeaker/services/launcher.hpp>

#include <filesystem>
#include <iosfwd>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace pb::services {

struct ImagesInstallOptions {
  std::string workspace;
  std::string stack = "all";
  std::string docker_bin = "docker";
  bool pull_bases = true;
  std::optional<std::string> source_root;
  bool build_local_search = false;
  std::optional<std::string> jtc_build_context;
  std::optional<std::string> python;
};

// One image a stack publishes: the launcher field it fills and the local image name.
struct StackImage {
  std::string launcher_arg;
  std::string local_name;
};

struct StackBuild {
  Stack stack = Stack::base;
  std::vector<StackImage> images; // in publication order
  bool build_local_search = false;
};

// Everything `images install` will do, decided before any command runs.
struct ImagesPlan {
  std::string workspace;
  std::string docker_bin;
  std::string beaker_bin;
  std::string python;
  bool pull_bases = true;
  std::optional<std::filesystem::path> source_root;       // absolute
  std::optional<std::filesystem::path> jtc_build_context; // absolute
  std::vector<StackBuild> stacks;
};

// Validates the options in Python PrimeBeaker's order and resolves paths against `cwd`.
// Throws pb::Error (exit 2) before anything runs. Pure.
ImagesPlan make_images_plan(const ImagesInstallOptions &options,
                            const std::map<std::string, std::string> &env,
                            const std::filesystem::path &cwd);

// The Beaker image name for a local image: "<local>-<v>" with '.' and '+' as '-', except Redis,
// which carries the stack ("literegistry-redis-podman-0-2-13"). Pure.
std::string
beaker_image_name(Stack stack, const std::string &local_name, const std::string &version);

// The first non-empty id/image_id/imageId string, depth first (keys before nested values). Pure.
std::optional<std::string> find_image_id(const OrderedJson &value);

// Runs the plan: checks docker and beaker, then per stack finds the source (pip sdist or
// --source-root), runs its scripts/build-images.sh, and publishes each image. Progress goes to
// `progress`; build output streams to stderr. Returns the result JSON (launcher_args per stack).
OrderedJson execute_images_plan(const ImagesPlan &plan,
                                proc::Runner &runner,
                                LiteRegistry &literegistry,
                                const std::string &path_list,
                                std::ostream &progress);

void register_images_command(cli::CommandTree &tree);

} // namespace pb::services
