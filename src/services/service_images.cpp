// SPDX-License-Identifier: MIT
#include "service_images.hpp"

#include <primebeaker/beaker/client.hpp>
#include <primebeaker/core/env.hpp>
#include <primebeaker/core/error.hpp>
#include <primebeaker/core/text.hpp>

#include <fmt/format.h>

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <iostream>

namespace pb::services {
namespace {

std::string trailing(const std::string &text) {
  auto lines = text::split(text, '\n');
  while (!lines.empty() && text::trim(lines.back()).empty()) {
    lines.pop_back();
  }
  if (lines.size() > 6) {
    lines.erase(lines.begin(), lines.end() - 6);
  }
  return text::join(lines, "\n");
}

// While alive, our stdout file descriptor points at stderr, so a child that inherits it (a
// build streaming its progress) cannot mix its output into the JSON result on stdout.
class StdoutToStderr {
public:
  StdoutToStderr() {
    std::cout.flush();
    std::fflush(stdout);
    m_saved = ::dup(STDOUT_FILENO);
    if (m_saved >= 0) {
      ::dup2(STDERR_FILENO, STDOUT_FILENO);
    }
  }
  ~StdoutToStderr() {
    if (m_saved >= 0) {
      ::dup2(m_saved, STDOUT_FILENO);
      ::close(m_saved);
    }
  }
  StdoutToStderr(const StdoutToStderr &) = delete;
  StdoutToStderr &operator=(const StdoutToStderr &) = delete;

private:
  int m_saved = -1;
};

// A private temporary directory, removed with everything in it.
class ScratchDir {
public:
  ScratchDir() {
    std::string pattern =
        (std::filesystem::temp_directory_path() / "primebeaker-literegistry-images-XXXXXX")
            .string();
    if (::mkdtemp(pattern.data()) == nullptr) {
      throw failure("cannot create a temporary directory for the image build");
    }
    m_path = pattern;
  }
  ~ScratchDir() {
    std::error_code ec;
    std::filesystem::remove_all(m_path, ec);
  }
  ScratchDir(const ScratchDir &) = delete;
  ScratchDir &operator=(const ScratchDir &) = delete;
  const std::filesystem::path &path() const { return m_path; }

private:
  std::filesystem::path m_path;
};

proc::Result run_checked(proc::Runner &runner, const proc::Command &command) {
  auto result = runner.run(command);
  if (!result.ok()) {
    Error error = tool_error(
        fmt::format("{} failed ({})", proc::argv_to_json(command.argv), result.status()));
    if (const auto tail = trailing(result.err.empty() ? result.out : result.err); !tail.empty()) {
      error.add_context(tail);
    }
    throw error;
  }
  return result;
}

proc::Command argv_command(proc::Argv argv) {
  proc::Command command;
  command.argv = std::move(argv);
  return command;
}

proc::Result run_streaming(proc::Runner &runner, proc::Command command) {
  command.capture_stdout = false;
  command.capture_stderr = false;
  StdoutToStderr guard;
  return run_checked(runner, command);
}

StackBuild stack_build(Stack stack, bool local_search) {
  StackBuild build;
  build.stack = stack;
  if (stack == Stack::base) {
    build.images = {{"redis_image", "literegistry-redis"},
                    {"services_image", "literegistry-base-services"},
                    {"terminal_image", "literegistry-base-terminal"},
                    {"vllm_image", "literegistry-base-vllm"}};
    if (local_search) {
      build.images.push_back({"local_search_image", "jtc-local-search-lucene-bm25"});
      build.build_local_search = true;
    }
  } else {
    build.images = {{"redis_image", "literegistry-redis"},
                    {"gateway_image", "literegistry-podman-gateway"},
                    {"podman_image", "literegistry-podman-server"},
                    {"docker_mirror_image", "literegistry-docker-mirror"}};
  }
  return build;
}

std::string source_directory_name(Stack stack) {
  return stack == Stack::base ? "literegistry_base_deployment" : "literegistry_podman_beaker";
}

std::filesystem::path find_source_root(const std::filesystem::path &root, Stack stack) {
  const std::string name = source_directory_name(stack);
  std::vector<std::filesystem::path> candidates;
  if (root.filename() == name) {
    candidates.push_back(root);
  }
  candidates.push_back(root / name);
  for (const auto &candidate : candidates) {
    std::error_code ec;
    if (std::filesystem::is_regular_file(candidate / "scripts" / "build-images.sh", ec)) {
      return candidate;
    }
  }
  throw input_error(
      fmt::format("could not find {}/scripts/build-images.sh under {}", name, root.string()));
}

std::filesystem::path download_source(const StackInfo &info,
                                      const std::string &version,
                                      const std::filesystem::path &stack_dir,
                                      proc::Runner &runner,
                                      LiteRegistry &literegistry,
                                      const std::string &path_list,
                                      std::ostream &progress) {
  if (!proc::find_executable("pip", path_list)) {
    throw tool_error("required executable was not found: pip")
        .add_context("pip downloads the LiteRegistry source; or pass --source-root with a "
                     "LiteRegistry checkout");
  }
  const auto download = stack_dir / "download";
  std::filesystem::create_directories(download);
  progress << fmt::format("services images: {}: downloading {}=={} source\n",
                          info.name,
                          info.distribution,
                          version)
           << std::flush;
  proc::Command pip;
  pip.argv = {"pip",
              "download",
              "--no-deps",
              "--no-binary",
              ":all:",
              "--dest",
              download.string(),
              fmt::format("{}=={}", info.distribution, version)};
  run_streaming(runner, pip);
  std::vector<std::filesystem::path> archives;
  for (const auto &entry : std::filesystem::directory_iterator(download)) {
    if (entry.is_regular_file() && entry.path().filename().string().ends_with(".tar.gz")) {
      archives.push_back(entry.path());
    }
  }
  if (archives.size() != 1) {
    throw failure(fmt::format(
        "expected one source archive for {}, found {}", info.distribution, archives.size()));
  }
  return literegistry.unpack_source_archive(archives.front(), stack_dir / "source");
}

} // namespace

ImagesPlan make_images_plan(const ImagesInstallOptions &options,
                            const std::map<std::string, std::string> &env,
                            const std::filesystem::path &cwd) {
  if (options.stack != "all" && options.stack != "base" && options.stack != "podman") {
    throw usage_error(
        fmt::format("--stack must be one of: all, base, podman (not '{}')", options.stack));
  }
  if (text::trim(options.workspace).empty()) {
    throw usage_error("--workspace must be a non-empty Beaker workspace");
  }
  if (options.build_local_search && options.stack == "podman") {
    throw usage_error("--build-local-search belongs to the base stack, not --stack podman");
  }
  if (options.build_local_search &&
      (!options.jtc_build_context || options.jtc_build_context->empty())) {
    throw usage_error("--jtc-build-context is required with --build-local-search");
  }
  if (text::trim(options.docker_bin).empty()) {
    throw usage_error("--docker-bin must name a Docker-compatible executable");
  }
  ImagesPlan plan;
  plan.workspace = std::string(text::trim(options.workspace));
  plan.docker_bin = options.docker_bin;
  plan.beaker_bin = beaker::program_from_environment(env);
  plan.python = resolve_python(options.python, env);
  plan.pull_bases = options.pull_bases;
  const auto absolute = [&cwd](const std::string &path) {
    const std::filesystem::path p(path);
    return (p.is_absolute() ? p : cwd / p).lexically_normal();
  };
  if (options.source_root && !options.source_root->empty()) {
    plan.source_root = absolute(*options.source_root);
  }
  if (options.jtc_build_context && !options.jtc_build_context->empty()) {
    plan.jtc_build_context = absolute(*options.jtc_build_context);
  }
  if (options.stack == "all" || options.stack == "base") {
    plan.stacks.push_back(stack_build(Stack::base, options.build_local_search));
  }
  if (options.stack == "all" || options.stack == "podman") {
    plan.stacks.push_back(stack_build(Stack::podman, false));
  }
  return plan;
}

std::string
beaker_image_name(Stack stack, const std::string &local_name, const std::string &version) {
  std::string v = version;
  for (char &c : v) {
    if (c == '.' || c == '+') {
      c = '-';
    }
  }
  if (local_name == "literegistry-redis") {
    return fmt::format("literegistry-redis-{}-{}", stack_info(stack).name, v);
  }
  return fmt::format("{}-{}", local_name, v);
}

std::optional<std::string> find_image_id(const OrderedJson &value) {
  if (value.is_object()) {
    for (const char *key : {"id", "image_id", "imageId"}) {
      const auto it = value.find(key);
      if (it != value.end() && it->is_string() && !it->get<std::string>().empty()) {
        return it->get<std::string>();
      }
    }
    for (const auto &[key, nested] : value.items()) {
      if (auto found = find_image_id(nested)) {
        return found;
      }
    }
  } else if (value.is_array()) {
    for (const auto &item : value) {
      if (auto found = find_image_id(item)) {
        return found;
      }
    }
  }
  return std::nullopt;
}

OrderedJson execute_images_plan(const ImagesPlan &plan,
                                proc::Runner &runner,
                                LiteRegistry &literegistry,
                                const std::string &path_list,
                                std::ostream &progress) {
  for (const auto &program : {plan.docker_bin, plan.beaker_bin}) {
    if (!proc::find_executable(program, path_list)) {
      throw tool_error(fmt::format("required executable was not found: {}", program));
    }
  }
  progress << "services images: checking docker and beaker\n" << std::flush;
  run_checked(runner, argv_command({plan.docker_bin, "version"}));
  run_checked(runner, argv_command({plan.beaker_bin, "account", "whoami"}));

  OrderedJson result;
  result["workspace"] = plan.workspace;
  result["stacks"] = OrderedJson::object();
  ScratchDir scratch;
  for (const auto &build : plan.stacks) {
    const StackInfo &info = stack_info(build.stack);
    const auto version = literegistry.installed_version(info.distribution);
    if (!version) {
      throw tool_error(fmt::format("{} is not installed for {}; the images must match the "
                                   "launcher version",
                                   info.distribution,
                                   plan.python))
          .add_context(fmt::format(
              "install it first: {} -m pip install {}", plan.python, info.distribution));
    }
    const auto stack_dir = scratch.path() / std::string(info.name);
    const std::filesystem::path source =
        plan.source_root
            ? find_source_root(*plan.source_root, build.stack)
            : download_source(info, *version, stack_dir, runner, literegistry, path_list, progress);

    progress << fmt::format("services images: {}: building {} images (version {}) from {}\n",
                            info.name,
                            build.images.size(),
                            *version,
                            source.string())
             << std::flush;
    proc::Command script;
    script.argv = {"bash", (source / "scripts" / "build-images.sh").string(), "", *version};
    script.cwd = source;
    script.env_set = {{"DOCKER_BIN", plan.docker_bin},
                      {"PULL_BASES", plan.pull_bases ? "1" : "0"},
                      {"BUILD_LOCAL_SEARCH", build.build_local_search ? "1" : "0"}};
    if (plan.jtc_build_context) {
      script.env_set["JTC_BUILD_CONTEXT"] = plan.jtc_build_context->string();
    }
    run_streaming(runner, script);

    OrderedJson launcher_args = OrderedJson::object();
    for (const auto &image : build.images) {
      const std::string tag = fmt::format("{}:{}", image.local_name, *version);
      const auto inspect = run_checked(
          runner, argv_command({plan.docker_bin, "image", "inspect", "--format", "{{.Id}}", tag}));
      const std::string docker_id(text::trim(inspect.out));
      if (docker_id.empty()) {
        throw tool_error(fmt::format("{} returned no image ID for {}", plan.docker_bin, tag));
      }
      const std::string name = beaker_image_name(build.stack, image.local_name, *version);
      progress << fmt::format("services images: {}: publishing {} as {}\n", info.name, tag, name)
               << std::flush;
      const auto created = run_checked(runner,
                                       argv_command({plan.beaker_bin,
                                                     "image",
                                                     "create",
                                                     docker_id,
                                                     "--name",
                                                     name,
                                                     "--workspace",
                                                     plan.workspace,
                                                     "--format",
                                                     "json"}));
      const auto parsed = OrderedJson::parse(created.out, nullptr, false);
      if (parsed.is_discarded()) {
        throw tool_error(fmt::format("beaker image create did not return JSON for {}", name));
      }
      const auto image_id = find_image_id(parsed);
      if (!image_id) {
        throw tool_error(
            fmt::format("beaker image create JSON did not contain an image ID for {}", name));
      }
      launcher_args[image.launcher_arg] = *image_id;
    }
    result["stacks"][std::string(info.name)] = {{"distribution", info.distribution},
                                                {"version", *version},
                                                {"launcher_args", launcher_args}};
  }
  return result;
}

void register_images_command(cli::CommandTree &tree) {
  tree.command({"services", "images"}, "LiteRegistry images for your Beaker workspace");
  cli::Command &command =
      tree.command({"services", "images", "install"},
                   "Build LiteRegistry's images at the installed launcher version and publish "
                   "them to a Beaker workspace");
  auto &options = tree.make_options<ImagesInstallOptions>();
  command
      .add_option(
          cli::flag("workspace"), options.workspace, "Beaker workspace receiving the images")
      .required();
  command.add_option(cli::flag("stack"), options.stack, "all, base or podman")
      .capture_default_str();
  command.add_option(cli::flag("docker-bin"), options.docker_bin, "Docker-compatible executable")
      .capture_default_str();
  command.add_flag("--pull-bases,--pull_bases,!--no-pull-bases,!--no_pull_bases",
                   options.pull_bases,
                   "Pull base images while building (default on)");
  command.add_option(cli::flag("source-root"),
                     options.source_root,
                     "A local LiteRegistry checkout instead of the pip source download");
  command.add_flag("--build-local-search,--build_local_search,!--no-build-local-search",
                   options.build_local_search,
                   "Also build the JTC Lucene BM25 local-search image (base stack)");
  command.add_option(cli::flag("jtc-build-context"),
                     options.jtc_build_context,
                     "JTC checkout root (needed with --build-local-search)");
  command.add_option(cli::flag("python"),
                     options.python,
                     "Python interpreter with the LiteRegistry launchers installed");
  command.callback([&options] {
    const auto env = env::snapshot();
    const auto plan = make_images_plan(options, env, std::filesystem::current_path());
    proc::SystemRunner runner;
    LiteRegistry literegistry(runner, plan.python);
    const auto path = env.find("PATH");
    const auto result = execute_images_plan(
        plan, runner, literegistry, path != env.end() ? path->second : "/usr/bin:/bin", std::cerr);
    print_json(std::cout, result);
  });
}

} // namespace pb::services
