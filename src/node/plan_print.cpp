// SPDX-License-Identifier: MIT
// A ReplicaPlan as people read it (`node rl|sft|single --dry-run`) and as JSON (`--json`).
#include <primebeaker/core/text.hpp>
#include <primebeaker/node/replica_plan.hpp>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <vector>

namespace pb::node {

namespace {

std::string redacted(const ReplicaPlan &plan, std::string text) {
  for (const auto &[secret, shown] : plan.redact) {
    for (size_t pos = text.find(secret); pos != std::string::npos;
         pos = text.find(secret, pos + shown.size())) {
      text.replace(pos, secret.size(), shown);
    }
  }
  return text;
}

const char *mode_name(LogSpec::Mode mode) {
  switch (mode) {
  case LogSpec::Mode::tee:
    return "tee";
  case LogSpec::Mode::truncate:
    return "truncate";
  case LogSpec::Mode::append:
    return "append";
  case LogSpec::Mode::discard:
    return "discard";
  default:
    return "inherit";
  }
}

nlohmann::json process_json(const ProcessSpec &p) {
  nlohmann::json when = nlohmann::json::array();
  for (const auto &[fact, args] : p.when) {
    when.push_back({{"fact", fact}, {"args", args}});
  }
  nlohmann::json log = {{"mode", mode_name(p.log.mode)}};
  if (!p.log.path.empty()) {
    log["path"] = p.log.path.string();
  }
  if (p.log.strip_rank_prefix) {
    log["strip_rank_prefix"] = true;
  }
  nlohmann::json j = {{"name", p.name}, {"argv", p.argv}};
  if (!p.when.empty()) {
    j["when"] = when;
  }
  if (!p.component_env.empty()) {
    j["component_env"] = p.component_env;
  }
  j["env"] = p.env;
  if (!p.gpus.empty()) {
    j["gpus"] = p.gpus;
  }
  j["ports"] = p.ports;
  j["log"] = log;
  return j;
}

struct JsonStep {
  nlohmann::json operator()(const step::MakeDirs &s) const {
    nlohmann::json dirs = nlohmann::json::array();
    for (const auto &d : s.dirs) {
      dirs.push_back(d.string());
    }
    return {{"step", "make_dirs"}, {"dirs", dirs}};
  }
  nlohmann::json operator()(const step::JoinAttempt &s) const {
    return {{"step", "join_attempt"},
            {"rendezvous_dir", s.rendezvous_dir.string()},
            {"timeout_seconds", s.timeout_seconds},
            {"binds", {"attempt_dir"}}};
  }
  nlohmann::json operator()(const step::DecideResume &s) const {
    const auto &r = s.request;
    nlohmann::json j = {
        {"step", "decide_resume"},
        {"replica", r.replica},
        {"trainer_ranks",
         s.trainer_ranks_from_toml ? nlohmann::json() : nlohmann::json(r.trainer_ranks)},
        {"decides", s.leader},
        {"output_dir", r.output_dir.string()},
        {"max_recoveries", r.policy.max_recoveries},
        {"max_restarts_on_errors", r.policy.max_restarts_on_errors},
        {"binds", {"resume"}}};
    if (r.generation == primerl::Generation::v0_9) {
      j["run_dir"] = (r.output_dir / r.run_dir_name).string();
    }
    return j;
  }
  nlohmann::json operator()(const step::Run &s) const {
    return {{"step", "run"},
            {"process", process_json(s.process)},
            {"failure", s.failure},
            {"failure_code", s.failure_code}};
  }
  nlohmann::json operator()(const step::RequirePrograms &s) const {
    return {{"step", "require_programs"}, {"programs", s.programs}};
  }
  nlohmann::json operator()(const step::CheckConfig &s) const {
    return {{"step", "check_config"},
            {"config_path", s.config_path.string()},
            {"readable_paths", s.readable_paths}};
  }
  nlohmann::json operator()(const step::WriteRuntimeToml &s) const {
    nlohmann::json j = {{"step", "write_runtime_toml"},
                        {"from", s.config_path.string()},
                        {"path", s.path.string()},
                        {"rewrite_environment_ids", s.rewrite_environment_ids},
                        {"uses", {"resume"}}};
    if (s.generation == primerl::Generation::v0_9) {
      j["run_name"] = s.run_name;
    }
    return j;
  }
  nlohmann::json operator()(const step::RaiseOpenFiles &s) const {
    nlohmann::json j = {{"step", "raise_open_files"}, {"limit", s.limit}};
    if (s.unlimited_locked_memory) {
      j["locked_memory"] = "unlimited";
    }
    return j;
  }
  nlohmann::json operator()(const step::WriteFile &s) const {
    return {{"step", "write_file"}, {"path", s.path}, {"content", s.content}};
  }
  nlohmann::json operator()(const step::WaitPort &s) const {
    return {{"step", "wait_port"},
            {"what", s.what},
            {"host", s.host},
            {"port", s.port},
            {"timeout_seconds", s.timeout_seconds}};
  }
  nlohmann::json operator()(const step::SetEnv &s) const {
    return {{"step", "set_env"}, {"env", s.env}};
  }
  nlohmann::json operator()(const step::Publish &s) const {
    return {{"step", "publish"}, {"file", s.file}, {"content", s.content}};
  }
  nlohmann::json operator()(const step::WaitFor &s) const {
    return {{"step", "wait_for"},
            {"file", s.file},
            {"timeout_seconds", s.timeout_seconds},
            {"binds", {s.fact}}};
  }
  nlohmann::json operator()(const step::ResolveConfig &s) const {
    return {{"step", "resolve_config"},
            {"runs_helper", s.leader},
            {"request", nlohmann::json::parse(s.request_json)},
            {"request_path", s.request_path.string()},
            {"result_path", s.result_path.string()},
            {"process", process_json(s.helper)},
            {"components", s.components},
            {"binds", {"runtime.*"}}};
  }
  nlohmann::json operator()(const step::BindWorkers &s) const {
    return {{"step", "bind_workers"},
            {"nodes", s.total_nodes},
            {"expected_ranks", s.expected_ranks},
            {"binds", {"workers", "admin_urls"}}};
  }
  nlohmann::json operator()(const step::Start &s) const {
    return {{"step", "start"}, {"process", process_json(s.process)}};
  }
  nlohmann::json operator()(const step::StartInferenceServers &s) const {
    nlohmann::json j = {
        {"step", "start_inference_servers"},
        {"gpus", {{"start", s.slice.start}, {"count", s.slice.count}}},
        {"per_server", "${runtime.INFERENCE_TP} GPUs, ${port} = ${" + s.port_fact + "} + ${k}"},
        {"dirs", s.dirs},
        {"process", process_json(s.each)}};
    if (!s.files.empty()) {
      j["files"] = nlohmann::json::object();
      for (const auto &[path, content] : s.files) {
        j["files"][path] = content;
      }
    }
    return j;
  }
  nlohmann::json operator()(const step::Pause &s) const {
    return {{"step", "pause"}, {"seconds", s.seconds}};
  }
  nlohmann::json operator()(const step::Probe &s) const {
    return {{"step", "probe"},
            {"process", process_json(s.process)},
            {"attempts", s.attempts},
            {"interval_seconds", s.interval_seconds},
            {"failure", s.failure}};
  }
  nlohmann::json operator()(const step::AwaitExit &s) const {
    return {{"step", "await_exit"}, {"processes", s.processes}};
  }
};

// Shell-quoted words, except that ${...} placeholders are shown as they are.
std::string quoted(const proc::Argv &argv) {
  std::vector<std::string> words;
  for (const auto &a : argv) {
    std::string plain = a;
    for (size_t open = plain.find("${"); open != std::string::npos; open = plain.find("${")) {
      const size_t close = plain.find('}', open);
      if (close == std::string::npos) {
        break;
      }
      plain.replace(open, close - open + 1, "x");
    }
    words.push_back(text::shell_quote(plain) == plain ? a : text::shell_quote(a));
  }
  return text::join(words, " ");
}

std::string seconds(double value) {
  return fmt::format("{:g} s", value);
}

void process_text(std::string &out, const ProcessSpec &p) {
  out += "       argv: " + quoted(p.argv) + "\n";
  for (const auto &[fact, args] : p.when) {
    out += "       + when ${" + fact + "} = 1: " + quoted(args) + "\n";
  }
  if (!p.component_env.empty()) {
    out += "       env:  runtime/" + p.component_env + ".env\n";
  }
  for (const auto &[k, v] : p.env) {
    out += "       env:  " + k + "=" + text::shell_quote(v) + "\n";
  }
  if (!p.gpus.empty()) {
    out += "       GPUs: " + p.gpus + "\n";
  }
  if (!p.ports.empty()) {
    out += "       ports: " + text::join(p.ports, " ") + "\n";
  }
  if (p.log.mode != LogSpec::Mode::inherit) {
    const char *how = p.log.mode == LogSpec::Mode::tee        ? " (appended, and on stdout)"
                      : p.log.mode == LogSpec::Mode::append   ? " (appended)"
                      : p.log.mode == LogSpec::Mode::truncate ? " (truncated first)"
                                                              : "discarded";
    out += fmt::format("       log:  {}{}{}\n",
                       p.log.path.string(),
                       how,
                       p.log.strip_rank_prefix ? " (rank prefix stripped)" : "");
  }
}

struct TextStep {
  std::string &out;
  void operator()(const step::MakeDirs &s) const {
    out += "make directories\n";
    for (const auto &d : s.dirs) {
      out += "       " + d.string() + "\n";
    }
  }
  void operator()(const step::JoinAttempt &s) const {
    out += fmt::format("join the attempt under {} (timeout {} s) -> ${{attempt_dir}}\n",
                       s.rendezvous_dir.string(),
                       s.timeout_seconds);
  }
  void operator()(const step::DecideResume &s) const {
    const auto &r = s.request;
    if (!s.leader) {
      out += "wait for replica 0's resume decision (recovery.json) -> ${resume}\n";
      return;
    }
    out += fmt::format("decide the resume point from the checkpoints under {} ({}), record the "
                       "start in the ledger{} -> ${{resume}}\n",
                       r.generation == primerl::Generation::v0_9
                           ? "the Prime-RL v0.9 run directory " +
                                 (r.output_dir / r.run_dir_name).string()
                           : r.output_dir.string(),
                       s.trainer_ranks_from_toml
                           ? std::string("deployment.num_train_gpus trainer ranks of the TOML")
                           : fmt::format("{} trainer ranks", r.trainer_ranks),
                       s.publish ? ", publish recovery.json" : "");
    out += fmt::format("       budget: {} preemption recoveries, {} restarts after errors\n",
                       r.policy.max_recoveries,
                       r.policy.max_restarts_on_errors);
  }
  void operator()(const step::Run &s) const {
    out += "run " + s.process.name + " to its end (failure: exit " +
           std::to_string(s.failure_code) + ")\n";
    process_text(out, s.process);
  }
  void operator()(const step::RequirePrograms &s) const {
    out += "require on PATH: " + text::join(s.programs, " ") + "\n";
  }
  void operator()(const step::CheckConfig &s) const {
    out += "check " + s.config_path.string() +
           (s.readable_paths.empty()
                ? std::string()
                : " and that its " + text::join(s.readable_paths, ", ") + " name readable files") +
           "\n";
  }
  void operator()(const step::WriteRuntimeToml &s) const {
    std::vector<std::string> what;
    if (s.rewrite_environment_ids) {
      what.emplace_back("environment ids rewritten to the bundled modules");
    }
    what.emplace_back("${resume}");
    if (s.generation == primerl::Generation::v0_9 && !s.run_name.empty()) {
      what.push_back("run.name = " + s.run_name + " when it names no run");
    }
    out += "write " + s.path.string() + ": " + s.config_path.string() + " with " +
           text::join(what, ", ") + "\n";
  }
  void operator()(const step::RaiseOpenFiles &s) const {
    out += fmt::format("raise the open-file limit to {}{}\n",
                       s.limit,
                       s.unlimited_locked_memory ? ", the locked-memory limit to unlimited" : "");
  }
  void operator()(const step::WriteFile &s) const {
    out += "write " + s.path + ":\n";
    const bool ends_line = !s.content.empty() && s.content.back() == '\n';
    for (const auto &line :
         text::split(std::string_view(s.content).substr(0, s.content.size() - ends_line), '\n')) {
      out += "       | " + line + "\n";
    }
  }
  void operator()(const step::WaitPort &s) const {
    out += fmt::format(
        "wait for {} on {}:{} (timeout {} s)\n", s.what, s.host, s.port, s.timeout_seconds);
  }
  void operator()(const step::SetEnv &s) const {
    out += "set for every later child:";
    for (const auto &[k, v] : s.env) {
      out += " " + k + "=" + v;
    }
    out += "\n";
  }
  void operator()(const step::Publish &s) const {
    std::string content = s.content;
    if (!content.empty() && content.back() == '\n') {
      content.pop_back();
    }
    out += "publish " + s.file + " = " + content + "\n";
  }
  void operator()(const step::WaitFor &s) const {
    out +=
        fmt::format("wait for {} (timeout {} s) -> ${{{}}}\n", s.file, s.timeout_seconds, s.fact);
  }
  void operator()(const step::ResolveConfig &s) const {
    if (s.leader) {
      out += "resolve " + s.config_path.string() +
             " through Prime-RL (the config helper, with ${resume}), publish runtime/* (" +
             text::join(s.components, ", ") + ") -> ${runtime.*}\n";
      out += "       request: " + s.request_json + " in " + s.request_path.string() +
             ", answer in " + s.result_path.string() + "\n";
      process_text(out, s.helper);
    } else {
      out += "wait for replica 0's resolved config (runtime/runtime.ready) -> ${runtime.*}\n";
    }
  }
  void operator()(const step::BindWorkers &s) const {
    out += fmt::format("list the inference workers of the {} nodes (layout.N, host.N, "
                       "${{runtime.INFERENCE_TP}}, ${{runtime.BACKEND_PORT}}; expect {}) -> "
                       "${{workers}} ${{admin_urls}}\n",
                       s.total_nodes,
                       s.expected_ranks);
  }
  void operator()(const step::Start &s) const {
    out += "start " + s.process.name + "\n";
    process_text(out, s.process);
  }
  void operator()(const step::StartInferenceServers &s) const {
    out += fmt::format("start one inference server per ${{runtime.INFERENCE_TP}} GPUs of {} "
                       "(server ${{k}}: ${{gpus}} its block, ${{port}} = "
                       "${{{}}} + ${{k}})\n",
                       gpu_range(s.slice),
                       s.port_fact);
    for (const auto &d : s.dirs) {
      out += "       dir:  " + d + "\n";
    }
    for (const auto &[path, content] : s.files) {
      out += "       file: " + path + " = " + content + "\n";
    }
    process_text(out, s.each);
  }
  void operator()(const step::Pause &s) const { out += "pause " + seconds(s.seconds) + "\n"; }
  void operator()(const step::Probe &s) const {
    out += fmt::format("probe up to {} times, {} apart, until it succeeds\n",
                       s.attempts,
                       seconds(s.interval_seconds));
    process_text(out, s.process);
  }
  void operator()(const step::AwaitExit &s) const {
    out += s.processes.empty() ? std::string("serve until the job ends (a peer's verdict)\n")
                               : "wait until " + text::join(s.processes, " and ") + " exit 0\n";
  }
};

} // namespace

std::string plan_json(const ReplicaPlan &plan) {
  nlohmann::json steps = nlohmann::json::array();
  for (const auto &s : plan.steps) {
    steps.push_back(std::visit(JsonStep{}, s));
  }
  nlohmann::json j = {{"command", plan.command},
                      {"rank", plan.rank},
                      {"total_nodes", plan.total_nodes},
                      {"role", plan.role},
                      {"summary", plan.summary},
                      {"working_dir", plan.working_dir.string()},
                      {"rendezvous_dir", plan.rendezvous_dir.string()},
                      {"local_tmp", plan.local_tmp.string()},
                      {"env", plan.env},
                      {"on_exit", plan.on_exit},
                      {"stop_grace_seconds", plan.tuning.stop_grace_seconds},
                      {"steps", steps}};
  return redacted(plan, j.dump(2) + "\n");
}

std::string plan_text(const ReplicaPlan &plan) {
  std::string out = fmt::format(
      "{}, replica {} of {}: {}\n", plan.command, plan.rank, plan.total_nodes, plan.summary);
  out += "working dir: " + plan.working_dir.string() + "\n";
  out += "every child also gets:";
  for (const auto &[k, v] : plan.env) {
    out += " " + k + "=" + text::shell_quote(v);
  }
  out += "\n";
  if (plan.rendezvous_dir.empty()) {
    out += fmt::format("on exit (any path): record the end in the ledger; stop every child "
                       "(SIGTERM, {} grace, SIGKILL)\n",
                       seconds(plan.tuning.stop_grace_seconds));
  } else {
    out += fmt::format("on exit (any path): publish status.{}, {}shutdown.requested on failure; "
                       "stop every child (SIGTERM, {} grace, SIGKILL){}\n",
                       plan.rank,
                       plan.publishes_complete ? "complete on success, " : "",
                       seconds(plan.tuning.stop_grace_seconds),
                       plan.on_exit.empty() ? std::string() : "; then " + quoted(plan.on_exit));
  }
  out += "${...}: values learned while running, bound by the step marked ->\n";
  int n = 0;
  for (const auto &s : plan.steps) {
    out += fmt::format("{:>3}. ", ++n);
    std::visit(TextStep{out}, s);
  }
  return redacted(plan, out);
}

} // namespace pb::node
