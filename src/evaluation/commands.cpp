// SPDX-License-Identifier: MIT
// `primebeaker evaluation preview|submit|run|request-preview|request-submit|workflows`
// (docs/evaluation.md). The in-container `evaluation worker` is another module's.
#include "flow.hpp"

#include <primebeaker/config/config.hpp>
#include <primebeaker/core/command_tree.hpp>
#include <primebeaker/core/env.hpp>
#include <primebeaker/core/error.hpp>
#include <primebeaker/core/fs.hpp>
#include <primebeaker/core/json.hpp>
#include <primebeaker/evaluation/templates.hpp>
#include <primebeaker/services/launcher.hpp>
#include <primebeaker/staging/stage.hpp>

#include <fmt/format.h>

#include <filesystem>
#include <iostream>

namespace pb::evaluation {

void register_commands(cli::CommandTree &tree);

namespace {

struct YamlOptions {
  std::vector<std::string> positional;
  std::string config;
  std::optional<std::string> image;
  std::optional<std::string> registry;
  std::vector<std::string> template_dirs;
  std::optional<std::string> python;
  std::optional<std::string> local_mount;
  bool dry_run = false;
  bool force = false;
  bool no_stage = false;
};

struct RequestOptions {
  std::string request_json;
  std::optional<std::string> python;
  bool no_stage = false;
};

struct WorkflowsOptions {
  std::optional<std::string> python;
};

// The interpreter and the beaker program, as every command resolves them.
struct Context {
  std::map<std::string, std::string> env = env::snapshot();
  proc::SystemRunner runner;
  Helper helper;
  beaker::Client beaker;
  staging::RealStager stager;
  Effects effects{helper, beaker, stager};

  explicit Context(const std::optional<std::string> &python)
      : helper(runner, services::resolve_python(python, env)),
        beaker(runner, beaker::program_from_environment(env)) {
    const auto path = env.find("PATH");
    helper.use_beaker(beaker.program(), path != env.end() ? path->second : "/usr/bin:/bin");
  }
};

LoadOptions load_options(const YamlOptions &options,
                         const std::map<std::string, std::string> &env) {
  LoadOptions load;
  load.cwd = std::filesystem::current_path();
  for (const auto &dir : options.template_dirs) {
    load.template_dirs.emplace_back(dir);
  }
  if (const auto it = env.find("PRIMEBEAKER_TEMPLATE_PATH"); it != env.end()) {
    for (auto &dir : split_search_path(it->second)) {
      load.template_dirs.push_back(std::move(dir));
    }
  }
  load.image = options.image;
  load.registry = options.registry;
  load.force = options.force;
  // The user's defaults (docs/config.md): shared_dir (from the user name), the mount and bucket.
  const auto settings = config::Settings::load();
  load.shared_dir = settings.text("shared_dir");
  load.mount_path = settings.text("mount_path");
  load.dataset = settings.text("dataset");
  load.scratch_dir = settings.text("scratch_dir");
  if (options.local_mount) {
    load.local_mount = *options.local_mount;
  } else if (const auto it = env.find("PRIMEBEAKER_LOCAL_MOUNT");
             it != env.end() && !it->second.empty()) {
    load.local_mount = it->second;
  }
  return load;
}

std::vector<std::string> config_paths(const YamlOptions &options) {
  std::vector<std::string> paths;
  if (!options.config.empty()) {
    paths.push_back(options.config);
  }
  paths.insert(paths.end(), options.positional.begin(), options.positional.end());
  if (paths.empty()) {
    throw usage_error("an evaluation YAML is required: --config YAML (or give it positionally)");
  }
  return paths;
}

// The evaluator runs this build staged under <scratch_dir>/primebeaker/bin, where launches and
// `primebeaker stage` put it, when the configured scratch_dir is on the evaluator's mount; else
// under <mount_path>/primebeaker/bin (docs/staging.md). --no-stage keeps the image's own
// `primebeaker`.
void choose_worker(EvaluationRequest &request, bool no_stage, const std::string &scratch_dir) {
  if (no_stage) {
    request.staged_worker.clear();
    return;
  }
  const auto mount = std::filesystem::path(request.mount_path).lexically_normal();
  const auto scratch = std::filesystem::path(scratch_dir).lexically_normal();
  const auto below = scratch.lexically_relative(mount);
  const bool on_mount = !scratch_dir.empty() && !below.empty() && *below.begin() != "..";
  request.staged_worker =
      staging::staged_program(on_mount ? scratch.string() : request.mount_path, staging::current())
          .string();
}

Loaded load_staged(const std::string &path, const LoadOptions &load, bool no_stage) {
  Loaded loaded = load_yaml(path, load);
  if (loaded.description) {
    choose_worker(loaded.description->request, no_stage, load.scratch_dir);
  }
  return loaded;
}

void run_yaml_command(const YamlOptions &options, bool submit) {
  Context context(options.python);
  const auto load = load_options(options, context.env);
  const auto paths = config_paths(options);
  if (submit && !options.dry_run) {
    if (paths.size() != 1) {
      throw usage_error("submit takes one evaluation YAML (preview takes several)");
    }
    print_json(std::cout,
               submit_yaml(load_staged(paths.front(), load, options.no_stage), context.effects));
    return;
  }
  std::vector<Loaded> loaded;
  loaded.reserve(paths.size());
  for (const auto &path : paths) {
    loaded.push_back(load_staged(path, load, options.no_stage));
  }
  auto previews = preview_yamls(loaded, context.effects);
  if (previews.size() == 1) {
    print_json(std::cout, previews.front());
    return;
  }
  OrderedJson all = OrderedJson::array();
  for (auto &preview : previews) {
    all.push_back(std::move(preview));
  }
  print_json(std::cout, all);
}

// --request-json: an existing regular file is read, anything else is the JSON itself.
EvaluationRequest read_request(const std::string &value) {
  std::error_code ec;
  const bool is_file = std::filesystem::is_regular_file(value, ec);
  const std::string text = is_file ? fs::read_file(value) : value;
  const std::string source = is_file ? value : "--request-json";
  auto json = OrderedJson::parse(text, nullptr, false);
  if (json.is_discarded()) {
    throw input_error(is_file ? fmt::format("{}: not valid JSON", value)
                              : "--request-json: neither an existing file nor valid JSON");
  }
  // What the request leaves out, from the user's defaults (docs/config.md).
  const auto settings = config::Settings::load();
  if (json.is_object()) {
    for (const char *key : {"mount_path", "dataset"}) {
      if (!json.contains(key)) {
        json[key] = settings.text(key);
      }
    }
  }
  EvaluationRequest request = request_from_json(json, source);
  if (!request.services.contains("shared_dir")) {
    if (auto shared = settings.text("shared_dir"); !shared.empty()) {
      request.services["shared_dir"] = std::move(shared); // the user's (docs/config.md)
    }
  }
  return request;
}

void add_no_stage(cli::Command &command, bool &target) {
  command.add_flag("--no-stage,--no_stage",
                   target,
                   "Run the image's own primebeaker instead of this build staged under "
                   "<mount>/primebeaker/bin (docs/staging.md)");
}

void add_python(cli::Command &command, std::optional<std::string> &target) {
  command.add_option(cli::flag("python"),
                     target,
                     "Python interpreter with LiteRegistry's launchers (and JTC, when installed); "
                     "default $PRIMEBEAKER_PYTHON, else python3");
}

void register_yaml_command(cli::CommandTree &tree, std::string_view name, bool submit) {
  cli::Command &command = tree.command(
      {"evaluation", name},
      submit ? "Launch an evaluation YAML: its LiteRegistry services, then the evaluator (the "
               "services are stopped again if the evaluator cannot be created)"
             : "Preview evaluation YAMLs: the service stack and the evaluator spec (submits and "
               "writes nothing)");
  auto &options = tree.make_options<YamlOptions>();
  command.add_option("config", options.positional, "Evaluation YAML(s)").type_name("YAML");
  command.add_option(cli::flag("config"), options.config, "Evaluation YAML").type_name("YAML");
  command.add_option(cli::flag("image"), options.image, "Evaluation image (overrides image:)");
  command.add_option(cli::flag("registry"),
                     options.registry,
                     "Reuse a running LiteRegistry registry (overrides existing_registry: or "
                     "registry:, by kind)");
  cli::add_list_option(command,
                       "template-dir",
                       options.template_dirs,
                       "Also look for relative template paths here (repeatable)");
  add_python(command, options.python);
  command.add_option(cli::flag("local-mount"),
                     options.local_mount,
                     "Where /weka is mounted on this machine, if elsewhere (snapshots are written "
                     "there; default $PRIMEBEAKER_LOCAL_MOUNT)");
  add_no_stage(command, options.no_stage);
  if (submit) {
    command.add_flag("--dry-run,--dry_run,!--no-dry-run",
                     options.dry_run,
                     "Print the preview instead of submitting");
    command.add_flag("--force,!--no-force",
                     options.force,
                     "rubric-judge-audit: rerun even when complete or partially streamed");
  }
  command.callback([&options, submit] { run_yaml_command(options, submit); });
}

void register_request_command(cli::CommandTree &tree, std::string_view name, bool submit) {
  cli::Command &command =
      tree.command({"evaluation", name},
                   submit ? "Launch a PythonEvaluationRequest (JSON): services, then the evaluator"
                          : "Preview a PythonEvaluationRequest (JSON) without submitting");
  auto &options = tree.make_options<RequestOptions>();
  command
      .add_option(cli::flag("request-json"),
                  options.request_json,
                  "The request: a JSON file, or the JSON text itself")
      .required();
  add_python(command, options.python);
  add_no_stage(command, options.no_stage);
  command.callback([&options, submit] {
    Context context(options.python);
    auto request = read_request(options.request_json);
    choose_worker(request, options.no_stage, config::Settings::load().text("scratch_dir"));
    print_json(std::cout,
               submit ? submit_request(request, context.effects)
                      : preview_request(request, context.effects));
  });
}

} // namespace

void register_commands(cli::CommandTree &tree) {
  tree.command({"evaluation"},
               "Managed evaluations: a LiteRegistry service stack plus an evaluator task that "
               "runs a JTC worker once the services are ready");
  register_yaml_command(tree, "preview", false);
  register_yaml_command(tree, "submit", true);
  register_yaml_command(tree, "run", true);
  register_request_command(tree, "request-preview", false);
  register_request_command(tree, "request-submit", true);
  cli::Command &workflows = tree.command(
      {"evaluation", "workflows"},
      "List the workflow names a YAML's workflow: may name (JTC's registry, or the fallback list)");
  auto &options = tree.make_options<WorkflowsOptions>();
  add_python(workflows, options.python);
  workflows.callback([&options] {
    Context context(options.python);
    const auto answer = list_workflows(context.effects);
    print_json(std::cout, OrderedJson(answer.workflow_names));
  });
}

} // namespace pb::evaluation
