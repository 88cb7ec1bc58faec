// SPDX-License-Identifier: MIT
// `primebeaker status|follow|logs|stop|list` (docs/runs.md).
#include "status.hpp"
#include "timing.hpp"

#include <primebeaker/beaker/client.hpp>
#include <primebeaker/config/config.hpp>
#include <primebeaker/core/command_tree.hpp>
#include <primebeaker/core/concurrent.hpp>
#include <primebeaker/core/env.hpp>
#include <primebeaker/core/error.hpp>
#include <primebeaker/core/json.hpp>
#include <primebeaker/core/signals.hpp>
#include <primebeaker/core/text.hpp>
#include <primebeaker/recovery/ledger.hpp>
#include <primebeaker/runs/queue.hpp>
#include <primebeaker/runs/recover.hpp>
#include <primebeaker/runs/runs.hpp>
#include <primebeaker/runs/usage.hpp>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <cmath>
#include <iostream>
#include <map>
#include <mutex>
#include <set>
#include <sstream>

namespace pb::runs {

namespace {

beaker::Client make_beaker(proc::Runner &runner, Timing timing = {}) {
  return beaker::Client(runner,
                        beaker::program_from_environment(env::snapshot()),
                        std::move(timing),
                        beaker::RetryPolicy::for_reads());
}

struct Loaded {
  RunTarget target;
  RunView run;
};

Loaded load(const std::string &run_argument, beaker::Client &beaker) {
  Loaded loaded;
  loaded.target = resolve_target(run_argument, beaker);
  loaded.run = parse_run(
      single_experiment(beaker.get_experiment(loaded.target.reference), loaded.target.reference));
  return loaded;
}

// What to_newest() read: the ledger (when visible here) and the chain's experiments, oldest
// first (just the one named when there is no ledger).
struct ChainRead {
  std::optional<recovery::ledger::Ledger> ledger;
  std::vector<std::string> ids;
};

// ---- GPU-hours and cost (docs/runs.md "GPU-hours and cost") ----

// The prices, the GPU type of each cluster (asked once per command, and only when a price names
// a GPU type), and the experiments already read, shared by every run of one command.
class UsageContext {
public:
  UsageContext(beaker::Client &beaker, TimePoint now) : m_beaker(beaker), m_now(now) {
    std::optional<config::Settings> settings;
    try {
      settings = config::Settings::load();
    } catch (const Error &error) {
      // What was used is still worth showing; only its price is not known.
      spdlog::warn("no prices: {}", text::split(error.what(), '\n').front());
      return;
    }
    for (const auto *setting : settings->matching(config::key_info("price.*"))) {
      const std::string name(setting->key_name().substr(std::string_view("price.").size()));
      m_prices[name] = std::strtod(setting->text().c_str(), nullptr); // checked when read
      // Cluster names have an account ("ai2/jupiter"); GPU types do not ("H100").
      m_by_type = m_by_type || name.find('/') == std::string::npos;
    }
  }

  void remember(const RunView &run) { m_known[run.id] = run; }
  const RunView *known(const std::string &id) const {
    const auto it = m_known.find(id);
    return it == m_known.end() ? nullptr : &it->second;
  }

  // The chain's usage; its experiments not read yet are read here, 8 at a time.
  ChainUsage usage(const RunView &current, const ChainRead &read) {
    std::vector<std::string> missing;
    for (const auto &id : read.ids) {
      if (id != current.id && m_known.find(id) == m_known.end()) {
        missing.push_back(id);
      }
    }
    std::vector<RunView> fetched(missing.size());
    concurrent::for_each_index(missing.size(), k_usage_queries, [&](std::size_t i) {
      fetched[i] = parse_run(single_experiment(m_beaker.get_experiment(missing[i]), missing[i]));
    });
    for (std::size_t i = 0; i < missing.size(); ++i) {
      m_known[missing[i]] = std::move(fetched[i]);
    }
    std::vector<const RunView *> chain;
    for (const auto &id : read.ids) {
      chain.push_back(id == current.id ? &current : &m_known.at(id));
    }
    if (chain.empty()) {
      chain.push_back(&current);
    }
    if (m_by_type) {
      for (const RunView *run : chain) {
        for (const auto &replica : run->replicas) {
          for (const auto &job : replica.jobs) {
            gpu_type(job.cluster);
          }
        }
      }
    }
    return chain_usage(chain, read.ledger ? &*read.ledger : nullptr, m_prices, m_types, m_now);
  }

private:
  static constexpr std::size_t k_usage_queries = 8;

  // nodeShape.gpuType of `beaker cluster get`, "" when Beaker does not say (a cluster price
  // then applies).
  void gpu_type(const std::string &cluster) {
    if (cluster.empty() || m_types.count(cluster) > 0) {
      return;
    }
    std::string type;
    try {
      const auto got = m_beaker.get_cluster(cluster);
      const OrderedJson &one = got.is_array() && !got.empty() ? got.front() : got;
      if (one.is_object() && one.contains("nodeShape") && one["nodeShape"].is_object()) {
        type = one["nodeShape"].value("gpuType", std::string());
      }
    } catch (const Error &error) {
      spdlog::warn("the GPU type of {} is not known ({}); its cluster price applies",
                   cluster,
                   text::split(error.what(), '\n').front());
    }
    m_types[cluster] = type;
  }

  beaker::Client &m_beaker;
  TimePoint m_now;
  Prices m_prices;
  bool m_by_type = false;
  std::map<std::string, std::string> m_types;
  std::map<std::string, RunView> m_known;
};

// One chain, one truth (docs/runs.md "One chain"): a run that was recovered, restarted or
// resumed lives on in its newest experiment, which replaces the one named in `loaded`. Returns
// the chain's chain_json (null where the ledger is not visible here: then the named experiment
// is all that is known). `say`: tell stderr when the newest is not the one named.
OrderedJson to_newest(Loaded &loaded,
                      beaker::Client &beaker,
                      bool say,
                      ChainRead *read = nullptr,
                      const UsageContext *context = nullptr) {
  if (read != nullptr) {
    read->ids = {loaded.run.id};
  }
  const auto where = ledger_location(loaded.run);
  std::error_code ec;
  if (where.dir.empty() || !std::filesystem::is_directory(where.output_dir, ec)) {
    return nullptr;
  }
  recovery::ledger::Ledger history;
  try {
    history = recovery::ledger::read(where.dir);
  } catch (const Error &error) {
    spdlog::warn("the run's ledger could not be read: {}", error.what());
    return nullptr;
  }
  const Chain chain = run_chain(history, loaded.run.id);
  if (read != nullptr) {
    read->ids.clear();
    for (const auto &link : chain.links) {
      read->ids.push_back(link.experiment_id);
    }
    read->ledger = history;
  }
  if (chain.newest() != loaded.run.id) {
    if (say) {
      std::cerr << fmt::format("primebeaker: {} was resubmitted; its newest experiment is {}\n",
                               loaded.run.id,
                               chain.newest());
    }
    const RunView *known = context != nullptr ? context->known(chain.newest()) : nullptr;
    loaded.run =
        known != nullptr
            ? *known
            : parse_run(single_experiment(beaker.get_experiment(chain.newest()), chain.newest()));
  }
  return chain_json(chain, history, recovery_budget(loaded.run, history));
}

// ---- status ----

struct StatusOptions {
  std::string run;
  bool json = false;
};

// The runs of a sweep and a one-line summary of their outcomes ("2 running, 1 succeeded").
// The variants are asked for at most k_sweep_queries at a time (docs/sweep.md "Concurrency").
constexpr std::size_t k_sweep_queries = 8;

std::vector<RunView> sweep_runs(const SweepTargets &sweep, beaker::Client &beaker) {
  std::vector<RunView> runs(sweep.variants.size());
  concurrent::for_each_index(sweep.variants.size(), k_sweep_queries, [&](std::size_t i) {
    const auto &target = sweep.variants[i];
    runs[i] =
        parse_run(single_experiment(beaker.get_experiment(target.reference), target.reference));
  });
  return runs;
}

std::string sweep_summary(const SweepTargets &sweep, const std::vector<RunView> &runs) {
  std::map<std::string, int> counts;
  for (const auto &run : runs) {
    ++counts[std::string(outcome_name(run.outcome))];
  }
  std::vector<std::string> parts;
  for (const auto &[outcome, count] : counts) {
    parts.push_back(fmt::format("{} {}", count, outcome));
  }
  return fmt::format("sweep {}: {} variants: {}", sweep.name, runs.size(), text::join(parts, ", "));
}

void sweep_status(const SweepTargets &sweep, beaker::Client &beaker, bool json) {
  const auto runs = sweep_runs(sweep, beaker);
  if (json) {
    OrderedJson out = OrderedJson::object();
    out["sweep"] = sweep.name;
    OrderedJson rows = OrderedJson::array();
    for (std::size_t i = 0; i < runs.size(); ++i) {
      rows.push_back(status_json(runs[i], sweep.variants[i], StatusExtras{}));
    }
    out["variants"] = std::move(rows);
    out["summary"] = sweep_summary(sweep, runs);
    print_json(std::cout, out);
    return;
  }
  std::vector<std::vector<std::string>> rows = {{"VARIANT", "EXPERIMENT", "STATUS"}};
  for (const auto &run : runs) {
    rows.push_back({run.name,
                    run.id,
                    run.outcome == Outcome::running
                        ? state_summary(run)
                        : fmt::format("{} ({})", outcome_name(run.outcome), state_summary(run))});
  }
  std::cout << render_table(rows) << sweep_summary(sweep, runs) << '\n';
}

void run_status(const StatusOptions &options) {
  proc::SystemRunner runner;
  auto beaker = make_beaker(runner);
  if (const auto sweep = resolve_sweep(options.run, beaker)) {
    sweep_status(*sweep, beaker, options.json);
    return;
  }
  auto loaded = load(options.run, beaker);
  StatusExtras extras;
  ChainRead read;
  extras.chain = to_newest(loaded, beaker, !options.json, &read);
  const auto now = std::chrono::system_clock::now();
  UsageContext context(beaker, now);
  extras.usage = context.usage(loaded.run, read);
  extras.queue = current_queue(loaded.run, beaker, now);
  extras.registry = registry_readiness(loaded.run, std::chrono::system_clock::now());
  extras.checkpoint = newest_checkpoint(loaded.run);
  extras.recovery =
      recovery_history(loaded.run, extras.checkpoint, std::chrono::system_clock::now());
  extras.wandb_url = wandb_url(loaded.run, loaded.target);
  if (options.json) {
    print_json(std::cout, status_json(loaded.run, loaded.target, extras));
  } else {
    std::cout << status_table(loaded.run, loaded.target, extras);
  }
}

// ---- follow ----

struct FollowCommandOptions {
  std::string run;
  std::string since;
  std::optional<int> replica;
  std::string timeout = "0";
  double poll_interval_seconds = 10;
  bool recover = false;
  double recover_backoff_seconds = 60;
  bool controller = false;
  double claim_lease_seconds = 900;
};

int run_follow(const FollowCommandOptions &options) {
  FollowOptions follow;
  follow.replica = options.replica;
  if (!options.since.empty()) {
    follow.since = parse_since(options.since, std::chrono::system_clock::now());
  }
  follow.timeout = parse_timeout(options.timeout);
  if (!(options.poll_interval_seconds > 0) || options.poll_interval_seconds > 3600) {
    throw usage_error("--poll-interval must be more than 0 and at most 3600 seconds");
  }
  follow.poll_interval = std::chrono::milliseconds(
      static_cast<std::int64_t>(std::llround(options.poll_interval_seconds * 1000)));
  if (!(options.recover_backoff_seconds >= 0) || options.recover_backoff_seconds > 3600) {
    throw usage_error("--recover-backoff must be 0 to 3600 seconds");
  }
  if (!(options.claim_lease_seconds > 0) || options.claim_lease_seconds > 86400) {
    throw usage_error("--claim-lease must be more than 0 and at most 86400 seconds");
  }
  follow.recover.enabled = options.recover || options.controller;
  follow.recover.backoff = std::chrono::milliseconds(
      static_cast<std::int64_t>(std::llround(options.recover_backoff_seconds * 1000)));
  follow.recover.claim_lease = std::chrono::milliseconds(
      static_cast<std::int64_t>(std::llround(options.claim_lease_seconds * 1000)));
  follow.recover.controller = options.controller;
  follow.logs = !options.controller;
  const signals::Scope guard;
  proc::SystemRunner runner;
  auto beaker = make_beaker(runner, interruptible_timing());
  if (const auto sweep = resolve_sweep(options.run, beaker); sweep && !options.controller) {
    // Every variant until each has ended, one after the other (they run together, so this ends
    // when the last one does); no logs, one line per variant; the worst exit code wins.
    follow.logs = false;
    int worst = 0;
    for (const auto &target : sweep->variants) {
      std::ostringstream quiet;
      const int code = follow_run(target.reference, follow, beaker, quiet, std::cerr);
      std::cerr << fmt::format("primebeaker: {}: exit {}\n", target.reference, code);
      worst = std::max(worst, code);
      if (code == 130 || code == 143) {
        return code;
      }
    }
    std::cerr << sweep_summary(*sweep, sweep_runs(*sweep, beaker)) << '\n';
    return worst;
  }
  std::string reference = resolve_target(options.run, beaker).reference;
  if (!options.controller) {
    // Follow the run where it lives now; a controller walks the claims itself.
    Loaded loaded;
    loaded.run = parse_run(single_experiment(beaker.get_experiment(reference), reference));
    const std::string named = loaded.run.id;
    to_newest(loaded, beaker, true);
    if (!loaded.run.id.empty() && loaded.run.id != named) {
      reference = loaded.run.id; // recovered: its newest experiment
    }
  }
  const int code = follow_run(reference, follow, beaker, std::cout, std::cerr);
  if (options.controller) {
    // The controller's job is done once the run has ended, however it ended (controller.json
    // in the ledger says how); only its own interruption is not an end.
    switch (code) {
    case k_exit_succeeded:
    case k_exit_failed:
    case k_exit_preempted:
    case k_exit_canceled:
    case k_exit_not_recoverable:
      return 0;
    default:
      return code;
    }
  }
  return code;
}

// ---- logs ----

struct LogsOptions {
  std::string run;
  std::optional<int> replica;
  std::optional<int> tail;
};

void run_logs(const LogsOptions &options) {
  if (options.tail && *options.tail < 0) {
    throw usage_error("--tail must be >= 0");
  }
  proc::SystemRunner runner;
  auto beaker = make_beaker(runner);
  const auto loaded = load(options.run, beaker);
  std::vector<const Replica *> chosen;
  for (const auto &replica : loaded.run.replicas) {
    if (!options.replica || replica.rank == *options.replica) {
      chosen.push_back(&replica);
    }
  }
  if (options.replica && chosen.empty()) {
    throw usage_error(
        fmt::format("--replica {}: experiment {} has {}",
                    *options.replica,
                    loaded.run.id,
                    loaded.run.replicas.empty()
                        ? std::string("no jobs yet")
                        : fmt::format("replicas 0..{}", loaded.run.replicas.back().rank)));
  }
  const bool prefix = chosen.size() > 1;
  for (const auto *replica : chosen) {
    if (replica->job_id.empty() || replica->state == JobState::pending ||
        replica->state == JobState::scheduled) {
      std::cerr << fmt::format(
          "[{}] {}: no logs yet\n", replica->label(), state_name(replica->state));
      continue;
    }
    std::vector<std::string> lines;
    take_new_lines(beaker.job_logs(replica->job_id), 0, true, lines);
    std::size_t first = 0;
    if (options.tail && lines.size() > static_cast<std::size_t>(*options.tail)) {
      first = lines.size() - static_cast<std::size_t>(*options.tail);
    }
    for (std::size_t i = first; i < lines.size(); ++i) {
      if (prefix) {
        std::cout << '[' << replica->label() << "] ";
      }
      std::cout << lines[i] << '\n';
    }
  }
}

// ---- stop ----

struct StopOptions {
  std::string run;
  bool yes = false;
  bool keep_services = false;
};

bool confirm(const std::string &question) {
  std::cerr << question << " [y/N] " << std::flush;
  std::string answer;
  if (!std::getline(std::cin, answer)) {
    std::cerr << '\n';
    return false;
  }
  const auto trimmed = std::string(text::trim(answer));
  return trimmed == "y" || trimmed == "Y" || trimmed == "yes" || trimmed == "YES" ||
         trimmed == "Yes";
}

OrderedJson stop_loaded(
    Loaded loaded, const StopOptions &options, beaker::Client &beaker, bool ask, std::ostream &err);
void finish_stop(const OrderedJson &out, const std::vector<const OrderedJson *> &runs);

void run_stop(const StopOptions &options) {
  proc::SystemRunner runner;
  auto beaker = make_beaker(runner);
  if (const auto sweep = resolve_sweep(options.run, beaker)) {
    // One question for the whole sweep, then every variant (and its controller) stopped.
    if (!options.yes &&
        !confirm(fmt::format(
            "Stop the {} experiments of sweep {}?", sweep->variants.size(), sweep->name))) {
      throw failure("nothing stopped (answer y, or pass --yes)");
    }
    OrderedJson out = OrderedJson::object();
    out["sweep"] = sweep->name;
    // Each variant read and stopped on its own, k_sweep_queries at a time (docs/sweep.md
    // "Concurrency"); its lines are printed together once it is done. A variant that cannot be
    // read is reported and the others are still stopped.
    std::vector<OrderedJson> each_out(sweep->variants.size());
    std::mutex print;
    concurrent::for_each_index(sweep->variants.size(), k_sweep_queries, [&](std::size_t i) {
      const auto &target = sweep->variants[i];
      std::ostringstream err;
      try {
        Loaded loaded;
        loaded.target = target;
        loaded.run =
            parse_run(single_experiment(beaker.get_experiment(target.reference), target.reference));
        each_out[i] = stop_loaded(std::move(loaded), options, beaker, false, err);
      } catch (const Error &error) {
        const std::string why = text::split(error.what(), '\n').front();
        err << fmt::format("primebeaker: could not read {}: {}\n", target.reference, why);
        each_out[i] = {{"experiment_id", target.reference},
                       {"stopped", false},
                       {"not_stopped", {target.reference + " (could not be read)"}}};
      }
      const std::lock_guard<std::mutex> lock(print);
      std::cerr << err.str() << std::flush;
    });
    OrderedJson stopped = OrderedJson::array();
    for (auto &one : each_out) {
      stopped.push_back(std::move(one));
    }
    out["variants"] = std::move(stopped);
    std::vector<const OrderedJson *> each;
    for (const auto &variant : out["variants"]) {
      each.push_back(&variant);
    }
    finish_stop(out, each);
    return;
  }
  const OrderedJson out =
      stop_loaded(load(options.run, beaker), options, beaker, !options.yes, std::cerr);
  finish_stop(out, {&out});
}

OrderedJson stop_loaded(Loaded loaded,
                        const StopOptions &options,
                        beaker::Client &beaker,
                        bool ask,
                        std::ostream &err) {
  // A run that was resubmitted lives on in its newest experiment: that is what stop stops.
  const std::string named = loaded.run.id;
  to_newest(loaded, beaker, false);
  if (loaded.run.id != named) {
    err << fmt::format(
        "primebeaker: {} was resubmitted; its newest experiment is {}\n", named, loaded.run.id);
  }
  const auto &run = loaded.run;
  const std::string service =
      options.keep_services ? "" : service_experiment_id(run, loaded.target);
  const bool finished = run.outcome != Outcome::running;
  // The recovery controller, by the id the ledger (controller.json, written by the controller
  // itself) or the receipt holds; by name only when neither does.
  std::string controller_name = loaded.target.controller_name;
  if (const auto name = run.env.find("PRIMEBEAKER_CONTROLLER_NAME");
      name != run.env.end() && !name->second.empty()) {
    controller_name = name->second;
  }
  std::string controller_id = loaded.target.controller_experiment_id;
  if (const auto where = ledger_location(run); !where.dir.empty()) {
    if (const auto status = recovery::ledger::read_controller_status(where.dir);
        status && !status->controller_experiment.empty()) {
      controller_id = status->controller_experiment;
    }
  }

  std::string question =
      fmt::format("Stop experiment {} ({}; {})",
                  run.id,
                  run.full_name.empty() ? run.name : run.full_name,
                  finished ? std::string(outcome_name(run.outcome)) : state_summary(run));
  if (!service.empty()) {
    question += fmt::format(" and the service stack it owns, experiment {}", service);
  }
  if (!controller_name.empty() || !controller_id.empty()) {
    question += fmt::format(" and its recovery controller {}",
                            controller_id.empty() ? controller_name : controller_id);
  }
  question += "?";
  if (ask && !confirm(question)) {
    throw failure("nothing stopped (answer y, or pass --yes)");
  }
  OrderedJson out = OrderedJson::object();
  out["experiment_id"] = run.id;
  std::vector<std::string> failed;
  // One line per experiment; a failure to stop one is reported and the others still stopped.
  const auto stop = [&](const std::string &id, const std::string &what) {
    try {
      beaker.stop_experiment(id);
      err << fmt::format("primebeaker: stopped {} ({})\n", id, what);
      return true;
    } catch (const Error &error) {
      const std::string why = text::split(error.what(), '\n').front();
      err << fmt::format("primebeaker: could not stop {} ({}): {}\n", id, what, why);
      failed.push_back(fmt::format("{} ({})", id, what));
      return false;
    }
  };
  if (finished) {
    err << fmt::format("primebeaker: experiment {} already {}; not stopping it\n",
                       run.id,
                       outcome_name(run.outcome));
    out["stopped"] = false;
  } else {
    out["stopped"] = stop(run.id, "the training run");
  }
  if (!service.empty()) {
    out["service_experiment_id"] = service;
    out["service_stopped"] = stop(service, "its service stack");
  }
  // The run's recovery controller: stopped too, so that it does not resubmit what was stopped
  // (it would not resubmit a canceled run, but it would a preempted one it is waiting on).
  if (!controller_name.empty() || !controller_id.empty()) {
    out["controller"] = controller_name;
    out["controller_stopped"] = false;
    std::optional<RunView> controller;
    try {
      if (!controller_id.empty()) {
        controller =
            parse_run(single_experiment(beaker.get_experiment(controller_id), controller_id));
      } else {
        const std::string author = !run.author.empty() ? run.author : beaker.whoami();
        if (const auto found = beaker.find_experiment(author + "/" + controller_name)) {
          controller = parse_run(*found);
        } else {
          err << fmt::format("primebeaker: its recovery controller {}/{} was not found\n",
                             author,
                             controller_name);
        }
      }
    } catch (const Error &error) {
      const std::string why = text::split(error.what(), '\n').front();
      err << fmt::format("primebeaker: could not read its recovery controller {}: {}\n",
                         controller_id.empty() ? controller_name : controller_id,
                         why);
      failed.push_back(fmt::format("{} (its recovery controller)",
                                   controller_id.empty() ? controller_name : controller_id));
    }
    if (controller) {
      if (controller->id.empty()) {
        controller->id = controller_id;
      }
      out["controller_experiment_id"] = controller->id;
      if (controller->outcome == Outcome::running) {
        out["controller_stopped"] = stop(controller->id, "its recovery controller");
      } else {
        err << fmt::format("primebeaker: its recovery controller {} already {}\n",
                           controller->id,
                           outcome_name(controller->outcome));
      }
    }
  }
  if (!failed.empty()) {
    out["not_stopped"] = failed;
  }
  return out;
}

// Prints what stop did, then fails (exit 4) when any experiment could not be stopped.
void finish_stop(const OrderedJson &out, const std::vector<const OrderedJson *> &runs) {
  print_json(std::cout, out);
  std::vector<std::string> failed;
  for (const auto *one : runs) {
    for (const auto &item : one->value("not_stopped", OrderedJson::array())) {
      failed.push_back(item.get<std::string>());
    }
  }
  if (!failed.empty()) {
    throw tool_error(fmt::format("could not stop {}; everything else named above was stopped",
                                 text::join(failed, ", ")));
  }
}

// ---- list ----

struct ListOptions {
  std::string sweep;     // a sweep receipt or group:NAME: only its experiments
  std::string workspace; // empty: the user's default workspace (docs/config.md)
  bool mine = false;
  bool json = false;
  bool all = false;
  int limit = 20;
};

// One row of `list` (and `cost`): a run as its newest experiment, with its chain.
struct Listed {
  RunView run;
  OrderedJson chain; // chain_json(), null where the ledger is not visible here
  ChainRead read;
};

// The runs of a workspace (or a sweep), newest first, at most `limit`, one per chain; `since`
// keeps those whose listed experiment was created then or later. Every experiment read is
// remembered in `context`, so that the chains' usage reads no experiment twice.
std::vector<Listed> collect_runs(ListOptions &options,
                                 beaker::Client &beaker,
                                 UsageContext &context,
                                 std::optional<TimePoint> since,
                                 std::size_t limit) {
  if (options.workspace.empty() && options.sweep.empty()) {
    options.workspace = config::Settings::load().text("workspace");
  }
  OrderedJson experiments;
  if (!options.sweep.empty()) {
    const auto sweep = resolve_sweep(options.sweep, beaker);
    if (!sweep) {
      throw input_error(fmt::format(
          "--sweep {}: not a sweep receipt (docs/sweep.md) nor group:NAME", options.sweep));
    }
    std::vector<OrderedJson> found(sweep->variants.size());
    concurrent::for_each_index(found.size(), k_sweep_queries, [&](std::size_t i) {
      const auto &target = sweep->variants[i];
      found[i] = single_experiment(beaker.get_experiment(target.reference), target.reference);
    });
    experiments = OrderedJson::array();
    for (auto &experiment : found) {
      experiments.push_back(std::move(experiment));
    }
  } else {
    experiments = beaker.workspace_experiments(options.workspace);
  }
  const std::string me = options.mine ? beaker.whoami() : "";
  std::vector<RunView> runs;
  std::vector<bool> has_jobs;
  for (const auto &experiment : experiments) {
    if (!options.all && options.sweep.empty() && !is_primebeaker_launch(experiment)) {
      continue;
    }
    RunView run = parse_run(experiment);
    if (options.mine && run.author != me) {
      continue;
    }
    const bool jobs = experiment.is_object() && experiment.contains("jobs");
    if (jobs) {
      context.remember(run);
    }
    if (since && run.created && *run.created < *since) {
      continue;
    }
    runs.push_back(std::move(run));
    has_jobs.push_back(jobs);
  }
  std::vector<std::size_t> order(runs.size());
  for (std::size_t i = 0; i < order.size(); ++i) {
    order[i] = i;
  }
  std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
    return runs[a].created.value_or(TimePoint{}) > runs[b].created.value_or(TimePoint{});
  });
  order.resize(std::min(order.size(), limit));
  // One row per run (docs/runs.md "One chain"): an experiment its run has moved on from is shown
  // as the run's newest experiment, once.
  std::vector<Listed> out;
  std::set<std::string> listed;
  for (const auto i : order) {
    Loaded loaded;
    // A listing without jobs (some CLI versions) is completed by one `experiment get`.
    loaded.run = has_jobs[i]
                     ? std::move(runs[i])
                     : parse_run(single_experiment(beaker.get_experiment(runs[i].id), runs[i].id));
    Listed row;
    row.chain = to_newest(loaded, beaker, false, &row.read, &context);
    if (!listed.insert(loaded.run.id).second) {
      continue;
    }
    row.run = std::move(loaded.run);
    out.push_back(std::move(row));
  }
  return out;
}

void run_list(const ListOptions &given) {
  ListOptions options = given;
  if (options.limit < 1) {
    throw usage_error("--limit must be at least 1");
  }
  proc::SystemRunner runner;
  auto beaker = make_beaker(runner);
  UsageContext context(beaker, std::chrono::system_clock::now());
  const auto rows_read =
      collect_runs(options, beaker, context, std::nullopt, static_cast<std::size_t>(options.limit));
  std::vector<RunView> runs;
  std::vector<OrderedJson> chains;
  std::vector<ChainUsage> usages;
  for (const auto &row : rows_read) {
    usages.push_back(context.usage(row.run, row.read));
    runs.push_back(row.run);
    chains.push_back(row.chain);
  }
  std::vector<OrderedJson> counts;
  std::vector<OrderedJson> controllers;
  for (const auto &run : runs) {
    counts.push_back(ledger_counts(run));        // a few small files per run, no checkpoint listing
    controllers.push_back(controller_view(run)); // and the controller's one status file
  }
  // Recoveries used against the budget across the chain (claims in flight included), else
  // what the ledger's starts count.
  const auto recoveries_of = [&](std::size_t i) -> OrderedJson {
    if (chains[i].is_object()) {
      return chains[i]["recoveries"].get<std::int64_t>() +
             chains[i]["restarts_on_errors"].get<std::int64_t>();
    }
    const OrderedJson &ledger = counts[i];
    return ledger.is_object() && ledger.contains("recoveries") ? ledger["recoveries"]
                                                               : OrderedJson(nullptr);
  };
  if (options.json) {
    OrderedJson out = OrderedJson::array();
    for (const auto &run : runs) {
      OrderedJson row = OrderedJson::object();
      row["experiment_id"] = run.id;
      row["name"] = run.name;
      row["author"] = run.author;
      row["created"] = run.created ? OrderedJson(format_time(*run.created)) : OrderedJson(nullptr);
      row["outcome"] = std::string(outcome_name(run.outcome));
      row["summary"] = state_summary(run);
      row["replicas"] = run.replicas.size();
      row["restarts"] = beaker_restarts(run); // Beaker's extra jobs (docs/recovery.md)
      // The run's ledger (shared by the experiments that continue it): recoveries it counts.
      const auto i = static_cast<std::size_t>(&run - runs.data());
      row["current_experiment_id"] = run.id;
      row["original_experiment_id"] =
          chains[i].is_object() ? chains[i]["original_experiment_id"] : OrderedJson(run.id);
      row["recoveries"] = recoveries_of(i);
      row["chain"] = chains[i];
      row["recovery"] = counts[i];
      row["controller"] = controllers[&run - runs.data()];
      add_usage_json(row, usages[i]);
      row["usage"] = usage_details_json(usages[i]);
      row["url"] = "https://beaker.org/ex/" + run.id;
      out.push_back(std::move(row));
    }
    print_json(std::cout, out);
    return;
  }
  if (runs.empty()) {
    std::cerr << fmt::format("primebeaker: no primebeaker launches{} in {}\n",
                             options.mine ? " of yours" : "",
                             options.sweep.empty() ? options.workspace : options.sweep);
    return;
  }
  std::vector<std::vector<std::string>> rows;
  rows.push_back(
      {"EXPERIMENT", "NAME", "AUTHOR", "CREATED", "RECOVERIES", "RECOVERED BY", "STATUS", "GPU-H"});
  for (const auto &run : runs) {
    const auto i = static_cast<std::size_t>(&run - runs.data());
    const OrderedJson &controller = controllers[i];
    const OrderedJson recoveries = recoveries_of(i);
    std::string recovered_by = "-";
    if (controller.is_object()) {
      recovered_by = controller.value("mode", std::string());
      if (controller["state"].is_string()) {
        recovered_by += " (" + controller["state"].get<std::string>() + ")";
      }
    }
    rows.push_back({run.id,
                    run.name,
                    run.author,
                    run.created ? format_time(*run.created).substr(0, 19) + "Z" : "-",
                    recoveries.is_number() ? std::to_string(recoveries.get<std::int64_t>()) : "-",
                    recovered_by,
                    run.outcome == Outcome::running
                        ? state_summary(run)
                        : fmt::format("{} ({})", outcome_name(run.outcome), state_summary(run)),
                    usage_cell(usages[i])});
  }
  std::cout << render_table(rows);
}

// ---- cost ----

struct CostOptions {
  std::string since; // empty: every run listed
  std::string sweep;
  std::string workspace;
  bool mine = false;
  bool json = false;
};

void run_cost(const CostOptions &options) {
  const auto now = std::chrono::system_clock::now();
  std::optional<TimePoint> since;
  if (!options.since.empty()) {
    since = parse_since(options.since, now); // names --since when it is neither
  }
  ListOptions list;
  list.sweep = options.sweep;
  list.workspace = options.workspace;
  list.mine = options.mine;
  proc::SystemRunner runner;
  auto beaker = make_beaker(runner);
  UsageContext context(beaker, now);
  const auto runs = collect_runs(list, beaker, context, since, static_cast<std::size_t>(-1));
  OrderedJson rows = OrderedJson::array();
  double gpu_hours = 0, lost = 0, queue = 0;
  std::optional<double> cost = 0.0;
  int unpriced = 0, without_ledger = 0;
  std::vector<std::vector<std::string>> table = {
      {"EXPERIMENT", "NAME", "OUTCOME", "GPU-HOURS", "LOST", "QUEUED-H", "COST"}};
  const auto money = [](const std::optional<double> &usd) {
    return usd ? fmt::format("${:.2f}", *usd) : std::string("-");
  };
  for (const auto &row : runs) {
    const ChainUsage usage = context.usage(row.run, row.read);
    OrderedJson one = OrderedJson::object();
    one["experiment_id"] = row.run.id;
    one["original_experiment_id"] =
        row.chain.is_object() ? row.chain["original_experiment_id"] : OrderedJson(row.run.id);
    one["name"] = row.run.name;
    one["outcome"] = std::string(outcome_name(row.run.outcome));
    one["experiments"] = usage.experiments.size();
    add_usage_json(one, usage);
    one["prices"] = usage.prices_used;
    rows.push_back(std::move(one));
    gpu_hours += usage.gpu_hours;
    queue += usage.queue_hours;
    lost += usage.lost_gpu_hours.value_or(0);
    without_ledger += usage.lost_gpu_hours ? 0 : 1;
    if (usage.cost_usd && cost) {
      *cost += *usage.cost_usd;
    } else {
      cost.reset(); // one run without a price: no total, never a guess
      unpriced += usage.cost_usd ? 0 : 1;
    }
    table.push_back({row.run.id,
                     row.run.name,
                     std::string(outcome_name(row.run.outcome)),
                     fmt::format("{:.2f}", usage.gpu_hours),
                     usage.lost_gpu_hours ? fmt::format("{:.2f}", *usage.lost_gpu_hours) : "-",
                     fmt::format("{:.2f}", usage.queue_hours),
                     money(usage.cost_usd)});
  }
  const auto round_to = [](double value, double per) { return std::round(value * per) / per; };
  OrderedJson total = OrderedJson::object();
  total["runs"] = runs.size();
  total["gpu_hours"] = round_to(gpu_hours, 1e4);
  total["lost_gpu_hours"] = round_to(lost, 1e4);
  total["queue_hours"] = round_to(queue, 1e4);
  total["cost_usd"] = cost ? OrderedJson(round_to(*cost, 100)) : OrderedJson(nullptr);
  total["unpriced_runs"] = unpriced;
  total["runs_without_ledger"] = without_ledger;
  if (options.json) {
    OrderedJson out = OrderedJson::object();
    out["since"] = since ? OrderedJson(format_time(*since)) : OrderedJson(nullptr);
    out["sweep"] = options.sweep.empty() ? OrderedJson(nullptr) : OrderedJson(options.sweep);
    out["workspace"] = list.workspace.empty() ? OrderedJson(nullptr) : OrderedJson(list.workspace);
    out["runs"] = std::move(rows);
    out["total"] = std::move(total);
    print_json(std::cout, out);
    return;
  }
  table.push_back({fmt::format("total ({} run{})", runs.size(), runs.size() == 1 ? "" : "s"),
                   "",
                   "",
                   fmt::format("{:.2f}", gpu_hours),
                   fmt::format("{:.2f}", lost),
                   fmt::format("{:.2f}", queue),
                   money(cost)});
  std::cout << render_table(table);
  if (unpriced > 0) {
    std::cout << fmt::format("{} run{} without a price: set price.<gpu type or cluster> "
                             "(docs/config.md \"Prices\")\n",
                             unpriced,
                             unpriced == 1 ? "" : "s");
  }
  if (without_ledger > 0) {
    std::cout << fmt::format("{} run{} whose ledger is not visible here: lost GPU-hours not "
                             "counted\n",
                             without_ledger,
                             without_ledger == 1 ? "" : "s");
  }
}

constexpr const char *k_run_help =
    "RUN: an experiment id, author/name, a name of yours, or a receipt file (the JSON that "
    "submit, run launch, rl resume or a sweep printed; a sweep, or group:NAME, means each of its "
    "experiments)";

} // namespace

void register_commands(cli::CommandTree &tree) {
  {
    auto &options = tree.make_options<StatusOptions>();
    cli::Command &app = tree.command(
        {"status"},
        "Per-replica state of a run, registry readiness, newest complete checkpoint, W&B URL");
    app.add_option("run", options.run, k_run_help).required();
    app.add_flag(cli::flag("json"), options.json, "Print one JSON object instead of a table");
    app.callback([&options] { run_status(options); });
  }
  {
    auto &options = tree.make_options<FollowCommandOptions>();
    cli::Command &app = tree.command(
        {"follow"},
        "Stream every replica's logs until the run ends; the exit code says how it ended "
        "(0 succeeded, 10 failed, 11 preempted, 12 canceled, 13 timed out, 14 not recoverable, "
        "130 Ctrl-C)");
    app.add_option("run", options.run, k_run_help).required();
    app.add_option(cli::flag("since"),
                   options.since,
                   "Only log lines from this time on: RFC 3339, or a duration back (10m, 2h)");
    app.add_option(cli::flag("replica"), options.replica, "Only this replica rank");
    app.add_option(cli::flag("timeout"),
                   options.timeout,
                   "Stop following after this long (seconds or 30m/2h; 0 = never); the run "
                   "keeps running")
        .capture_default_str();
    app.add_option(cli::flag("poll-interval"),
                   options.poll_interval_seconds,
                   "Seconds between polls of beaker")
        .capture_default_str();
    app.add_flag(cli::flag("recover"),
                 options.recover,
                 "When a multi-node RL run ends preempted (or failed, within "
                 "--max-restarts-on-errors), resubmit it with `rl resume` within its "
                 "--max-recoveries and follow the new experiment (docs/recovery.md)");
    app.add_option(cli::flag("recover-backoff"),
                   options.recover_backoff_seconds,
                   "Seconds to wait before the first resubmission; doubled for each later one "
                   "(at most 15 minutes)")
        .capture_default_str();
    app.add_flag(cli::flag("controller"),
                 options.controller,
                 "Run as a run's recovery controller on Beaker (what `rl submit` starts; "
                 "implies --recover): no logs, its status in the ledger, exit 0 once the run "
                 "has ended (docs/recovery.md)");
    app.add_option(cli::flag("claim-lease"),
                   options.claim_lease_seconds,
                   "Seconds after which another actor's claim to resubmit a run, with no new "
                   "experiment recorded, is taken over")
        .capture_default_str();
    app.callback([&options] {
      const int code = run_follow(options);
      if (code != 0) {
        throw Error(code, "");
      }
    });
  }
  {
    auto &options = tree.make_options<LogsOptions>();
    cli::Command &app = tree.command({"logs"}, "Print the logs of a run's replicas");
    app.add_option("run", options.run, k_run_help).required();
    app.add_option(cli::flag("replica"), options.replica, "Only this replica rank");
    app.add_option(cli::flag("tail"), options.tail, "Only the last K lines of each replica");
    app.callback([&options] { run_logs(options); });
  }
  {
    auto &options = tree.make_options<StopOptions>();
    cli::Command &app =
        tree.command({"stop"}, "Stop a run (and the service stack a joint run owns); asks first");
    app.add_option("run", options.run, k_run_help).required();
    app.add_flag(cli::flag("yes", "-y"), options.yes, "Do not ask");
    app.add_flag(cli::flag("keep-services"),
                 options.keep_services,
                 "Leave the service stack of a joint run running");
    app.callback([&options] { run_stop(options); });
  }
  {
    auto &options = tree.make_options<ListOptions>();
    cli::Command &app = tree.command({"list"}, "This tool's launches in a workspace, newest first");
    app.add_option(cli::flag("workspace", "-w"),
                   options.workspace,
                   "Beaker workspace (default: the launches' default, `config get workspace`)");
    app.add_flag(cli::flag("mine"), options.mine, "Only experiments you launched");
    app.add_flag(cli::flag("json"), options.json, "Print a JSON array instead of a table");
    app.add_flag(cli::flag("all"), options.all, "Every experiment, not only primebeaker's");
    app.add_option(
           cli::flag("sweep"),
           options.sweep,
           "Only the experiments of a sweep: its receipt file, or group:NAME (docs/sweep.md)")
        .type_name("RECEIPT");
    app.add_option(cli::flag("limit"), options.limit, "At most this many rows")
        .capture_default_str();
    app.callback([&options] { run_list(options); });
  }
  {
    auto &options = tree.make_options<CostOptions>();
    cli::Command &app = tree.command(
        {"cost"},
        "GPU-hours, GPU-hours lost to preemption, queue time and cost ($ where the config has a "
        "price.<gpu type or cluster>) per run, over each run's whole chain, and their total");
    app.add_option(cli::flag("since"),
                   options.since,
                   "Only runs with an experiment created since: RFC 3339, or a duration back "
                   "(7d, 12h)");
    app.add_option(cli::flag("sweep"),
                   options.sweep,
                   "Only the runs of a sweep: its receipt file, or group:NAME (docs/sweep.md)")
        .type_name("RECEIPT");
    app.add_option(cli::flag("workspace", "-w"),
                   options.workspace,
                   "Beaker workspace (default: the launches' default, `config get workspace`)");
    app.add_flag(cli::flag("mine"), options.mine, "Only runs you launched");
    app.add_flag(cli::flag("json"), options.json, "Print one JSON object instead of a table");
    app.callback([&options] { run_cost(options); });
  }
}

} // namespace pb::runs
