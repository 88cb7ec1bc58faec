// SPDX-License-Identifier: MIT
// `primebeaker status`: the replica table plus what only the run's files and registry know
// (registry readiness, newest complete checkpoint, W&B URL), docs/runs.md "status".
#include "status.hpp"

#include <primebeaker/checkpoints/scan.hpp>
#include <primebeaker/checkpoints/topology.hpp>
#include <primebeaker/core/error.hpp>
#include <primebeaker/core/text.hpp>
#include <primebeaker/recovery/ledger.hpp>
#include <primebeaker/registry/registry.hpp>
#include <primebeaker/registry/wait.hpp>
#include <primebeaker/runs/recover.hpp>
#include <primebeaker/toml/value.hpp>

#include <fmt/format.h>

#include <cctype>
#include <cstdio>
#include <ctime>
#include <sstream>

namespace pb::runs {

namespace {

std::optional<std::string> env_value(const RunView &run, const char *name) {
  const auto it = run.env.find(name);
  if (it == run.env.end() || it->second.empty()) {
    return std::nullopt;
  }
  return it->second;
}

OrderedJson time_json(const std::optional<TimePoint> &time) {
  return time ? OrderedJson(format_time(*time)) : OrderedJson(nullptr);
}

std::optional<std::string> toml_string(const toml::Document &document,
                                       std::initializer_list<std::string_view> keys) {
  const auto *value = document.root().find_path(keys);
  if (value != nullptr && value->string() != nullptr && !value->string()->empty()) {
    return *value->string();
  }
  return std::nullopt;
}

} // namespace

std::string format_time(TimePoint time) {
  const auto seconds = std::chrono::time_point_cast<std::chrono::seconds>(time);
  const auto millis = std::chrono::duration_cast<std::chrono::milliseconds>(time - seconds).count();
  const std::time_t t = std::chrono::system_clock::to_time_t(seconds);
  std::tm tm{};
  ::gmtime_r(&t, &tm);
  char buffer[32];
  std::strftime(buffer, sizeof buffer, "%Y-%m-%dT%H:%M:%S", &tm);
  return fmt::format("{}.{:03}Z", buffer, millis);
}

std::string lower_case(std::string_view text) {
  std::string out(text);
  for (auto &c : out) {
    c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  }
  return out;
}

std::string render_table(const std::vector<std::vector<std::string>> &rows) {
  std::vector<std::size_t> widths;
  for (const auto &row : rows) {
    widths.resize(std::max(widths.size(), row.size()), 0);
    for (std::size_t i = 0; i < row.size(); ++i) {
      widths[i] = std::max(widths[i], row[i].size());
    }
  }
  std::string out;
  for (const auto &row : rows) {
    for (std::size_t i = 0; i < row.size(); ++i) {
      out += i + 1 < row.size() ? fmt::format("{:<{}}  ", row[i], widths[i]) : row[i];
    }
    out += '\n';
  }
  return out;
}

std::string experiment_url(const RunView &run, const RunTarget &target) {
  if (target.experiment_url) {
    return *target.experiment_url;
  }
  return "https://beaker.org/ex/" + run.id;
}

std::string service_experiment_id(const RunView &run, const RunTarget &target) {
  if (!target.service_experiment_id.empty()) {
    return target.service_experiment_id;
  }
  return env_value(run, "PRIMEBEAKER_MANAGED_SERVICE_EXPERIMENT_ID").value_or("");
}

OrderedJson registry_readiness(const RunView &run, TimePoint now) {
  const auto uri = env_value(run, "REGISTRY");
  if (!uri) {
    return nullptr;
  }
  OrderedJson out = OrderedJson::object();
  out["uri"] = *uri;
  try {
    const auto required = registry::parse_requirements_json(
        env_value(run, "REQUIRED_LITEREGISTRY_SERVICES").value_or("{}"));
    auto store = registry::open_registry(*uri);
    out["uri"] = store->display();
    const auto live = registry::count_by_service(
        store->live_servers(registry::epoch_seconds(now), registry::k_default_heartbeat_window));
    OrderedJson services = OrderedJson::object();
    bool ready = true;
    for (const auto &[name, count] : required) {
      const auto it = live.find(name);
      const int observed = it == live.end() ? 0 : it->second;
      services[name] = {{"required", count}, {"live", observed}};
      ready = ready && observed >= count;
    }
    for (const auto &[name, count] : live) {
      if (!required.count(name)) {
        services[name] = {{"required", 0}, {"live", count}};
      }
    }
    out["ready"] = ready;
    out["services"] = services;
  } catch (const Error &error) {
    out["ready"] = nullptr;
    out["error"] = error.what();
  }
  return out;
}

OrderedJson newest_checkpoint(const RunView &run) {
  const auto config = env_value(run, "CONFIG_PATH");
  if (!config) {
    return nullptr;
  }
  OrderedJson out = OrderedJson::object();
  out["config_path"] = *config;
  try {
    const auto document = toml::Document::load(*config);
    const std::filesystem::path working_dir = env_value(run, "WORKING_DIR").value_or("/");
    // A v0.9 run the launch named lives in the directory its spec says (PRIME_RL_RUN_DIR).
    const auto source = checkpoints::source_from_toml(
        document, working_dir, env_value(run, "PRIME_RL_RUN_DIR").value_or(""));
    out["output_dir"] = source.output_dir.string();
    const auto listing = checkpoints::list_steps(source);
    const auto step = checkpoints::newest_complete(checkpoints::evaluate(listing));
    out["newest_complete_step"] = step ? OrderedJson(*step) : OrderedJson(nullptr);
  } catch (const Error &error) {
    out["newest_complete_step"] = nullptr;
    out["error"] = error.what();
  }
  return out;
}

int beaker_restarts(const RunView &run) {
  int most = 0;
  for (const auto &replica : run.replicas) {
    most = std::max(most, replica.attempts - 1);
  }
  return most;
}

OrderedJson recovery_history(const RunView &run, const OrderedJson &checkpoint, TimePoint now) {
  // Where the node runtime keeps it (OUTPUT_DIR, else the checkpoint's output_dir; the W&B
  // run id), the same place `follow --recover` and `list` read.
  auto where = ledger_location(run);
  if (where.dir.empty()) {
    const auto run_id = env_value(run, "WANDB_RUN_ID");
    if (!run_id || !checkpoint.is_object() || !checkpoint.contains("output_dir")) {
      return nullptr;
    }
    where.dir = recovery::ledger::directory(checkpoint["output_dir"].get<std::string>(),
                                            recovery::ledger::run_key(*run_id));
  }
  namespace ledger = recovery::ledger;
  const auto &dir = where.dir;
  OrderedJson out = OrderedJson::object();
  out["ledger"] = dir.string();
  try {
    const auto history = ledger::read(dir);
    const double now_unix = std::chrono::duration<double>(now.time_since_epoch()).count();
    const OrderedJson summary = ledger::to_json(ledger::summarize(history, now_unix));
    for (const auto &[key, value] : summary.items()) {
      out[key] = value;
    }
    out["last_refusal"] = nullptr;
    if (const auto *last = history.last(); last != nullptr && !last->start.refused.empty()) {
      out["last_refusal"] = last->start.refused;
    }
  } catch (const Error &error) {
    out["error"] = error.what();
  }
  out["beaker_restarts"] = beaker_restarts(run);
  out["controller"] = controller_view(run);
  return out;
}

namespace {

std::string recovery_line(const OrderedJson &r) {
  if (r.contains("error")) {
    return "unavailable: " + r["error"].get<std::string>();
  }
  if (r["attempts"].get<std::int64_t>() == 0) {
    return fmt::format("no start recorded yet (Beaker restarts: {})",
                       r["beaker_restarts"].get<int>());
  }
  std::vector<std::string> lost;
  for (const auto &n : r["steps_lost_per_preemption"]) {
    lost.push_back(std::to_string(n.get<std::int64_t>()));
  }
  std::string line = fmt::format(
      "{} attempt{}: {} preemption{} recovered, {} restart{} on errors, {} resubmission{}",
      r["attempts"].get<std::int64_t>(),
      r["attempts"].get<std::int64_t>() == 1 ? "" : "s",
      r["preemptions_recovered"].get<std::int64_t>(),
      r["preemptions_recovered"].get<std::int64_t>() == 1 ? "" : "s",
      r["error_restarts"].get<std::int64_t>(),
      r["error_restarts"].get<std::int64_t>() == 1 ? "" : "s",
      r["resubmissions"].get<std::int64_t>(),
      r["resubmissions"].get<std::int64_t>() == 1 ? "" : "s");
  if (!lost.empty()) {
    line += "; steps lost per preemption: " + text::join(lost, ", ");
  }
  line += fmt::format("; useful {} of {}",
                      duration_text(r["useful_seconds"].get<double>()),
                      duration_text(r["total_seconds"].get<double>()));
  if (!r["last_resume_step"].is_null()) {
    line += fmt::format("; last resumed from step {}", r["last_resume_step"].get<std::int64_t>());
  }
  if (!r["last_refusal"].is_null()) {
    line += "; last start refused: " + r["last_refusal"].get<std::string>();
  }
  return line;
}

} // namespace

std::string chain_line(const OrderedJson &chain) {
  std::vector<std::string> parts;
  for (const auto &link : chain["experiments"]) {
    std::string part = link["experiment_id"].get<std::string>();
    if (link["from"].is_string()) {
      part += " (from " + link["from"].get<std::string>() + ")";
    }
    parts.push_back(std::move(part));
  }
  const auto recoveries = chain["recoveries"].get<std::int64_t>();
  const auto restarts = chain["restarts_on_errors"].get<std::int64_t>();
  std::string line = fmt::format("{}; {} of {} recover{} used",
                                 text::join(parts, " -> "),
                                 recoveries,
                                 chain["max_recoveries"].get<std::int64_t>(),
                                 chain["max_recoveries"].get<std::int64_t>() == 1 ? "y" : "ies");
  if (restarts > 0) {
    line += fmt::format(", {} of {} restarts on errors",
                        restarts,
                        chain["max_restarts_on_errors"].get<std::int64_t>());
  }
  const auto lost = chain["steps_lost"].get<std::int64_t>();
  line += fmt::format("; {} step{} lost", lost, lost == 1 ? "" : "s");
  return line;
}

std::optional<std::string> wandb_url(const RunView &run, const RunTarget &target) {
  if (target.wandb_url) {
    return target.wandb_url;
  }
  const auto run_id = env_value(run, "WANDB_RUN_ID");
  const auto config = env_value(run, "CONFIG_PATH");
  if (!run_id || !config) {
    return std::nullopt;
  }
  try {
    const auto document = toml::Document::load(*config);
    const auto project = toml_string(document, {"wandb", "project"});
    auto entity = toml_string(document, {"wandb", "entity"});
    if (!entity) {
      entity = env_value(run, "WANDB_ENTITY");
    }
    const auto *offline = document.root().find_path({"wandb", "offline"});
    if (!project || !entity || (offline != nullptr && offline->boolean().value_or(false))) {
      return std::nullopt;
    }
    return fmt::format("https://wandb.ai/{}/{}/runs/{}",
                       text::percent_encode(*entity),
                       text::percent_encode(*project),
                       text::percent_encode(*run_id));
  } catch (const Error &) {
    return std::nullopt;
  }
}

OrderedJson replica_json(const Replica &replica) {
  OrderedJson out = OrderedJson::object();
  out["role"] = replica.role;
  out["rank"] = replica.rank;
  out["task"] = replica.task_name.empty() ? replica.task_id : replica.task_name;
  out["job_id"] = replica.job_id;
  out["node"] = replica.node.empty() ? OrderedJson(nullptr) : OrderedJson(replica.node);
  out["state"] = std::string(state_name(replica.state));
  out["exit_code"] = replica.exit_code ? OrderedJson(*replica.exit_code) : OrderedJson(nullptr);
  out["detail"] = replica.detail;
  out["canceled_code"] = replica.canceled_code;
  out["canceled_for"] =
      replica.canceled_for.empty() ? OrderedJson(nullptr) : OrderedJson(replica.canceled_for);
  out["consequence"] = replica.consequence;
  out["attempts"] = replica.attempts;
  out["preemptions"] = replica.preemptions;
  out["scheduled"] = time_json(replica.scheduled);
  out["ready"] = time_json(replica.ready);
  out["started"] = time_json(replica.started);
  out["finalized"] = time_json(replica.finalized);
  return out;
}

OrderedJson status_json(const RunView &run, const RunTarget &target, const StatusExtras &extras) {
  OrderedJson out = OrderedJson::object();
  out["experiment_id"] = run.id;
  out["name"] = run.name;
  out["full_name"] = run.full_name;
  out["workspace"] = run.workspace;
  out["author"] = run.author;
  out["url"] = experiment_url(run, target);
  out["outcome"] = std::string(outcome_name(run.outcome));
  out["summary"] = state_summary(run);
  if (run.deciding_replica) {
    const auto &replica = run.replicas[*run.deciding_replica];
    out["decided_by"] = {
        {"role", replica.role}, {"rank", replica.rank}, {"detail", replica.detail}};
  } else {
    out["decided_by"] = nullptr;
  }
  out["replicas"] = OrderedJson::array();
  for (const auto &replica : run.replicas) {
    out["replicas"].push_back(replica_json(replica));
  }
  out["registry"] = extras.registry;
  out["checkpoint"] = extras.checkpoint;
  out["recovery"] = extras.recovery;
  out["chain"] = extras.chain;
  out["current_experiment_id"] = run.id;
  out["recoveries"] = extras.chain.is_object() ? extras.chain["recoveries"] : OrderedJson(nullptr);
  out["wandb_url"] = extras.wandb_url ? OrderedJson(*extras.wandb_url) : OrderedJson(nullptr);
  if (extras.usage) {
    add_usage_json(out, *extras.usage);
    out["usage"] = usage_details_json(*extras.usage);
  } else {
    for (const char *key : {"gpu_hours", "lost_gpu_hours", "queue_hours", "cost_usd", "usage"}) {
      out[key] = nullptr;
    }
  }
  out["queue"] = extras.queue ? queue_json(*extras.queue) : OrderedJson(nullptr);
  const auto service = service_experiment_id(run, target);
  out["service_experiment_id"] = service.empty() ? OrderedJson(nullptr) : OrderedJson(service);
  out["receipt"] = target.receipt.empty() ? OrderedJson(nullptr) : OrderedJson(target.receipt);
  return out;
}

std::string status_table(const RunView &run, const RunTarget &target, const StatusExtras &extras) {
  std::ostringstream out;
  out << fmt::format("experiment  {} {}{}\n",
                     run.id,
                     run.full_name.empty() ? run.name : run.full_name,
                     run.workspace.empty() ? "" : " in " + run.workspace);
  out << fmt::format("url         {}\n", experiment_url(run, target));
  std::string outcome(outcome_name(run.outcome));
  if (run.deciding_replica) {
    const auto &replica = run.replicas[*run.deciding_replica];
    outcome += fmt::format(" ({} {})", replica.label(), replica.detail);
  }
  out << fmt::format("outcome     {}: {}\n", outcome, state_summary(run));
  out << fmt::format("w&b         {}\n", extras.wandb_url.value_or("-"));
  if (extras.queue) {
    out << fmt::format("queue       {}\n", queue_line(*extras.queue));
  }
  if (extras.usage) {
    out << fmt::format("usage       {}\n", usage_line(*extras.usage));
  }
  if (extras.registry.is_object()) {
    std::string line;
    if (extras.registry.contains("error")) {
      line = "unreachable: " + extras.registry["error"].get<std::string>();
    } else {
      std::vector<std::string> parts;
      for (const auto &[name, counts] : extras.registry["services"].items()) {
        parts.push_back(fmt::format(
            "{} {}/{}", name, counts["live"].get<int>(), counts["required"].get<int>()));
      }
      line = fmt::format("{}{}{}",
                         extras.registry["ready"].get<bool>() ? "ready" : "not ready",
                         parts.empty() ? "" : ": ",
                         text::join(parts, ", "));
    }
    out << fmt::format("registry    {} ({})\n", line, extras.registry["uri"].get<std::string>());
  }
  if (extras.checkpoint.is_object()) {
    if (extras.checkpoint.contains("error")) {
      out << fmt::format("checkpoint  unavailable: {}\n",
                         extras.checkpoint["error"].get<std::string>());
    } else if (extras.checkpoint["newest_complete_step"].is_null()) {
      out << fmt::format("checkpoint  none complete yet under {}\n",
                         extras.checkpoint["output_dir"].get<std::string>());
    } else {
      out << fmt::format("checkpoint  step {} (newest complete, under {})\n",
                         extras.checkpoint["newest_complete_step"].get<std::int64_t>(),
                         extras.checkpoint["output_dir"].get<std::string>());
    }
  }
  if (extras.chain.is_object() && extras.chain["experiments"].size() > 1) {
    out << fmt::format("chain       {}\n", chain_line(extras.chain));
  }
  if (extras.recovery.is_object()) {
    out << fmt::format("recovery    {}\n", recovery_line(extras.recovery));
    if (extras.recovery.contains("controller") && extras.recovery["controller"].is_object()) {
      out << fmt::format("recovered by {}\n", controller_line(extras.recovery["controller"]));
    }
  }
  if (const auto service = service_experiment_id(run, target); !service.empty()) {
    out << fmt::format("services    {} (the service stack this run owns)\n", service);
  }
  out << '\n';
  std::vector<std::vector<std::string>> rows;
  rows.push_back({"ROLE", "RANK", "STATE", "EXIT", "NODE", "DETAIL"});
  for (const auto &replica : run.replicas) {
    rows.push_back({replica.role,
                    std::to_string(replica.rank),
                    std::string(state_name(replica.state)),
                    replica.exit_code ? std::to_string(*replica.exit_code) : "-",
                    replica.node.empty() ? "-" : replica.node,
                    replica.detail.empty() ? "-" : replica.detail});
  }
  out << render_table(rows);
  return out.str();
}

std::string duration_text(double seconds) {
  const auto s = static_cast<long long>(seconds + 0.5);
  if (s >= 3600) {
    return fmt::format("{}h{:02}m", s / 3600, (s % 3600) / 60);
  }
  if (s >= 60) {
    return fmt::format("{}m{:02}s", s / 60, s % 60);
  }
  return fmt::format("{}s", s);
}

} // namespace pb::runs
