// SPDX-License-Identifier: MIT
// The one Python process of an evaluation command (docs/evaluation.md "The Python helper"): JTC's
// answers (workflow names, packaged templates, workload filtering, audit probes) and the
// LiteRegistry launcher calls, for every job of the command at once.
#pragma once

#include <primebeaker/core/json.hpp>
#include <primebeaker/core/process.hpp>
#include <primebeaker/services/launcher.hpp>

#include <optional>
#include <string>
#include <vector>

namespace pb::evaluation {

struct HelperJob {
  std::optional<std::string> workflow;   // a generic workflow that JTC must know
  std::vector<std::string> templates;    // template paths found nowhere locally
  std::optional<OrderedJson> workload;   // {"kind", "data"} for JTC's workload model
  std::optional<std::string> audit_mode; // "probe" (preview) or "coordinate" (submit)
  bool force = false;
  std::optional<services::LauncherConfig> services; // the stack, unless JTC stops the job first
  std::string action = "preview";                   // or "submit"
};

struct HelperAnswer {
  bool jtc_available = false;
  std::string jtc_version;
  std::string jtc_error; // why `import jtc` failed
  std::vector<std::string> workflow_names;
  std::string workflow_source; // "jtc" or "fallback"
  std::string workflow_error;  // JTC importable but its registry failed
  std::string now;             // UTC ISO-8601, for receipts
  // Per job: {"stopped": null|{reason, ...}, "templates": [...], "workload": null|{...},
  //           "audit": null|{...}, "literegistry": null|<services helper answer>}.
  std::vector<OrderedJson> jobs;
};

// The request the helper reads. Pure.
OrderedJson helper_request(const std::vector<HelperJob> &jobs);

// The embedded helper's source (python3 -c).
std::string_view jtc_helper_source();

class Helper {
public:
  Helper(proc::Runner &runner, std::string python);
  // PRIMEBEAKER_BEAKER for the upstream launchers (see services' LiteRegistry::use_beaker).
  void use_beaker(const std::string &program, const std::string &path_list);
  HelperAnswer run(const std::vector<HelperJob> &jobs);
  const std::string &python() const { return m_python; }

private:
  proc::Runner &m_runner;
  std::string m_python;
  std::optional<std::string> m_path;
};

// The result of a job's LiteRegistry call, or the services module's error for it.
OrderedJson literegistry_result(const OrderedJson &job_answer,
                                const services::LauncherConfig &config,
                                const std::string &python);

// The services of a request as a LiteRegistry launcher configuration. Pure.
services::LauncherConfig launcher_config(const OrderedJson &services,
                                         const std::map<std::string, std::string> &origins,
                                         const std::string &source);

} // namespace pb::evaluation
