// SPDX-License-Identifier: MIT
// `primebeaker follow`: poll the experiment, stream every replica's new log lines with a
// "[role:rank] " prefix, report state changes, and exit with the outcome's code
// (docs/runs.md "follow"). Ctrl-C stops following only: nothing here ever stops a run.

#include "notify_hook.hpp"
#include "recover_step.hpp"
#include "timing.hpp"

#include <primebeaker/beaker/client.hpp>
#include <primebeaker/core/env.hpp>
#include <primebeaker/core/error.hpp>
#include <primebeaker/core/signals.hpp>
#include <primebeaker/core/text.hpp>
#include <primebeaker/recovery/ledger.hpp>
#include <primebeaker/runs/queue.hpp>
#include <primebeaker/runs/recover.hpp>
#include <primebeaker/runs/runs.hpp>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <csignal>
#include <functional>
#include <iostream>
#include <set>
#include <thread>

namespace pb::runs {

namespace ledger = recovery::ledger;

std::size_t take_new_lines(const std::string &log,
                           std::size_t already,
                           bool final,
                           std::vector<std::string> &lines) {
  std::size_t pos = std::min(already, log.size());
  const std::size_t start = pos;
  while (pos < log.size()) {
    const auto newline = log.find('\n', pos);
    if (newline == std::string::npos) {
      if (!final) {
        break; // an unfinished line: wait for the rest
      }
      std::string line = log.substr(pos);
      if (!line.empty() && line.back() == '\r') {
        line.pop_back();
      }
      lines.push_back(std::move(line));
      pos = log.size();
      break;
    }
    std::string line = log.substr(pos, newline - pos);
    if (!line.empty() && line.back() == '\r') {
      line.pop_back();
    }
    lines.push_back(std::move(line));
    pos = newline + 1;
  }
  return pos - start;
}

bool keep_since(std::string_view line, const std::optional<TimePoint> &since, bool previous) {
  if (!since) {
    return true;
  }
  const auto space = line.find_first_of(" \t");
  const auto stamp = parse_time_text(line.substr(0, space));
  if (!stamp) {
    return previous;
  }
  return *stamp >= *since;
}

namespace {

std::optional<std::chrono::milliseconds> parse_duration(std::string_view text) {
  if (text.empty()) {
    return std::nullopt;
  }
  std::int64_t unit_ms = 1000; // plain numbers are seconds
  std::string_view number = text;
  for (const auto &[suffix, ms] : {std::pair{'s', 1000LL},
                                   std::pair{'m', 60'000LL},
                                   std::pair{'h', 3'600'000LL},
                                   std::pair{'d', 86'400'000LL}}) {
    if (text.back() == suffix) {
      unit_ms = ms;
      number.remove_suffix(1);
      break;
    }
  }
  if (number.empty() || number.size() > 9) {
    return std::nullopt;
  }
  std::int64_t value = 0;
  for (const char c : number) {
    if (c < '0' || c > '9') {
      return std::nullopt;
    }
    value = value * 10 + (c - '0');
  }
  return std::chrono::milliseconds(value * unit_ms);
}

} // namespace

TimePoint parse_since(std::string_view text, TimePoint now) {
  if (const auto stamp = parse_time_text(text)) {
    return *stamp;
  }
  if (const auto duration = parse_duration(text)) {
    return now - *duration;
  }
  throw usage_error(fmt::format(
      "--since expects an RFC 3339 time (2026-08-10T09:00:00Z) or a duration (90s, 10m, 2h, "
      "1d), got '{}'",
      text));
}

std::optional<std::chrono::milliseconds> parse_timeout(std::string_view text) {
  const auto duration = parse_duration(text);
  if (!duration) {
    throw usage_error(fmt::format(
        "--timeout expects seconds or a duration (90s, 30m, 2h; 0 = no limit), got '{}'", text));
  }
  if (duration->count() == 0) {
    return std::nullopt;
  }
  return duration;
}

namespace {

int interrupted_exit(int signal) {
  return 128 + (signal == 0 ? SIGINT : signal);
}

void say_detached(std::ostream &err, const std::string &id, const char *why) {
  err << fmt::format("primebeaker: {}; experiment {} keeps running\n", why, id)
      << fmt::format("  follow again: primebeaker follow {}\n", id)
      << fmt::format("  stop it:      primebeaker stop {}\n", id);
  err.flush();
}

std::string describe_state(const Replica &replica) {
  if (replica.state == JobState::running) {
    return replica.node.empty() ? "running" : "running on node " + replica.node;
  }
  if (replica.detail.empty() || !is_terminal(replica.state)) {
    return std::string(state_name(replica.state));
  }
  // "canceled: sibling task failed", "preempted: ...", "failed: exit code 1".
  if (text::starts_with(replica.detail, "canceled") ||
      text::starts_with(replica.detail, "preempted")) {
    return replica.detail;
  }
  return fmt::format("{}: {}", state_name(replica.state), replica.detail);
}

void print_summary(std::ostream &err, const RunView &run) {
  if (run.outcome == Outcome::succeeded) {
    err << fmt::format("primebeaker: experiment {} succeeded\n", run.id);
  } else {
    std::string why;
    if (run.deciding_replica) {
      const auto &replica = run.replicas[*run.deciding_replica];
      why = fmt::format(": {} {} (job {})", replica.label(), replica.detail, replica.job_id);
    }
    err << fmt::format("primebeaker: experiment {} {}{}\n", run.id, outcome_name(run.outcome), why);
    for (const auto &replica : run.replicas) {
      err << fmt::format("  {:<14} {}\n", replica.label(), describe_state(replica));
    }
    if (run.deciding_replica) {
      err << fmt::format("  its logs: primebeaker logs {} --replica {} --tail 200\n",
                         run.id,
                         run.replicas[*run.deciding_replica].rank);
    }
  }
  err.flush();
}

} // namespace

namespace {

// Follows one experiment until it ends (then `*ended` is its last view), the timeout passes
// (counted from `started`) or a signal arrives.
int follow_one(const std::string &experiment_id,
               const FollowOptions &options,
               beaker::Client &beaker,
               std::ostream &out,
               std::ostream &err,
               TimePoint started,
               std::optional<RunView> &ended,
               const std::function<void(const RunView &)> &on_first_view) {
  Timing &timing = beaker.timing();
  SystemClock system_clock;
  Clock &clock = timing.clock != nullptr ? *timing.clock : system_clock;
  const auto signal = [&] { return timing.interrupted ? timing.interrupted() : 0; };
  const auto sleep = [&](std::chrono::milliseconds how_long) {
    if (timing.sleep) {
      return timing.sleep(how_long);
    }
    std::this_thread::sleep_for(how_long);
    return true;
  };
  std::map<std::string, std::size_t> consumed; // job id -> log bytes already shown
  std::map<std::string, bool> since_verdict;   // job id -> --since verdict of its last line
  std::map<std::string, std::string> shown;    // replica label -> last state line shown
  std::set<std::string> seen_jobs;
  // A plain time and a flag, not std::optional: GCC 12 -O3 misreads the optional as
  // maybe-uninitialized (-Werror).
  bool preempted = false;
  TimePoint preempted_at{};
  bool announced = false;
  // A queued run's place (docs/runs.md "Queue position"): asked at most once a minute, said
  // when it changes.
  std::optional<TimePoint> queue_asked;
  std::string queue_said;
  // --timeout holds in every wait: no sleep runs past the deadline.
  const auto timed_out = [&] {
    return options.timeout && clock.now() - started >= *options.timeout;
  };
  const auto nap = [&](std::chrono::milliseconds how_long) {
    if (options.timeout) {
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
          *options.timeout - (clock.now() - started));
      how_long = std::clamp(left, std::chrono::milliseconds(0), how_long);
    }
    return how_long.count() == 0 || sleep(how_long);
  };

  try {
    for (;;) {
      if (const int sig = signal(); sig != 0) {
        say_detached(err, experiment_id, "stopped following");
        return interrupted_exit(sig);
      }
      const RunView run =
          parse_run(single_experiment(beaker.get_experiment(experiment_id), experiment_id));
      const std::string id = run.id.empty() ? experiment_id : run.id;
      if (!announced) {
        err << fmt::format("primebeaker: following {} {} ({} replica{}); Ctrl-C stops following, "
                           "not the run\n",
                           id,
                           run.name,
                           run.replicas.size(),
                           run.replicas.size() == 1 ? "" : "s");
        announced = true;
        on_first_view(run);
      }
      if (options.replica && !run.replicas.empty() &&
          std::none_of(run.replicas.begin(), run.replicas.end(), [&](const Replica &r) {
            return r.rank == *options.replica;
          })) {
        throw usage_error(fmt::format("--replica {}: experiment {} has replicas 0..{}",
                                      *options.replica,
                                      id,
                                      run.replicas.back().rank));
      }
      for (const auto &replica : run.replicas) {
        if (options.replica && replica.rank != *options.replica) {
          continue;
        }
        if (!seen_jobs.count(replica.job_id) && replica.attempts > 1 &&
            !shown[replica.label()].empty()) {
          err << fmt::format(
              "[{}] new job {} (attempt {})\n", replica.label(), replica.job_id, replica.attempts);
        }
        seen_jobs.insert(replica.job_id);
        const std::string state = describe_state(replica);
        if (shown[replica.label()] != state) {
          err << fmt::format("[{}] {}\n", replica.label(), state);
          shown[replica.label()] = state;
        }
      }
      if (!options.logs || !is_queued(run)) {
        queue_asked.reset(); // the controller and a sweep's follow spend no calls on it
      } else if (!queue_asked || clock.now() - *queue_asked >= std::chrono::minutes(1)) {
        queue_asked = clock.now();
        if (const auto queue = current_queue(run, beaker, clock.now())) {
          auto unchanged = *queue;
          unchanged.waited_seconds = 0;
          if (const auto key = queue_line(unchanged); key != queue_said) {
            err << fmt::format("primebeaker: {}\n", queue_line(*queue));
            queue_said = key;
          }
        }
      }
      err.flush();

      for (const auto &replica : run.replicas) {
        if (!options.logs || (options.replica && replica.rank != *options.replica) ||
            replica.job_id.empty() || replica.state == JobState::pending ||
            replica.state == JobState::scheduled) {
          continue;
        }
        const std::string log = beaker.job_logs(replica.job_id);
        std::vector<std::string> lines;
        auto &done = consumed[replica.job_id];
        done += take_new_lines(log, done, is_terminal(replica.state), lines);
        auto &verdict = since_verdict.try_emplace(replica.job_id, true).first->second;
        const std::string prefix = fmt::format("[{}] ", replica.label());
        for (const auto &line : lines) {
          verdict = keep_since(line, options.since, verdict);
          if (verdict) {
            out << prefix << line << '\n';
          }
        }
        out.flush();
      }

      if (run.outcome == Outcome::preempted && run.auto_resume) {
        // Beaker resumes this task by itself: wait for its new job, for a while.
        if (!preempted) {
          preempted = true;
          preempted_at = clock.now();
          err << "primebeaker: preempted; waiting for Beaker to resume it\n";
        }
        if (clock.now() - preempted_at < options.resume_grace) {
          if (timed_out()) {
            say_detached(err, id, "--timeout reached (preempted, waiting for Beaker to resume it)");
            return k_exit_timed_out;
          }
          if (!nap(options.poll_interval)) {
            say_detached(err, id, "stopped following");
            return interrupted_exit(signal());
          }
          continue;
        }
      }
      if (run.outcome != Outcome::running) {
        print_summary(err, run);
        ended = run;
        if (ended->id.empty()) {
          ended->id = id;
        }
        return exit_code_for(run.outcome);
      }
      preempted = false;
      if (timed_out()) {
        say_detached(err, id, fmt::format("--timeout reached ({})", state_summary(run)).c_str());
        return k_exit_timed_out;
      }
      if (!nap(options.poll_interval)) {
        say_detached(err, id, "stopped following");
        return interrupted_exit(signal());
      }
    }
  } catch (const Error &) {
    if (const int sig = signal(); sig != 0) {
      say_detached(err, experiment_id, "stopped following");
      return interrupted_exit(sig);
    }
    throw;
  }
}

} // namespace

int follow_run(const std::string &experiment_id,
               const FollowOptions &options,
               beaker::Client &beaker,
               std::ostream &out,
               std::ostream &err) {
  Timing &timing = beaker.timing();
  SystemClock system_clock;
  Clock &clock = timing.clock != nullptr ? *timing.clock : system_clock;
  const auto signal = [&] { return timing.interrupted ? timing.interrupted() : 0; };
  const auto sleep = [&](std::chrono::milliseconds how_long) {
    if (timing.sleep) {
      return timing.sleep(how_long);
    }
    std::this_thread::sleep_for(how_long);
    return true;
  };
  const auto started = clock.now();
  // --timeout counts across experiments and holds while recovery waits (backoff, another
  // actor's claim, a controller's pause): a wait that would pass the deadline ends at it.
  bool deadline_passed = false;
  const std::function<bool(std::chrono::milliseconds)> wait_within_timeout =
      [&](std::chrono::milliseconds how_long) {
        if (options.timeout) {
          const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
              *options.timeout - (clock.now() - started));
          if (left <= how_long) {
            if (left.count() > 0 && !sleep(left)) {
              return false;
            }
            deadline_passed = signal() == 0;
            return false;
          }
        }
        return sleep(how_long);
      };
  RecoverState state;
  RunNotifier notifier(options.recover); // docs/notify.md
  std::string id = experiment_id;
  // The controller's record of what it does, in the ledger beside the claims (docs/recovery.md
  // "The controller"); a terminal follower keeps none.
  ledger::ControllerStatus status;
  status.controller_experiment = env::get("BEAKER_EXPERIMENT_ID").value_or("");
  status.job_id = env::get("BEAKER_JOB_ID").value_or("");
  const auto report = [&](const std::string &following, const std::string &what) {
    if (!options.recover.controller || state.ledger_dir.empty()) {
      return;
    }
    status.following = following;
    status.state = what;
    status.last_action = state.last_action;
    status.updated_unix = std::chrono::duration<double>(clock.now().time_since_epoch()).count();
    try {
      ledger::write_controller_status(state.ledger_dir, status);
    } catch (const Error &error) {
      spdlog::warn("the controller's status could not be written: {}", error.what());
    }
  };
  const auto on_first_view = [&](const RunView &run) {
    if (!options.recover.controller) {
      return;
    }
    if (state.ledger_dir.empty()) {
      state.ledger_dir = ledger_location(run).dir;
      if (const auto earlier = ledger::read_controller_status(state.ledger_dir);
          earlier && earlier->controller_experiment == status.controller_experiment &&
          !status.job_id.empty() && earlier->job_id != status.job_id) {
        status.restarts = earlier->restarts + 1; // Beaker resumed this controller
      } else if (earlier && earlier->controller_experiment == status.controller_experiment) {
        status.restarts = earlier->restarts;
      }
    }
    if (state.last_action.empty()) {
      state.last_action = fmt::format("following {}", run.id.empty() ? id : run.id);
    }
    report(run.id.empty() ? id : run.id, "following");
  };
  for (;;) {
    std::optional<RunView> ended;
    const int code = follow_one(id, options, beaker, out, err, started, ended, on_first_view);
    if (ended && options.recover.enabled) {
      notifier.ended(*ended);
    }
    if (!options.recover.enabled || !ended ||
        (ended->outcome != Outcome::preempted && ended->outcome != Outcome::failed)) {
      if (ended) {
        state.last_action =
            fmt::format("{} {}; nothing to recover", ended->id, outcome_name(ended->outcome));
        report(ended->id, "ended");
      }
      return code;
    }
    // Beaker will not restart a multi-node topology together (docs/recovery.md): resubmit it.
    report(ended->id, "recovering");
    const RecoverResult next = recover_run(
        *ended, options.recover, state, beaker, clock, wait_within_timeout, signal, err);
    notifier.recovered(*ended, next);
    if (deadline_passed) {
      say_detached(err, ended->id, "--timeout reached while recovering it");
      report(ended->id, "ended");
      return k_exit_timed_out;
    }
    if (next.signal != 0) {
      say_detached(err, ended->id, "stopped following");
      return interrupted_exit(next.signal);
    }
    if (next.child.empty() && next.retry_later && options.recover.controller) {
      // Nobody watches a controller: ending here would end the run's recovery for good.
      const auto pause = std::clamp(options.recover.backoff * 8,
                                    options.poll_interval,
                                    std::max(options.poll_interval, options.recover.max_backoff));
      state.last_action = fmt::format(
          "{}: `rl resume` failed for now; trying again in {}", ended->id, wait_text(pause));
      err << "primebeaker: " << state.last_action << '\n';
      report(ended->id, "waiting");
      if (!wait_within_timeout(pause)) {
        if (deadline_passed) {
          say_detached(err, ended->id, "--timeout reached while recovering it");
          return k_exit_timed_out;
        }
        say_detached(err, ended->id, "stopped following");
        return interrupted_exit(signal());
      }
      continue; // follow_one sees it ended again, and recovery takes its own claim over
    }
    if (next.child.empty()) {
      report(ended->id, "ended");
      return next.not_recoverable ? k_exit_not_recoverable : code;
    }
    id = next.child;
  }
}

Timing interruptible_timing() {
  Timing timing;
  timing.interrupted = [] { return signals::Scope::pending(); };
  timing.sleep = [](std::chrono::milliseconds how_long) {
    const auto until = std::chrono::steady_clock::now() + how_long;
    while (signals::Scope::pending() == 0) {
      const auto left = until - std::chrono::steady_clock::now();
      if (left <= std::chrono::steady_clock::duration::zero()) {
        return true;
      }
      signals::Scope::sleep(std::chrono::ceil<std::chrono::milliseconds>(left));
    }
    return false;
  };
  return timing;
}

int follow(const std::string &experiment_id,
           const FollowOptions &options,
           proc::Runner &runner,
           std::ostream &out) {
  const signals::Scope guard;
  beaker::Client beaker(runner,
                        beaker::program_from_environment(env::snapshot()),
                        interruptible_timing(),
                        options.retry);
  return follow_run(experiment_id, options, beaker, out, std::cerr);
}

} // namespace pb::runs
