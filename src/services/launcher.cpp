// SPDX-License-Identifier: MIT
#include <primebeaker/core/error.hpp>
#include <primebeaker/core/spelling.hpp>
#include <primebeaker/core/text.hpp>
#include <primebeaker/services/launcher.hpp>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>

namespace pb::services {
namespace {

constexpr StackInfo k_base{"base",
                           "literegistry_base_deployment",
                           "BaseDeploymentConfig",
                           "BaseDeploymentLauncher",
                           "literegistry-base-deployment"};
constexpr StackInfo k_podman{"podman",
                             "literegistry_podman_beaker",
                             "PodmanStackConfig",
                             "PodmanStackLauncher",
                             "literegistry-podman-beaker"};

std::string last_lines(const std::string &text, size_t count) {
  auto lines = text::split(text, '\n');
  while (!lines.empty() && text::trim(lines.back()).empty()) {
    lines.pop_back();
  }
  if (lines.size() > count) {
    lines.erase(lines.begin(), lines.end() - static_cast<std::ptrdiff_t>(count));
  }
  return text::join(lines, "\n");
}

const ConfigField *field_named(const LauncherConfig *config, const std::string &name) {
  return config == nullptr ? nullptr : config->find(name);
}

Error config_error(const LauncherConfig *config, const std::string &message) {
  if (config != nullptr && config->source == ConfigSource::flags) {
    return usage_error(message);
  }
  return input_error(message);
}

// "services.yaml:4:3: services.terminl_replicas" or "--terminl-replicas".
std::string where(const ConfigField *field, const std::string &name) {
  if (field == nullptr) {
    return name;
  }
  if (field->path.empty()) {
    return field->origin;
  }
  return field->origin + ": " + field->path;
}

} // namespace

[[noreturn]] void throw_helper_failure(const OrderedJson &answer,
                                       const LauncherConfig *config,
                                       const std::string &python) {
  const std::string kind = answer.value("error", "internal");
  const std::string message = answer.value("message", "");
  if (kind == "missing_package") {
    const std::string requirement = answer.value("requirement", "");
    throw tool_error(fmt::format("LiteRegistry's {} package is not importable by {} ({})",
                                 answer.value("module", ""),
                                 python,
                                 message))
        .add_context(fmt::format("install it with: {} -m pip install {}", python, requirement))
        .add_context("or point --python / PRIMEBEAKER_PYTHON at an interpreter that has it");
  }
  if (kind == "unknown_fields") {
    const auto known = answer.value("known", std::vector<std::string>{});
    const auto unknown = answer.value("fields", std::vector<std::string>{});
    const std::string config_class = answer.value("config_class", "");
    std::vector<std::string> lines;
    for (const auto &name : unknown) {
      std::string line = fmt::format(
          "{}: unknown {} field '{}'", where(field_named(config, name), name), config_class, name);
      if (const auto suggestion = text::closest_match(name, known); !suggestion.empty()) {
        line += fmt::format(" (did you mean {}?)", suggestion);
      }
      lines.push_back(line);
    }
    if (lines.empty()) {
      lines.emplace_back("unknown field");
    }
    Error error = config_error(config, lines.front());
    for (size_t i = 1; i < lines.size(); ++i) {
      error.add_context(lines[i]);
    }
    throw error;
  }
  if (kind == "bad_value") {
    const std::string name = answer.value("field", "");
    throw config_error(config,
                       fmt::format("{}: {}", where(field_named(config, name), name), message));
  }
  if (kind == "invalid_config") {
    throw config_error(config,
                       fmt::format("{} rejected the configuration: {}",
                                   answer.value("config_class", "LiteRegistry"),
                                   message));
  }
  if (kind == "launcher_failed") {
    throw tool_error(fmt::format("LiteRegistry launcher failed: {}", message));
  }
  if (kind == "unsafe_archive") {
    throw failure(message);
  }
  Error error = tool_error(fmt::format("the LiteRegistry helper failed: {}", message));
  if (answer.contains("traceback")) {
    error.add_context(last_lines(answer["traceback"].get<std::string>(), 6));
  }
  throw error;
}

const StackInfo &stack_info(Stack stack) {
  return stack == Stack::base ? k_base : k_podman;
}

const ConfigField *LauncherConfig::find(std::string_view name) const {
  for (const auto &field : fields) {
    if (field.name == name) {
      return &field;
    }
  }
  return nullptr;
}

std::optional<std::string> LauncherConfig::string_value(std::string_view name) const {
  const ConfigField *field = find(name);
  if (field == nullptr || !field->value.is_string()) {
    return std::nullopt;
  }
  return field->value.get<std::string>();
}

std::string resolve_python(const std::optional<std::string> &flag,
                           const std::map<std::string, std::string> &env) {
  if (flag && !flag->empty()) {
    return *flag;
  }
  if (const auto it = env.find("PRIMEBEAKER_PYTHON"); it != env.end() && !it->second.empty()) {
    return it->second;
  }
  return "python3";
}

OrderedJson config_request(std::string_view action, const LauncherConfig &config) {
  OrderedJson request;
  request["protocol"] = 1;
  request["action"] = action;
  request["stack"] = stack_info(config.stack).name;
  OrderedJson fields = OrderedJson::array();
  for (const auto &field : config.fields) {
    fields.push_back({{"name", field.name},
                      {"value", field.value},
                      {"from_text", field.from_text},
                      {"as_tuple", field.as_tuple}});
  }
  request["fields"] = std::move(fields);
  return request;
}

LiteRegistry::LiteRegistry(proc::Runner &runner, std::string python)
    : m_runner(runner), m_python(std::move(python)) {}

std::optional<std::string> launcher_path_for_beaker(const std::string &program,
                                                    const std::string &path_list) {
  if (program.empty() || program == "beaker") {
    return std::nullopt;
  }
  const std::filesystem::path path(program);
  if (path.filename() != "beaker" || !path.has_parent_path()) {
    spdlog::warn("PRIMEBEAKER_BEAKER={} is not used by LiteRegistry's launchers, which run "
                 "`beaker` from PATH",
                 program);
    return std::nullopt;
  }
  return path.parent_path().string() + ":" + path_list;
}

void LiteRegistry::use_beaker(const std::string &program, const std::string &path_list) {
  m_helper_path = launcher_path_for_beaker(program, path_list);
}

OrderedJson LiteRegistry::call(const OrderedJson &request, const LauncherConfig *config) {
  proc::Command command;
  command.argv = {m_python, "-c", std::string(helper_source())};
  command.stdin_data = request.dump();
  // Importing must not leave __pycache__ behind: preview touches nothing on disk.
  command.env_set["PYTHONDONTWRITEBYTECODE"] = "1";
  command.env_set["PYTHONIOENCODING"] = "utf-8";
  if (m_helper_path) {
    command.env_set["PATH"] = *m_helper_path;
  }
  proc::Result result;
  try {
    result = m_runner.run(command);
  } catch (Error &error) {
    error.add_context("LiteRegistry's launchers run in Python: set --python or PRIMEBEAKER_PYTHON "
                      "to an interpreter that has them");
    throw;
  }
  if (!result.err.empty()) {
    spdlog::info("LiteRegistry helper stderr:\n{}", result.err);
  }
  OrderedJson answer;
  const auto newline = text::trim(result.out);
  if (!newline.empty()) {
    answer = OrderedJson::parse(newline, nullptr, false);
  }
  if (!result.ok() || !answer.is_object() || !answer.contains("ok")) {
    Error error = tool_error(
        fmt::format("{} could not run the LiteRegistry helper ({})", m_python, result.status()));
    if (const auto tail = last_lines(result.err, 8); !tail.empty()) {
      error.add_context(tail);
    }
    throw error;
  }
  if (!answer["ok"].get<bool>()) {
    throw_helper_failure(answer, config, m_python);
  }
  return answer["result"];
}

OrderedJson LiteRegistry::preview(const LauncherConfig &config) {
  return call(config_request("preview", config), &config);
}

OrderedJson LiteRegistry::submit(const LauncherConfig &config) {
  return call(config_request("submit", config), &config);
}

OrderedJson LiteRegistry::stop(Stack stack, const std::string &experiment_id, bool dry_run) {
  OrderedJson request;
  request["protocol"] = 1;
  request["action"] = "stop";
  request["stack"] = stack_info(stack).name;
  request["experiment_id"] = experiment_id;
  request["dry_run"] = dry_run;
  return call(request, nullptr);
}

std::optional<std::string> LiteRegistry::installed_version(std::string_view distribution) {
  OrderedJson request;
  request["protocol"] = 1;
  request["action"] = "version";
  request["distribution"] = distribution;
  const auto answer = call(request, nullptr);
  if (!answer.contains("version") || !answer["version"].is_string()) {
    return std::nullopt;
  }
  return answer["version"].get<std::string>();
}

std::filesystem::path
LiteRegistry::unpack_source_archive(const std::filesystem::path &archive,
                                    const std::filesystem::path &destination) {
  OrderedJson request;
  request["protocol"] = 1;
  request["action"] = "unpack";
  request["archive"] = archive.string();
  request["destination"] = destination.string();
  return call(request, nullptr).at("root").get<std::string>();
}

} // namespace pb::services
