// SPDX-License-Identifier: MIT
#include "flow.hpp"

#include <primebeaker/core/error.hpp>
#include <primebeaker/core/fs.hpp>
#include <primebeaker/core/signals.hpp>
#include <primebeaker/core/text.hpp>
#include <primebeaker/evaluation/templates.hpp>
#include <primebeaker/staging/stage.hpp>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <functional>

namespace pb::evaluation {
namespace {

namespace stdfs = std::filesystem;

std::string_view workload_kind(Kind kind) {
  switch (kind) {
  case Kind::standard:
    return "standard";
  case Kind::search_agent:
    return "search-agent";
  case Kind::rejection_sampling:
    return "rejection-sampling";
  case Kind::rubric_audit:
    return "rubric-judge-audit";
  case Kind::workflow:
    break;
  }
  return "workflow";
}

std::string fallback_note(const HelperAnswer &answer, const std::string &python) {
  if (answer.workflow_source == "jtc") {
    return fmt::format("workflow names from JTC's registry{}",
                       answer.jtc_version.empty() ? "" : " (jtc " + answer.jtc_version + ")");
  }
  if (!answer.workflow_error.empty()) {
    return fmt::format("JTC's workflow registry failed ({}); using the names known from "
                       "primebeaker's example YAMLs instead",
                       answer.workflow_error);
  }
  return fmt::format("JTC is not importable by {} ({}); using the names known from "
                     "primebeaker's example YAMLs instead",
                     python,
                     answer.jtc_error);
}

HelperJob job_for(const Loaded &loaded, bool submit) {
  HelperJob job;
  job.action = submit ? "submit" : "preview";
  if (!loaded.description) {
    job.workflow = loaded.workflow; // only to learn whether the workflow exists
    return job;
  }
  const Description &description = *loaded.description;
  if (description.kind == Kind::workflow) {
    job.workflow = description.workflow;
  }
  for (const auto &ref : description.templates) {
    if (!ref.path) {
      job.templates.push_back(ref.requested);
    }
  }
  job.workload =
      OrderedJson{{"kind", workload_kind(description.kind)}, {"data", description.workload}};
  if (description.kind == Kind::rubric_audit) {
    job.audit_mode = submit ? "coordinate" : "probe";
    job.force = description.force;
  }
  job.services = launcher_config(
      service_config(description.request), description.request.service_origins, description.source);
  return job;
}

// Throws the error a stopped job stands for; returns the audit result when JTC finished it.
std::optional<OrderedJson> check_stopped(const Loaded &loaded,
                                         const OrderedJson &job,
                                         const HelperAnswer &answer,
                                         const std::string &python) {
  const auto &stopped = job["stopped"];
  if (!stopped.is_object()) {
    return std::nullopt;
  }
  const std::string reason = stopped.value("reason", "");
  const std::string message = stopped.value("message", "");
  if (reason == "unsupported_workflow") {
    throw input_error(
        fmt::format("{}: unsupported evaluation workflow: '{}'", loaded.source, loaded.workflow))
        .add_context(message)
        .add_context(fallback_note(answer, python));
  }
  if (reason == "template_not_found") {
    const std::string requested = stopped.value("requested", "");
    Error error = input_error(
        fmt::format("template referenced by {} was not found: {}", loaded.source, requested));
    error.add_context("searched the YAML's directory, the current directory, the YAML's "
                      "ancestors, --template-dir and PRIMEBEAKER_TEMPLATE_PATH");
    error.add_context(
        answer.jtc_available
            ? std::string("and JTC's packaged resources")
            : fmt::format("JTC's packaged resources were not searched: {}", answer.jtc_error));
    throw error;
  }
  if (reason == "workload_invalid") {
    throw input_error(fmt::format(
        "{}: JTC rejected the {} workload: {}", loaded.source, loaded.workflow, message));
  }
  if (reason == "jtc_missing") {
    throw tool_error(fmt::format("the rubric-judge-audit coordinator needs JTC, which {} cannot "
                                 "import; install it with: {} -m pip install jtc",
                                 python,
                                 python));
  }
  if (reason == "audit_partial") {
    throw failure(message);
  }
  if (reason == "audit_done") {
    return stopped["result"];
  }
  throw tool_error(
      fmt::format("the evaluation helper stopped {}: {} {}", loaded.source, reason, message));
}

// The description with the templates JTC found filled in, and the workload the worker reads.
struct Finished {
  Description description;
  EvaluationRequest request;
  std::vector<size_t> from_jtc; // indexes of the templates JTC's resources supplied
};

Finished finish(const Loaded &loaded, const OrderedJson &job) {
  Finished out{*loaded.description, {}, {}};
  size_t next = 0;
  const auto &found = job["templates"];
  for (auto &ref : out.description.templates) {
    if (ref.path || next >= found.size()) {
      continue;
    }
    const auto &item = found[next++];
    ref.path = item["path"].get<std::string>();
    ref.content = item["content"].get<std::string>();
    check_template(ref.path->string(), ref.content);
    ref.snapshot = snapshot_path(out.description.snapshot_root, ref.content);
  }
  for (const auto &ref : out.description.templates) {
    if (!ref.path) {
      throw input_error(
          fmt::format("template referenced by {} was not found: {}", loaded.source, ref.requested));
    }
  }
  for (size_t i = 0; i < out.description.templates.size(); ++i) {
    if (!loaded.description->templates[i].path) {
      out.from_jtc.push_back(i);
    }
  }
  const OrderedJson &workload =
      job["workload"].is_object() ? job["workload"] : out.description.workload;
  out.request =
      finished_request(out.description, workload_with_snapshots(out.description, workload));
  return out;
}

OrderedJson
audit_preview(const Description &description, const OrderedJson &job, OrderedJson primebeaker) {
  const auto &audit = job["audit"].is_object() ? job["audit"] : OrderedJson::object();
  OrderedJson out = OrderedJson::object();
  out["workflow"] = description.workflow;
  out["expected_records"] = audit.value("expected_records", OrderedJson(nullptr));
  out["sample_complete"] = audit.value("sample_complete", OrderedJson(nullptr));
  out["audit_complete"] = audit.value("audit_complete", OrderedJson(nullptr));
  out["python_module"] = description.request.module;
  out["primebeaker"] = std::move(primebeaker);
  return out;
}

// While the two experiments are created, SIGINT/SIGTERM are noted (signals::Scope) instead of
// killing us, so that an interrupted submission still stops the services it started.
[[noreturn]] void roll_back(Error error, const std::string &service_id, beaker::Client &beaker) {
  const int signal = signals::Scope::pending();
  if (signal != 0 && error.code() != static_cast<int>(ExitCode::terminated) &&
      error.code() != static_cast<int>(ExitCode::interrupted)) {
    error = Error(128 + signal,
                  fmt::format("interrupted while submitting the evaluator ({})", error.what()),
                  error.context());
  }
  try {
    beaker.stop_experiment(service_id);
    error.add_context(
        fmt::format("stopped service experiment {} after evaluator submission failed", service_id));
  } catch (const Error &stop_error) {
    error.add_context(fmt::format(
        "also failed to stop service experiment {}: {}", service_id, stop_error.what()));
    error.add_context(fmt::format("it is still running: beaker experiment stop {}", service_id));
  }
  throw error;
}

// `beaker --format json experiment create --name NAME --workspace WS SPEC` from a temporary spec
// file: {"experiment_name", "beaker"}.
OrderedJson create_evaluator(beaker::Client &beaker,
                             const std::string &name,
                             const std::string &workspace,
                             const OrderedJson &spec) {
  const char *tmp = std::getenv("TMPDIR");
  std::string path =
      (stdfs::path(tmp != nullptr && *tmp != '\0' ? tmp : "/tmp") / (name + "-XXXXXX.json"))
          .string();
  const int fd = ::mkstemps(path.data(), 5);
  if (fd < 0) {
    throw failure(fmt::format("cannot create a temporary spec file for {}", name));
  }
  ::close(fd);
  struct Remove {
    std::string path;
    ~Remove() { ::unlink(path.c_str()); }
  } remove{path};
  fs::write_file_atomic(path, spec.dump(2) + "\n");
  const auto result = beaker.run(
      {"--format", "json", "experiment", "create", "--name", name, "--workspace", workspace, path});
  if (!result.ok()) {
    std::string detail(text::trim(result.err));
    if (detail.empty()) {
      detail = std::string(text::trim(result.out));
    }
    throw tool_error(fmt::format(
        "Beaker could not create evaluator {}: {}", name, detail.empty() ? "no detail" : detail));
  }
  auto parsed = OrderedJson::parse(result.out, nullptr, false);
  if (parsed.is_discarded()) {
    throw tool_error(
        fmt::format("Beaker created evaluator {} but printed no JSON: {}", name, result.out));
  }
  return OrderedJson{{"experiment_name", name}, {"beaker", std::move(parsed)}};
}

// Services are up (`service`); builds the evaluator's request and creates it, rolling the
// services back on any failure (or interrupt) until the evaluator exists.
OrderedJson launch_evaluator(const std::function<EvaluationRequest()> &make_request,
                             const OrderedJson &service,
                             const signals::Scope & /*noting interrupts*/,
                             Effects &effects) {
  const auto ids = receipt_experiment_ids(service);
  if (ids.size() != 1) {
    Error error = tool_error(fmt::format(
        "Beaker receipt did not contain exactly one experiment ID: [{}]; the evaluator was not "
        "submitted",
        text::join(ids, ", ")));
    error.add_context(fmt::format("the service stack {} was launched and is NOT stopped",
                                  service.value("experiment_name", "(unnamed)")));
    for (const auto &id : ids) {
      error.add_context(fmt::format("to stop it: beaker experiment stop {}", id));
    }
    throw error;
  }
  const std::string &service_id = ids.front();
  const std::string service_name = service.value("experiment_name", "");
  std::string root;
  OrderedJson evaluation;
  try {
    signals::Scope::throw_if_pending("after the services were launched");
    const EvaluationRequest request = make_request();
    const auto config = service_config(request);
    root = coordination_root(config, service_name);
    const std::string name = evaluation_experiment_name(request, service_name);
    const auto spec = evaluator_spec_json(evaluator_experiment(request, config, root, service_id));
    spdlog::info("service experiment {} launched; creating evaluator {}", service_id, name);
    evaluation = create_evaluator(effects.beaker, name, request.workspace, spec);
    if (signals::Scope::pending() != 0) {
      spdlog::warn("interrupted, but evaluator {} was already created; its worker owns the "
                   "services now",
                   name);
    }
  } catch (const Error &error) {
    roll_back(error, service_id, effects.beaker);
  } catch (const std::exception &error) {
    roll_back(failure(fmt::format("evaluator submission failed: {}", error.what())),
              service_id,
              effects.beaker);
  }
  OrderedJson receipt = OrderedJson::object();
  receipt["service_experiment_id"] = service_id;
  receipt["evaluation_experiment_id"] = single_experiment_id(evaluation);
  receipt["coordination_root"] = root;
  receipt["service"] = service;
  receipt["evaluation"] = evaluation;
  return receipt;
}

std::string launch_receipt_path(const std::string &receipt_path) {
  const stdfs::path path(receipt_path);
  return (path.parent_path() / (path.stem().string() + ".launch.json")).string();
}

} // namespace

Loaded load_yaml(const std::string &path_text, const LoadOptions &options) {
  Loaded loaded;
  loaded.source = path_text;
  const auto text = fs::read_file(path_text);
  const auto document = yaml::parse_yaml(text, path_text);
  std::error_code ec;
  auto absolute = stdfs::absolute(path_text, ec).lexically_normal();
  if (document.root.is_mapping()) {
    if (const auto *workflow = document.root.find("workflow");
        workflow != nullptr && workflow->value.is_string()) {
      loaded.workflow = workflow->value.text;
    }
  }
  try {
    loaded.description = load_description(document, absolute, options);
    loaded.workflow = loaded.description->workflow;
  } catch (const Error &error) {
    if (loaded.workflow.empty() || is_builtin_workflow(loaded.workflow) ||
        error.code() != static_cast<int>(ExitCode::bad_input)) {
      throw;
    }
    loaded.deferred = error;
  }
  return loaded;
}

std::vector<OrderedJson> preview_yamls(const std::vector<Loaded> &loaded, Effects &effects) {
  std::vector<HelperJob> jobs;
  jobs.reserve(loaded.size());
  for (const auto &item : loaded) {
    jobs.push_back(job_for(item, false));
  }
  const auto answer = effects.helper.run(jobs);
  std::vector<OrderedJson> previews;
  for (size_t i = 0; i < loaded.size(); ++i) {
    const auto &job = answer.jobs[i];
    check_stopped(loaded[i], job, answer, effects.helper.python());
    if (loaded[i].deferred) {
      throw *loaded[i].deferred;
    }
    const Finished finished = finish(loaded[i], job);
    if (!finished.from_jtc.empty()) {
      spdlog::info("{}: {} template(s) found in JTC's packaged resources",
                   loaded[i].source,
                   finished.from_jtc.size());
    }
    const auto service = literegistry_result(job, *jobs[i].services, effects.helper.python());
    auto preview = preview_json(finished.request, service);
    if (finished.description.kind == Kind::rubric_audit) {
      preview = audit_preview(finished.description, job, std::move(preview));
    }
    previews.push_back(std::move(preview));
  }
  return previews;
}

// Stages the evaluator's primebeaker (at `local`, where this machine sees the mount) before any
// service is launched, so that a failed stage costs nothing (docs/staging.md).
void stage_worker(const EvaluationRequest &request,
                  const std::function<stdfs::path(const std::string &)> &local,
                  Effects &effects) {
  if (!request.staged_worker.empty()) {
    effects.stager.stage(local(stdfs::path(request.staged_worker).parent_path().string()));
  }
}

OrderedJson submit_yaml(const Loaded &loaded, Effects &effects) {
  if (loaded.description) {
    // Everything checkable is checked, and the local snapshots written, before anything runs.
    const Description &description = *loaded.description;
    const auto request =
        finished_request(description, workload_with_snapshots(description, description.workload));
    evaluator_experiment(
        request, service_config(request), "/preflight", std::string(k_service_id_placeholder));
    for (const auto &ref : description.templates) {
      if (ref.path) {
        write_snapshot(description.local_path(ref.snapshot), ref.content);
      }
    }
    stage_worker(
        request, [&](const std::string &path) { return description.local_path(path); }, effects);
  }
  const HelperJob job = job_for(loaded, true);
  const signals::Scope interrupts; // until the evaluator exists
  const auto answer = effects.helper.run({job});
  const auto &job_answer = answer.jobs.front();
  if (const auto done = check_stopped(loaded, job_answer, answer, effects.helper.python())) {
    const Description &description = *loaded.description;
    const bool existing = done->value("status", "") == "complete_existing";
    OrderedJson receipt = OrderedJson::object();
    receipt["workflow"] = description.workflow;
    receipt["status"] = (*done)["status"];
    receipt["compute_launched"] = false;
    receipt[existing ? "checked_at" : "completed_at"] = answer.now;
    receipt["expected_records"] = done->value("expected_records", OrderedJson(nullptr));
    receipt["audit_dir"] = description.snapshot_root;
    receipt["overall"] = done->value("overall", OrderedJson(nullptr));
    if (!description.audit_receipt_path.empty()) {
      fs::write_file_atomic(description.local_path(description.audit_receipt_path),
                            to_pretty_json(receipt));
    }
    return receipt;
  }
  if (loaded.deferred) {
    throw *loaded.deferred;
  }
  const auto service = literegistry_result(job_answer, *job.services, effects.helper.python());
  // Inside the rollback scope: a template JTC found that cannot be snapshotted stops the
  // services again.
  const auto make_request = [&] {
    const Finished finished = finish(loaded, job_answer);
    for (const size_t index : finished.from_jtc) {
      const auto &ref = finished.description.templates[index];
      write_snapshot(finished.description.local_path(ref.snapshot), ref.content);
    }
    return finished.request;
  };
  OrderedJson receipt = launch_evaluator(make_request, service, interrupts, effects);
  if (loaded.description->kind == Kind::rubric_audit) {
    const Description &description = *loaded.description;
    OrderedJson launch = OrderedJson::object();
    launch["workflow"] = description.workflow;
    launch["status"] = "scheduled";
    launch["compute_launched"] = true;
    launch["scheduled_at"] = answer.now;
    const auto &audit = job_answer["audit"];
    launch["expected_records"] = audit.is_object()
                                     ? audit.value("expected_records", OrderedJson(nullptr))
                                     : OrderedJson(nullptr);
    for (const auto &[key, value] : receipt.items()) {
      launch[key] = value;
    }
    if (!description.audit_receipt_path.empty()) {
      fs::write_file_atomic(
          description.local_path(launch_receipt_path(description.audit_receipt_path)),
          to_pretty_json(launch));
    }
    return launch;
  }
  return receipt;
}

OrderedJson preview_request(const EvaluationRequest &request, Effects &effects) {
  HelperJob job;
  job.services = launcher_config(service_config(request), request.service_origins, "request");
  const auto answer = effects.helper.run({job});
  return preview_json(
      request, literegistry_result(answer.jobs.front(), *job.services, effects.helper.python()));
}

OrderedJson submit_request(const EvaluationRequest &request, Effects &effects) {
  evaluator_experiment(
      request, service_config(request), "/preflight", std::string(k_service_id_placeholder));
  stage_worker(
      request, [](const std::string &path) { return stdfs::path(path); }, effects);
  HelperJob job;
  job.action = "submit";
  job.services = launcher_config(service_config(request), request.service_origins, "request");
  const signals::Scope interrupts; // until the evaluator exists
  const auto answer = effects.helper.run({job});
  const auto service =
      literegistry_result(answer.jobs.front(), *job.services, effects.helper.python());
  return launch_evaluator([&request] { return request; }, service, interrupts, effects);
}

HelperAnswer list_workflows(Effects &effects) {
  auto answer = effects.helper.run({});
  if (answer.workflow_source == "jtc") {
    spdlog::info("{}", fallback_note(answer, effects.helper.python()));
  } else {
    spdlog::warn("{}", fallback_note(answer, effects.helper.python()));
  }
  return answer;
}

} // namespace pb::evaluation
