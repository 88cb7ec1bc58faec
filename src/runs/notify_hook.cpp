// SPDX-License-Identifier: MIT
// The follower's and the controller's notifications (docs/notify.md "Who posts").
#include "notify_hook.hpp"

#include "status.hpp"

#include <primebeaker/config/config.hpp>
#include <primebeaker/core/env.hpp>
#include <primebeaker/core/error.hpp>
#include <primebeaker/notify/notify.hpp>
#include <primebeaker/runs/recover.hpp>
#include <primebeaker/runs/usage.hpp>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

namespace pb::runs {

namespace ledger = recovery::ledger;

namespace {

// The URL: this process's PRIMEBEAKER_NOTIFY_URL (the controller's, from its spec), else the
// run spec's plain value, else a literal `notify.webhook` of the config (a terminal follower).
std::optional<notify::Settings> settings_for(const RunView &run) {
  if (auto found = notify::settings_from(env::snapshot(), run.env)) {
    return found;
  }
  try {
    const auto settings = config::Settings::load();
    const std::string url = settings.text("notify.webhook");
    if (url.starts_with("https://") || url.starts_with("http://")) {
      std::map<std::string, std::string> env{{notify::k_env_url, url}};
      if (const auto *events = settings.get("notify.events")) {
        env[notify::k_env_events] = events->display();
      }
      return notify::settings_from(env, {});
    }
  } catch (const Error &error) {
    spdlog::debug("notifications: no config: {}", error.what());
  }
  return std::nullopt;
}

// The config's price.<cluster> keys (docs/config.md "Prices"); none in a controller's container.
Prices prices() {
  Prices out;
  try {
    const auto settings = config::Settings::load();
    for (const auto *setting : settings.matching(config::key_info("price.*"))) {
      out[std::string(setting->key_name().substr(std::string_view("price.").size()))] =
          std::strtod(setting->text().c_str(), nullptr);
    }
  } catch (const Error &) {
  }
  return out;
}

} // namespace

RunNotifier::~RunNotifier() {
  // Bounded: a dead webhook costs the follower's exit at most this, never the run anything.
  notify::drain(std::chrono::seconds(5));
}

void RunNotifier::ended(const RunView &run) {
  m_seen[run.id] = run;
  std::string_view event;
  switch (run.outcome) {
  case Outcome::preempted:
    event = notify::k_preempted;
    break;
  case Outcome::failed:
    event = notify::k_failed;
    break;
  case Outcome::succeeded:
    event = notify::k_succeeded;
    break;
  case Outcome::canceled:
    event = notify::k_stopped;
    break;
  case Outcome::running:
    return;
  }
  post(run, std::string(event), run.id, "", "");
}

void RunNotifier::recovered(const RunView &run, const RecoverResult &result) {
  if (!result.child.empty()) {
    post(run, std::string(notify::k_resubmitted), result.child, run.id, "");
  } else if (result.budget_spent) {
    post(run,
         std::string(notify::k_budget_spent),
         run.id,
         "",
         "resume by hand: primebeaker rl resume " + run.id);
  }
}

void RunNotifier::post(const RunView &run,
                       const std::string &event,
                       const std::string &experiment_id,
                       const std::string &previous,
                       const std::string &detail) {
  // A single-node run is its node runtime's to report (docs/notify.md): Beaker restarts it in
  // the same experiment, which only the runtime sees.
  if (run.command.size() >= 3 && run.command[1] == "node" && run.command[2] == "single") {
    return;
  }
  const auto settings = settings_for(run);
  if (!settings || !settings->wants(event)) {
    return;
  }
  // Everything else off the recovery's path: the ledger, the TOML, the claim's fsync.
  notify::in_background([settings = *settings,
                         run,
                         event,
                         experiment_id,
                         previous,
                         detail,
                         seen = m_seen,
                         by = actor_identity(m_options.controller)] {
    notify::Event e;
    e.event = event;
    e.run = run_base_name(run.name.empty() ? run.full_name : run.name);
    e.experiment_id = experiment_id;
    e.previous_experiment_id = previous;
    e.detail = detail;
    e.wandb_url = wandb_url(run, RunTarget{});
    std::filesystem::path dir;
    if (const auto where = ledger_location(run); !where.dir.empty()) {
      std::error_code ec;
      if (std::filesystem::is_directory(where.output_dir, ec)) {
        dir = where.dir;
      }
    }
    if (!dir.empty()) {
      try {
        const auto history = ledger::read(dir);
        const auto used = recoveries_used(history);
        e.recoveries = used.preemptions + used.errors;
        std::int64_t lost = 0;
        for (const auto steps : ledger::summarize(history, 0).steps_lost_per_preemption) {
          lost += steps;
        }
        e.steps_lost = lost;
        // The chain's experiments before this one; usage only when this follow saw each end.
        const Chain chain = run_chain(history, run.id);
        std::vector<const RunView *> views;
        bool complete = true;
        for (std::size_t i = 0; i < chain.links.size(); ++i) {
          const auto &id = chain.links[i].experiment_id;
          if (id == run.id && i > 0 && e.previous_experiment_id.empty()) {
            e.previous_experiment_id = chain.links[i - 1].experiment_id;
          }
          if (const auto it = seen.find(id); it != seen.end()) {
            views.push_back(&it->second);
          } else if (id != experiment_id) {
            complete = false;
          }
        }
        if (complete && !views.empty()) {
          const auto usage =
              chain_usage(views, &history, prices(), {}, std::chrono::system_clock::now());
          e.gpu_hours = usage.gpu_hours;
          e.cost_usd = usage.cost_usd;
        }
      } catch (const Error &error) {
        spdlog::debug("notification {}: the ledger could not be read: {}", event, error.what());
      }
    }
    notify::announce(settings, dir, experiment_id, e, by);
  });
}

} // namespace pb::runs
