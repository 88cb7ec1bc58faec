// SPDX-License-Identifier: MIT
#include <primebeaker/beaker/client.hpp>
#include <primebeaker/core/error.hpp>
#include <primebeaker/core/text.hpp>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <regex>

namespace pb::beaker {

std::string program_from_environment(const std::map<std::string, std::string> &environment) {
  const auto it = environment.find("PRIMEBEAKER_BEAKER");
  if (it != environment.end() && !it->second.empty()) {
    return it->second;
  }
  return "beaker";
}

proc::Argv experiment_create_argv(const std::string &program,
                                  const std::string &name,
                                  const std::string &workspace,
                                  const std::string &spec_path) {
  return {program, "experiment", "create", "--name", name, "--workspace", workspace, spec_path};
}

std::optional<std::string> parse_created_experiment_id(std::string_view create_stdout) {
  static const std::regex ansi("\x1b\\[[0-9;]*m");
  static const std::regex created("Experiment\\s+([A-Za-z0-9]+)\\s+submitted");
  const std::string plain = std::regex_replace(std::string(create_stdout), ansi, "");
  std::smatch match;
  if (std::regex_search(plain, match, created)) {
    return match[1].str();
  }
  return std::nullopt;
}

void require_program(const std::string &program,
                     const std::map<std::string, std::string> &environment) {
  const auto path = environment.find("PATH");
  if (!proc::find_executable(program, path == environment.end() ? "" : path->second)) {
    throw tool_error(fmt::format("cannot run {}: not found{}; install the Beaker CLI, or point "
                                 "PRIMEBEAKER_BEAKER at it (nothing was staged or written)",
                                 program,
                                 program.find('/') == std::string::npos ? " on PATH" : ""));
  }
}

Client::Client(proc::Runner &runner, std::string program)
    : m_runner(runner), m_program(std::move(program)) {}

proc::Result Client::run(const proc::Argv &args) {
  proc::Command command;
  command.argv.push_back(m_program);
  command.argv.insert(command.argv.end(), args.begin(), args.end());
  spdlog::debug("running {}", proc::argv_to_json(command.argv));
  try {
    return m_runner.run(command);
  } catch (Error &error) {
    error.add_context("install the Beaker CLI, or point PRIMEBEAKER_BEAKER at it");
    throw;
  }
}

proc::Result Client::run_checked(const proc::Argv &args, const std::string &what) {
  auto result = run(args);
  if (!result.ok()) {
    std::string detail(text::trim(result.err));
    if (detail.empty()) {
      detail = std::string(text::trim(result.out));
    }
    throw tool_error(fmt::format("{} {} failed ({}){}{}",
                                 m_program,
                                 what,
                                 result.status(),
                                 detail.empty() ? "" : ": ",
                                 detail));
  }
  return result;
}

std::string Client::create_experiment(const std::string &name,
                                      const std::string &workspace,
                                      const std::string &spec_path) {
  auto argv = experiment_create_argv(m_program, name, workspace, spec_path);
  argv.erase(argv.begin());
  auto result = run(argv);
  if (!result.ok()) {
    std::string detail(text::trim(result.err));
    if (detail.empty()) {
      detail = std::string(text::trim(result.out));
    }
    throw tool_error(fmt::format("beaker could not create experiment {} ({}){}{}",
                                 name,
                                 result.status(),
                                 detail.empty() ? "" : ": ",
                                 detail));
  }
  return result.out;
}

OrderedJson Client::get_experiment(const std::string &id) {
  const auto result =
      run_checked({"experiment", "get", id, "--format", "json"}, "experiment get " + id);
  auto parsed = OrderedJson::parse(result.out, nullptr, false);
  if (parsed.is_discarded()) {
    throw tool_error(
        fmt::format("{} experiment get {} printed something that is not JSON", m_program, id));
  }
  if (parsed.is_object()) {
    OrderedJson wrapped = OrderedJson::array();
    wrapped.push_back(std::move(parsed));
    return wrapped;
  }
  if (!parsed.is_array()) {
    throw tool_error(fmt::format("{} experiment get {} printed JSON that is neither an array "
                                 "nor an object",
                                 m_program,
                                 id));
  }
  return parsed;
}

void Client::stop_experiment(const std::string &id) {
  run_checked({"experiment", "stop", id}, "experiment stop " + id);
}

} // namespace pb::beaker
