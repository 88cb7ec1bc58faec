// SPDX-License-Identifier: MIT
#include <primebeaker/core/error.hpp>
#include <primebeaker/core/text.hpp>
#include <primebeaker/registry/wait.hpp>

#include <nlohmann/json.hpp>

#include <cstdio>
#include <thread>

namespace pb::registry {
namespace {

void add_requirement(Requirements &out,
                     const std::string &name,
                     long long count,
                     const std::string &shown) {
  if (name.empty()) {
    throw usage_error("service requirement " + shown + " has an empty service name");
  }
  if (count < 1) {
    throw usage_error("service requirement " + shown + " needs a positive count");
  }
  if (count > 1'000'000) {
    throw usage_error("service requirement " + shown + " asks for an implausible count");
  }
  out[name] = static_cast<int>(count);
}

struct Timing {
  Clock &clock;
  std::chrono::system_clock::time_point start;
  std::chrono::system_clock::time_point deadline;

  std::chrono::milliseconds elapsed() {
    return std::chrono::duration_cast<std::chrono::milliseconds>(clock.now() - start);
  }
};

SystemClock &system_clock_instance() {
  static SystemClock clock;
  return clock;
}

bool stop_requested(const WaitOptions &options) {
  std::error_code ec;
  return options.stop_file && std::filesystem::is_regular_file(*options.stop_file, ec);
}

// Sleeps one poll interval, but never past the deadline.
void pause(const WaitOptions &options, Timing &timing) {
  auto remaining =
      std::chrono::duration_cast<std::chrono::milliseconds>(timing.deadline - timing.clock.now());
  auto interval =
      std::min(options.poll_interval, std::max(remaining, std::chrono::milliseconds(0)));
  if (interval.count() <= 0) {
    return;
  }
  if (options.sleep) {
    options.sleep(interval);
  } else {
    std::this_thread::sleep_for(interval);
  }
}

std::string counts_text(const Requirements &requirements,
                        const std::map<std::string, int> &observed) {
  std::string out;
  for (const auto &[name, count] : requirements) {
    const auto it = observed.find(name);
    if (!out.empty()) {
      out += ", ";
    }
    out += name + " " + std::to_string(it == observed.end() ? 0 : it->second) + "/" +
           std::to_string(count);
  }
  return out;
}

std::string seconds_text(std::chrono::milliseconds elapsed) {
  char text[32];
  std::snprintf(text, sizeof text, "%.1fs", static_cast<double>(elapsed.count()) / 1000.0);
  return text;
}

} // namespace

Requirements parse_requirements(const std::vector<std::string> &name_equals_count) {
  Requirements out;
  for (const auto &entry : name_equals_count) {
    const auto trimmed = std::string(text::trim(entry));
    if (!trimmed.empty() && trimmed.front() == '{') {
      for (const auto &[name, count] : parse_requirements_json(trimmed)) {
        out[name] = count;
      }
      continue;
    }
    const auto equals = trimmed.rfind('=');
    if (equals == std::string::npos) {
      throw usage_error("--require expects NAME=COUNT, got '" + entry + "'");
    }
    const std::string name(text::trim(std::string_view(trimmed).substr(0, equals)));
    const std::string count_text(text::trim(std::string_view(trimmed).substr(equals + 1)));
    const auto count = text::parse_integer(count_text);
    if (!count) {
      throw usage_error("--require expects NAME=COUNT with an integer count, got '" + entry + "'");
    }
    add_requirement(out, name, *count, "'" + entry + "'");
  }
  return out;
}

Requirements parse_requirements_json(const std::string &json_object) {
  const auto parsed = nlohmann::json::parse(json_object, nullptr, false);
  if (parsed.is_discarded() || !parsed.is_object()) {
    throw usage_error("service requirements must be a JSON object {\"name\": count}, got " +
                      json_object);
  }
  Requirements out;
  for (auto it = parsed.begin(); it != parsed.end(); ++it) {
    const std::string shown = "'" + it.key() + "': " + it.value().dump();
    if (!it.value()
             .is_number_integer()) { // booleans and floats are rejected, as Python PrimeBeaker
      throw usage_error("service requirement " + shown + " needs a positive integer count");
    }
    add_requirement(out, it.key(), it.value().get<long long>(), shown);
  }
  return out;
}

ServiceWaitResult wait_for_services(Registry &registry,
                                    const Requirements &requirements,
                                    const WaitOptions &options) {
  Clock &clock = options.clock != nullptr ? *options.clock : system_clock_instance();
  Timing timing{clock, clock.now(), clock.now() + options.timeout};
  ServiceWaitResult result;
  if (requirements.empty()) {
    result.status = WaitStatus::ready;
    return result;
  }
  while (true) {
    if (stop_requested(options)) {
      result.status = WaitStatus::stopped;
      result.message =
          "shutdown requested while waiting for services: " + options.stop_file->string();
      break;
    }
    ++result.polls;
    try {
      const double now = epoch_seconds(clock.now());
      result.observed = count_by_service(registry.live_servers(now, options.heartbeat_window));
      result.last_error.reset();
      bool ready = true;
      for (const auto &[name, count] : requirements) {
        const auto it = result.observed.find(name);
        ready = ready && it != result.observed.end() && it->second >= count;
      }
      if (ready) {
        result.status = WaitStatus::ready;
        break;
      }
    } catch (const std::exception &error) { // every read failure is retried until the deadline
      result.last_error = error.what();
    }
    if (options.progress) {
      options.progress(
          "waiting for services in " + registry.display() + ": " +
          (result.last_error ? *result.last_error : counts_text(requirements, result.observed)));
    }
    if (clock.now() >= timing.deadline) {
      result.status = WaitStatus::timed_out;
      if (result.last_error) {
        result.message = "timed out after " + seconds_text(timing.elapsed()) +
                         " waiting for services in " + registry.display() + ": " +
                         *result.last_error;
      } else {
        nlohmann::ordered_json missing = nlohmann::ordered_json::object();
        for (const auto &[name, count] : requirements) {
          const auto it = result.observed.find(name);
          const int seen = it == result.observed.end() ? 0 : it->second;
          if (seen < count) {
            missing[name] = {{"expected", count}, {"observed", seen}};
          }
        }
        result.message = "timed out after " + seconds_text(timing.elapsed()) +
                         " waiting for services in " + registry.display() + ": " +
                         python_json(missing);
      }
      break;
    }
    pause(options, timing);
  }
  result.elapsed = timing.elapsed();
  return result;
}

RedisWaitResult wait_for_redis(Registry &registry, const WaitOptions &options) {
  Clock &clock = options.clock != nullptr ? *options.clock : system_clock_instance();
  Timing timing{clock, clock.now(), clock.now() + options.timeout};
  RedisWaitResult result;
  // Directories and SQLite files have no server to wait for.
  if (registry.kind() != BackendKind::redis && registry.kind() != BackendKind::head) {
    result.status = WaitStatus::ready;
    return result;
  }
  while (true) {
    if (stop_requested(options)) {
      result.status = WaitStatus::stopped;
      result.message = "shutdown requested while waiting for Redis: " + options.stop_file->string();
      break;
    }
    ++result.polls;
    try {
      registry.check_reachable(epoch_seconds(clock.now()));
      result.last_error.reset();
      result.status = WaitStatus::ready;
      break;
    } catch (const std::exception &error) { // every read failure is retried until the deadline
      result.last_error = error.what();
    }
    if (options.progress) {
      options.progress("waiting for Redis at " + registry.display() + ": " + *result.last_error);
    }
    if (clock.now() >= timing.deadline) {
      result.status = WaitStatus::timed_out;
      result.message = "timed out after " + seconds_text(timing.elapsed()) +
                       " waiting for Redis at " + registry.display() + ": " +
                       result.last_error.value_or("no answer");
      break;
    }
    pause(options, timing);
  }
  result.elapsed = timing.elapsed();
  return result;
}

void throw_unless_ready(WaitStatus status, const std::string &message) {
  switch (status) {
  case WaitStatus::ready:
    return;
  case WaitStatus::timed_out:
    throw failure(message);
  case WaitStatus::stopped:
    throw Error(ExitCode::peer_shutdown, message);
  }
}

} // namespace pb::registry
