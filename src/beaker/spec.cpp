// SPDX-License-Identifier: MIT
#include <primebeaker/beaker/spec.hpp>
#include <primebeaker/core/text.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <set>

namespace pb::beaker {

Image Image::from_reference(std::string_view reference) {
  constexpr std::string_view prefix = "beaker://";
  if (text::starts_with(reference, prefix)) {
    return {Kind::beaker, std::string(reference.substr(prefix.size()))};
  }
  return {Kind::docker, std::string(reference)};
}

EnvVar EnvVar::plain(std::string name, std::string value) {
  return {std::move(name), std::move(value), {}, false};
}

EnvVar EnvVar::from_secret(std::string name, std::string secret) {
  return {std::move(name), {}, std::move(secret), true};
}

namespace {

OrderedJson task_json(const Task &task) {
  OrderedJson out = OrderedJson::object();
  out["name"] = task.name;
  out["image"] = OrderedJson::object(
      {{task.image.kind == Image::Kind::beaker ? "beaker" : "docker", task.image.ref}});
  out["command"] = task.command;
  if (task.replication) {
    const auto &r = *task.replication;
    out["replicas"] = r.replicas;
    out["leaderSelection"] = r.leader_selection;
    out["synchronizedStartTimeout"] = r.synchronized_start_timeout;
    out["hostNetworking"] = r.host_networking;
    out["propagateFailure"] = r.propagate_failure;
    out["propagatePreemption"] = r.propagate_preemption;
  }
  OrderedJson env = OrderedJson::array();
  for (const auto &var : task.env_vars) {
    OrderedJson entry = OrderedJson::object();
    entry["name"] = var.name;
    if (var.is_secret) {
      entry["secret"] = var.secret;
    } else {
      entry["value"] = var.value;
    }
    env.push_back(std::move(entry));
  }
  out["envVars"] = std::move(env);
  OrderedJson datasets = OrderedJson::array();
  for (const auto &mount : task.datasets) {
    OrderedJson entry = OrderedJson::object();
    entry["mountPath"] = mount.mount_path;
    entry["source"] = OrderedJson::object({{"weka", mount.bucket}});
    datasets.push_back(std::move(entry));
  }
  out["datasets"] = std::move(datasets);
  out["result"] = OrderedJson::object({{"path", task.result_path}});
  out["resources"] = OrderedJson::object({{"gpuCount", task.gpu_count}});
  if (task.cpu_count > 0) {
    out["resources"]["cpuCount"] = task.cpu_count;
  }
  if (!task.memory.empty()) {
    out["resources"]["memory"] = task.memory;
  }
  OrderedJson context = OrderedJson::object();
  context["priority"] = task.context.priority;
  context["minRuntime"] = task.context.min_runtime;
  context["autoResume"] = task.context.auto_resume;
  out["context"] = std::move(context);
  out["constraints"] = OrderedJson::object({{"cluster", task.clusters}});
  return out;
}

// Durations as the CLI takes them: a number and a unit (ns, us, µs, ms, s, m, h); no unit is
// seconds. Returns nanoseconds, or nullopt when the text is not a duration.
std::optional<long double> duration_ns(std::string_view text) {
  size_t digits = 0;
  while (digits < text.size() &&
         (std::isdigit(static_cast<unsigned char>(text[digits])) || text[digits] == '.')) {
    ++digits;
  }
  if (digits == 0) {
    return std::nullopt;
  }
  long double number = 0;
  try {
    number = std::stold(std::string(text.substr(0, digits)));
  } catch (const std::exception &) {
    return std::nullopt;
  }
  const std::string_view unit = text.substr(digits);
  static const std::pair<std::string_view, long double> units[] = {{"", 1e9L},
                                                                   {"s", 1e9L},
                                                                   {"ns", 1.0L},
                                                                   {"us", 1e3L},
                                                                   {"µs", 1e3L},
                                                                   {"ms", 1e6L},
                                                                   {"m", 60e9L},
                                                                   {"h", 3600e9L}};
  for (const auto &[name, scale] : units) {
    if (unit == name) {
      return number * scale;
    }
  }
  return std::nullopt;
}

std::string lower(std::string_view text) {
  std::string out(text);
  std::transform(out.begin(), out.end(), out.begin(), [](unsigned char c) {
    return static_cast<char>(std::tolower(c));
  });
  return out;
}

bool is_absolute(std::string_view path) {
  return !path.empty() && path.front() == '/';
}

// "/a/b" contains "/a/b/c"; "/" contains everything.
bool path_contains(std::string outer, const std::string &inner) {
  if (outer.size() > 1 && outer.back() == '/') {
    outer.pop_back();
  }
  if (outer == "/") {
    return true;
  }
  return inner == outer || text::starts_with(inner, outer + "/");
}

} // namespace

OrderedJson to_json(const Experiment &experiment) {
  OrderedJson out = OrderedJson::object();
  out["version"] = "v2";
  out["description"] = experiment.description;
  OrderedJson tasks = OrderedJson::array();
  for (const auto &task : experiment.tasks) {
    tasks.push_back(task_json(task));
  }
  out["tasks"] = std::move(tasks);
  if (!experiment.budget.empty()) {
    out["budget"] = experiment.budget;
  }
  if (experiment.allowed_task_retries > 0) {
    out["retry"] = OrderedJson::object({{"allowedTaskRetries", experiment.allowed_task_retries}});
  }
  return out;
}

const std::vector<std::string> &known_priorities() {
  static const std::vector<std::string> known = {
      "immediate", "urgent", "high", "normal", "low", "preemptible"};
  return known;
}

bool is_known_priority(std::string_view priority) {
  const auto &known = known_priorities();
  return std::find(known.begin(), known.end(), priority) != known.end();
}

bool is_workspace_name(std::string_view workspace) {
  const auto slash = workspace.find('/');
  return slash != std::string_view::npos && slash > 0 && slash + 1 < workspace.size() &&
         workspace.find('/', slash + 1) == std::string_view::npos &&
         workspace.find_first_of(" \t\n") == std::string_view::npos;
}

std::vector<std::string> problems(const Experiment &experiment) {
  std::vector<std::string> found;
  if (experiment.tasks.empty()) {
    found.emplace_back("a Beaker spec needs at least one task");
  }
  if (experiment.allowed_task_retries < 0 || experiment.allowed_task_retries > 10) {
    found.push_back(fmt::format("retry.allowedTaskRetries must be in 0..10, got {}",
                                experiment.allowed_task_retries));
  }
  std::set<std::string> task_names;
  for (const auto &task : experiment.tasks) {
    const std::string where = fmt::format("task '{}'", task.name);
    if (task.name.empty()) {
      found.emplace_back("every Beaker task needs a name");
    } else if (!task_names.insert(task.name).second) {
      found.push_back(fmt::format("task names must be unique: '{}' appears twice", task.name));
    }
    if (task.image.ref.empty()) {
      found.push_back(where + ": the image reference is empty");
    }
    if (task.command.empty() || task.command.front().empty()) {
      found.push_back(where + ": the command is empty");
    }
    std::set<std::string> env_names;
    for (const auto &var : task.env_vars) {
      if (var.name.empty()) {
        found.push_back(where + ": an environment variable has an empty name");
      } else if (!env_names.insert(var.name).second) {
        found.push_back(fmt::format("{}: environment variable {} is set twice", where, var.name));
      }
      if (var.is_secret && var.secret.empty()) {
        found.push_back(
            fmt::format("{}: environment variable {} names an empty secret", where, var.name));
      }
    }
    std::vector<std::string> mounts;
    for (const auto &mount : task.datasets) {
      if (!is_absolute(mount.mount_path)) {
        found.push_back(
            fmt::format("{}: mount path '{}' must be absolute", where, mount.mount_path));
      }
      if (mount.bucket.empty()) {
        found.push_back(
            fmt::format("{}: the Weka bucket mounted at {} has no name", where, mount.mount_path));
      }
      for (const auto &other : mounts) {
        if (path_contains(lower(other), lower(mount.mount_path)) ||
            path_contains(lower(mount.mount_path), lower(other))) {
          found.push_back(
              fmt::format("{}: mount paths {} and {} overlap", where, other, mount.mount_path));
        }
      }
      mounts.push_back(mount.mount_path);
    }
    if (!is_absolute(task.result_path)) {
      found.push_back(
          fmt::format("{}: result path '{}' must be absolute", where, task.result_path));
    }
    if (task.gpu_count < 0) {
      found.push_back(fmt::format("{}: gpuCount must be >= 0, got {}", where, task.gpu_count));
    }
    if (!is_known_priority(task.context.priority)) {
      found.push_back(fmt::format("{}: unknown priority '{}'", where, task.context.priority));
    }
    const bool preemptible = task.context.priority == "preemptible";
    const bool has_cluster = std::any_of(task.clusters.begin(),
                                         task.clusters.end(),
                                         [](const std::string &c) { return !c.empty(); });
    if (!has_cluster && !preemptible) {
      found.push_back(where + ": at least one non-empty Beaker cluster is required");
    }
    for (const auto &cluster : task.clusters) {
      if (cluster.empty() && has_cluster) {
        found.push_back(where + ": cluster names cannot be empty");
      }
    }
    if (task.replication) {
      const auto &r = *task.replication;
      if (r.replicas < 1) {
        found.push_back(fmt::format("{}: replicas must be >= 1, got {}", where, r.replicas));
      }
      const auto timeout = duration_ns(r.synchronized_start_timeout);
      if (!timeout || *timeout <= 0 || *timeout > 48 * 3600e9L) {
        found.push_back(fmt::format("{}: synchronizedStartTimeout '{}' must be a duration in "
                                    "(0, 48h]",
                                    where,
                                    r.synchronized_start_timeout));
      }
      if (r.leader_selection && !r.host_networking) {
        found.push_back(where + ": leaderSelection needs hostNetworking");
      }
    }
  }
  return found;
}

} // namespace pb::beaker
