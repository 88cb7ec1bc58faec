// SPDX-License-Identifier: MIT
// The worker's effects (docs/evaluation-worker.md): signals, the three readiness waits, the one
// child in its own process group, and the once-only stop of the service experiment.
#include <primebeaker/core/error.hpp>
#include <primebeaker/core/signals.hpp>
#include <primebeaker/core/text.hpp>
#include <primebeaker/evaluation_worker/worker.hpp>
#include <primebeaker/registry/wait.hpp>

#include <exception>
#include <iostream>

namespace pb::evaluation_worker {
namespace {

void note(const std::string &line) {
  std::cerr << "primebeaker evaluation worker: " << line << '\n' << std::flush;
}

// Thrown out of the waits when a terminating signal arrives; deliberately not a std::exception,
// so no retry loop swallows it.
struct Interrupted {
  int signal;
};

void throw_if_signalled() {
  if (const int signal = signals::Scope::pending()) {
    throw Interrupted{signal};
  }
}

void interruptible_sleep(std::chrono::milliseconds duration) {
  signals::Scope::sleep(duration);
  throw_if_signalled();
}

// Progress lines: printed when they change, and again after `every` if they do not.
class Progress {
public:
  explicit Progress(std::chrono::milliseconds every) : m_every(every) {}
  std::function<void(const std::string &)> callback() {
    return [this](const std::string &line) {
      const auto now = std::chrono::steady_clock::now();
      if (line != m_last || now - m_printed >= m_every) {
        note(line);
        m_last = line;
        m_printed = now;
      }
    };
  }

private:
  std::chrono::milliseconds m_every;
  std::string m_last;
  std::chrono::steady_clock::time_point m_printed{};
};

// Stops the owned service experiment at most once, whichever way the worker ends.
class ServiceCleanup {
public:
  explicit ServiceCleanup(const WorkerEnv &worker) : m_worker(worker) {}
  ~ServiceCleanup() {
    try {
      run();
    } catch (...) { // a destructor must not throw; run() already reports its failures
    }
  }
  ServiceCleanup(const ServiceCleanup &) = delete;
  ServiceCleanup &operator=(const ServiceCleanup &) = delete;

  void run() {
    if (m_done) {
      return;
    }
    m_done = true;
    const std::string &id = m_worker.service_experiment_id;
    if (m_worker.keep_services) {
      note("keep-services: leaving service experiment " + id + " running");
      return;
    }
    proc::Command stop;
    stop.argv = {m_worker.beaker, "experiment", "stop", id};
    stop.timeout = std::chrono::seconds(120);
    std::string reason;
    try {
      const auto result = proc::SystemRunner().run(stop);
      if (result.ok()) {
        std::cout << "STOPPED_EXPERIMENT_ID=" << id << '\n' << std::flush;
        return;
      }
      const std::string detail(text::trim(result.err.empty() ? result.out : result.err));
      reason = result.status() + (detail.empty() ? "" : ": " + detail);
    } catch (const std::exception &error) {
      reason = error.what();
    }
    std::cerr << "warning: could not stop managed service experiment " << id << " (" << reason
              << ")\n"
              << std::flush;
  }

private:
  const WorkerEnv &m_worker;
  bool m_done = false;
};

// Readiness (docs/evaluation-worker.md, "Readiness"): the registry, the gateway, the roster.
struct Ready {
  std::string registry;
  std::string gateway;
};

Ready wait_until_ready(const WorkerEnv &worker, const Tuning &tuning) {
  Progress progress(tuning.progress_every);
  auto coordination = registry::open_registry(worker.coordination_root);
  EndpointWait wait;
  wait.timeout = worker.readiness_timeout;
  wait.poll_interval = tuning.poll_interval;
  wait.probe_timeout = tuning.probe_timeout;
  wait.sleep = interruptible_sleep;
  wait.progress = progress.callback();

  Ready ready;
  if (worker.registry) {
    ready.registry = *worker.registry;
  } else {
    wait.name = "redis";
    wait.check = HealthCheck::redis;
    ready.registry = wait_for_endpoint(*coordination, wait);
    note("registry ready: " + registry::redact_uri(ready.registry));
  }
  throw_if_signalled();
  wait.name = "gateway";
  wait.check = HealthCheck::http;
  ready.gateway = wait_for_endpoint(*coordination, wait);
  note("gateway ready: " + registry::redact_uri(ready.gateway));
  throw_if_signalled();

  if (!worker.required_services.empty()) {
    auto roster = registry::open_registry(ready.registry);
    registry::WaitOptions options;
    options.timeout = worker.readiness_timeout;
    options.poll_interval = tuning.poll_interval;
    options.sleep = interruptible_sleep;
    options.progress = progress.callback();
    const auto result = registry::wait_for_services(*roster, worker.required_services, options);
    if (result.status != registry::WaitStatus::ready) {
      throw failure("timed out waiting for LiteRegistry services: " + result.message);
    }
    note("required services ready");
  }
  return ready;
}

// Runs the child until it exits or a terminating signal arrives (forwarded to its group).
// Returns the worker's exit status.
int supervise(proc::Child &child, const std::string &what) {
  while (true) {
    if (const int signal = signals::Scope::pending()) {
      note(std::string(signals::name(signal)) + " received: forwarding it to " + what);
      child.signal_group(signal);
      throw Interrupted{signal};
    }
    if (const auto status = child.poll()) {
      if (status->code() != 0) {
        note(what + " ended (" + status->describe() + ")");
      }
      return exit_status_of(*status);
    }
    signals::Scope::sleep(std::chrono::seconds(1)); // SIGCHLD wakes it at once
    proc::reap_untracked_zombies({child.pid()});    // orphans we inherited as subreaper
  }
}

} // namespace

int run_worker(const EnvMap &env, const Tuning &tuning) {
  // Before anything is installed: a bad contract exits 1 and stops nothing.
  const WorkerEnv worker = parse_worker_env(env);

  // SIGINT/SIGTERM/SIGHUP become a pending signal; they and SIGCHLD wake the waits at once.
  const signals::Scope interrupts(signals::ScopeOptions{.hangup = true, .child_exit_wakes = true});
  proc::become_subreaper(); // orphans the child leaves behind stay ours to kill
  ServiceCleanup cleanup(worker);
  proc::Child child;
  int status = 1;
  std::exception_ptr error;
  try {
    const Ready ready = wait_until_ready(worker, tuning);
    throw_if_signalled();
    proc::SpawnSpec spec;
    spec.argv = child_argv(worker);
    spec.env = child_environment(env, ready.registry, ready.gateway);
    const std::string what = worker.python + " -m " + worker.module;
    note("starting " + what);
    child = proc::Child::spawn(spec);
    status = supervise(child, what);
  } catch (const Interrupted &interrupted) {
    status = 128 + interrupted.signal;
    error = std::make_exception_ptr(
        Error(status, std::string("stopped by ") + signals::name(interrupted.signal)));
  } catch (...) {
    error = std::current_exception();
  }
  // The `finally` of Python PrimeBeaker: the child's group, orphans, then the service experiment.
  if (child.valid()) {
    child.stop(tuning.stop_grace);
  }
  proc::kill_remaining_children();
  cleanup.run();
  if (error) {
    std::rethrow_exception(error);
  }
  return status;
}

} // namespace pb::evaluation_worker
