// SPDX-License-Identifier: MIT
#include "helper.hpp"

#include <primebeaker/core/error.hpp>
#include <primebeaker/core/text.hpp>
#include <primebeaker/evaluation/description.hpp>
#include <primebeaker/services/launcher.hpp>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <filesystem>

namespace pb::evaluation {

OrderedJson helper_request(const std::vector<HelperJob> &jobs) {
  OrderedJson request;
  request["protocol"] = 1;
  request["fallback_workflows"] = fallback_workflow_names();
  OrderedJson list = OrderedJson::array();
  bool any_services = false;
  for (const auto &job : jobs) {
    OrderedJson entry = OrderedJson::object();
    entry["workflow"] = job.workflow ? OrderedJson(*job.workflow) : OrderedJson(nullptr);
    entry["templates"] = job.templates;
    entry["workload"] = job.workload ? *job.workload : OrderedJson(nullptr);
    entry["audit"] = job.audit_mode ? OrderedJson({{"mode", *job.audit_mode}, {"force", job.force}})
                                    : OrderedJson(nullptr);
    if (job.services) {
      entry["literegistry"] = services::config_request(job.action, *job.services);
      any_services = true;
    } else {
      entry["literegistry"] = nullptr;
    }
    list.push_back(std::move(entry));
  }
  request["jobs"] = std::move(list);
  if (any_services) {
    request["literegistry_helper"] = services::helper_source();
  }
  return request;
}

Helper::Helper(proc::Runner &runner, std::string python)
    : m_runner(runner), m_python(std::move(python)) {}

void Helper::use_beaker(const std::string &program, const std::string &path_list) {
  m_path = services::launcher_path_for_beaker(program, path_list);
}

HelperAnswer Helper::run(const std::vector<HelperJob> &jobs) {
  proc::Command command;
  command.argv = {m_python, "-c", std::string(jtc_helper_source())};
  command.stdin_data = helper_request(jobs).dump();
  command.env_set["PYTHONDONTWRITEBYTECODE"] = "1"; // preview writes nothing, not even bytecode
  command.env_set["PYTHONIOENCODING"] = "utf-8";
  if (m_path) {
    command.env_set["PATH"] = *m_path;
  }
  proc::Result result;
  try {
    result = m_runner.run(command);
  } catch (Error &error) {
    error.add_context("evaluations run LiteRegistry's launchers (and JTC, when installed) in "
                      "Python: set --python or PRIMEBEAKER_PYTHON to an interpreter that has them");
    throw;
  }
  if (!result.err.empty()) {
    spdlog::info("evaluation helper stderr:\n{}", result.err);
  }
  const auto parsed = OrderedJson::parse(text::trim(result.out), nullptr, false);
  if (!result.ok() || !parsed.is_object() || !parsed.value("ok", false)) {
    Error error = tool_error(fmt::format("{} could not run the evaluation helper ({}){}",
                                         m_python,
                                         result.status(),
                                         parsed.is_object() && parsed.contains("message")
                                             ? ": " + parsed["message"].get<std::string>()
                                             : std::string()));
    auto lines = text::split(result.err, '\n');
    while (!lines.empty() && text::trim(lines.back()).empty()) {
      lines.pop_back();
    }
    for (size_t i = lines.size() > 6 ? lines.size() - 6 : 0; i < lines.size(); ++i) {
      error.add_context(lines[i]);
    }
    throw error;
  }
  const auto &body = parsed["result"];
  HelperAnswer answer;
  const auto &jtc = body["jtc"];
  answer.jtc_available = jtc.value("available", false);
  answer.jtc_version = jtc["version"].is_string() ? jtc["version"].get<std::string>() : "";
  answer.jtc_error = jtc["error"].is_string() ? jtc["error"].get<std::string>() : "";
  answer.workflow_names = body["workflows"]["names"].get<std::vector<std::string>>();
  answer.workflow_source = body["workflows"].value("source", "fallback");
  answer.workflow_error = body["workflows"].value("error", "");
  answer.now = body.value("now", "");
  for (const auto &job : body["jobs"]) {
    answer.jobs.push_back(job);
  }
  if (answer.jobs.size() != jobs.size()) {
    throw tool_error("the evaluation helper answered a different number of jobs");
  }
  return answer;
}

OrderedJson literegistry_result(const OrderedJson &job_answer,
                                const services::LauncherConfig &config,
                                const std::string &python) {
  const auto &answer = job_answer["literegistry"];
  if (!answer.is_object()) {
    throw tool_error("the evaluation helper did not run LiteRegistry's launcher");
  }
  if (!answer.value("ok", false)) {
    services::throw_helper_failure(answer, &config, python);
  }
  return answer["result"];
}

services::LauncherConfig launcher_config(const OrderedJson &services,
                                         const std::map<std::string, std::string> &origins,
                                         const std::string &source) {
  services::LauncherConfig config;
  config.stack = services::Stack::base;
  config.source = services::ConfigSource::file;
  for (const auto &[name, value] : services.items()) {
    services::ConfigField field;
    field.name = name;
    field.value = value;
    field.as_tuple = name == "service_clusters" && value.is_array();
    const auto origin = origins.find(name);
    field.origin = origin != origins.end() ? origin->second : source;
    field.path = "services." + name;
    config.fields.push_back(std::move(field));
  }
  return config;
}

} // namespace pb::evaluation
