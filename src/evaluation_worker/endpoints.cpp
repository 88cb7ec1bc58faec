// SPDX-License-Identifier: MIT
// Endpoint readiness (docs/evaluation-worker.md, "Readiness"): the newest live record of a name
// in the coordination root, accepted once its health check passes.
#include <primebeaker/core/error.hpp>
#include <primebeaker/evaluation_worker/worker.hpp>
#include <primebeaker/registry/gateway_probe.hpp>
#include <primebeaker/registry/location.hpp>

#include <thread>

namespace pb::evaluation_worker {

void check_health(HealthCheck check, const std::string &uri, std::chrono::milliseconds timeout) {
  switch (check) {
  case HealthCheck::none:
    return;
  case HealthCheck::redis: {
    const auto location = registry::parse_location(uri);
    if (location.kind != registry::BackendKind::redis) {
      throw failure("'" + registry::redact_uri(uri) + "' is not a redis:// URI");
    }
    registry::ping_redis(location.redis, timeout);
    return;
  }
  case HealthCheck::http: {
    std::string base = uri;
    while (!base.empty() && base.back() == '/') {
      base.pop_back();
    }
    const long status = registry::http_get_status(base + "/health", timeout);
    if (status < 200 || status >= 400) {
      throw failure("GET /health answered HTTP " + std::to_string(status));
    }
    return;
  }
  }
}

std::string wait_for_endpoint(registry::Registry &endpoints, const EndpointWait &wait) {
  SystemClock system_clock;
  Clock &clock = wait.clock != nullptr ? *wait.clock : system_clock;
  const auto deadline = clock.now() + wait.timeout;
  std::optional<std::string> last_uri;
  std::string problem;
  std::string reported;
  while (true) {
    try {
      const auto record =
          registry::newest_endpoint(endpoints, wait.name, registry::epoch_seconds(clock.now()));
      if (record) {
        last_uri = record->uri;
        try {
          if (wait.health) {
            wait.health(record->uri);
          } else {
            check_health(wait.check, record->uri, wait.probe_timeout);
          }
          return record->uri;
        } catch (const std::exception &error) {
          problem = registry::redact_uri(record->uri) + " is not healthy yet: " + error.what();
        }
      } else {
        problem = "not published yet";
      }
    } catch (const std::exception &error) { // the root may not exist yet: retried
      problem = std::string("cannot read the endpoint registry yet: ") + error.what();
    }
    if (wait.progress && problem != reported) {
      wait.progress("waiting for endpoint '" + wait.name + "' in " + endpoints.display() + ": " +
                    problem);
      reported = problem;
    }
    const auto remaining =
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - clock.now());
    if (remaining.count() <= 0) {
      std::string message =
          "timed out waiting for endpoint '" + wait.name + "' in " + endpoints.display();
      if (last_uri) {
        message += "; last published URI was " + registry::redact_uri(*last_uri);
      }
      throw Error(ExitCode::failure, message, {"last seen: " + problem});
    }
    const auto pause = std::min(wait.poll_interval, remaining);
    if (wait.sleep) {
      wait.sleep(pause);
    } else {
      std::this_thread::sleep_for(pause);
    }
  }
}

} // namespace pb::evaluation_worker
