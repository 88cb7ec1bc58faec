// SPDX-License-Identifier: MIT
// A queued run's place among its cluster's waiting jobs (docs/runs.md "Queue position").
#include "status.hpp"

#include <primebeaker/core/error.hpp>
#include <primebeaker/core/text.hpp>
#include <primebeaker/runs/queue.hpp>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <set>

namespace pb::runs {

namespace {

std::string text_of(const OrderedJson &value) {
  return value.is_string() ? value.get<std::string>() : std::string();
}

std::string ordinal(std::size_t n) {
  const char *suffix = "th";
  if (n % 100 < 11 || n % 100 > 13) {
    suffix = n % 10 == 1 ? "st" : n % 10 == 2 ? "nd" : n % 10 == 3 ? "rd" : "th";
  }
  return fmt::format("{}{}", n, suffix);
}

} // namespace

std::vector<ClusterJob> parse_cluster_jobs(const OrderedJson &listing) {
  const OrderedJson *items = &listing;
  for (const char *key : {"data", "jobs"}) {
    if (field(listing, key).is_array()) {
      items = &field(listing, key);
    }
  }
  std::vector<ClusterJob> jobs;
  if (!items->is_array()) {
    return jobs;
  }
  for (const auto &job : *items) {
    if (!job.is_object()) {
      continue;
    }
    const auto &status = field(job, "status");
    const auto &execution = field(job, "execution");
    ClusterJob one;
    one.id = text_of(field(job, "id"));
    one.experiment_id = text_of(field(execution, "experiment"));
    one.priority = text_of(field(field(field(execution, "spec"), "context"), "priority"));
    one.message = text_of(field(status, "message"));
    one.created = parse_time(field(status, "created"));
    one.unscheduled = classify_job(status) == JobState::pending;
    jobs.push_back(std::move(one));
  }
  return jobs;
}

bool is_queued(const RunView &run) {
  return std::any_of(run.replicas.begin(), run.replicas.end(), [](const Replica &replica) {
    return replica.state == JobState::pending && !replica.job_id.empty();
  });
}

std::vector<std::string> requested_clusters(const RunView &run) {
  std::vector<std::string> out = run.clusters;
  if (out.empty()) {
    for (const auto &replica : run.replicas) {
      if (!replica.cluster.empty() &&
          std::find(out.begin(), out.end(), replica.cluster) == out.end()) {
        out.push_back(replica.cluster);
      }
    }
  }
  return out;
}

std::optional<QueuePosition> queue_position(const RunView &run,
                                            const std::string &cluster,
                                            const std::vector<ClusterJob> &jobs,
                                            TimePoint now) {
  if (!is_queued(run)) {
    return std::nullopt;
  }
  QueuePosition out;
  out.cluster = cluster;
  std::set<std::string> mine;
  std::optional<TimePoint> since;
  for (const auto &replica : run.replicas) {
    if (replica.state != JobState::pending) {
      continue;
    }
    mine.insert(replica.job_id);
    if (replica.created && (!since || *replica.created < *since)) {
      since = replica.created;
    }
    if (out.priority.empty()) {
      out.priority = replica.priority;
    }
    if (out.message.empty()) {
      out.message = replica.message;
    }
  }
  for (const auto &job : jobs) {
    if (mine.count(job.id) > 0 || (!run.id.empty() && job.experiment_id == run.id)) {
      out.priority = out.priority.empty() ? job.priority : out.priority;
      out.message = out.message.empty() ? job.message : out.message;
      if (job.created && (!since || *job.created < *since)) {
        since = job.created;
      }
    }
  }
  if (since) {
    out.waited_seconds = std::max(0.0, std::chrono::duration<double>(now - *since).count());
  }
  // Each experiment's waiting jobs count once (its replicas are scheduled together), at the
  // time its first one was created; a job without an experiment (a session) counts alone.
  std::map<std::string, TimePoint> waiting;
  for (const auto &job : jobs) {
    const bool own = mine.count(job.id) > 0 || (!run.id.empty() && job.experiment_id == run.id);
    if (own || !job.unscheduled || (!out.priority.empty() && job.priority != out.priority)) {
      continue;
    }
    const std::string key = job.experiment_id.empty() ? "job " + job.id : job.experiment_id;
    const TimePoint created = job.created.value_or(TimePoint::max());
    const auto [it, added] = waiting.emplace(key, created);
    if (!added) {
      it->second = std::min(it->second, created);
    }
  }
  const TimePoint mine_at = since.value_or(now);
  out.position = 1;
  for (const auto &[key, created] : waiting) {
    if (created < mine_at) {
      ++out.position;
    }
  }
  out.of = waiting.size() + 1;
  return out;
}

std::optional<QueuePosition>
current_queue(const RunView &run, beaker::Client &beaker, TimePoint now) {
  if (!is_queued(run)) {
    return std::nullopt;
  }
  for (const auto &cluster : requested_clusters(run)) {
    try {
      return queue_position(run, cluster, parse_cluster_jobs(beaker.cluster_jobs(cluster)), now);
    } catch (const Error &error) {
      spdlog::info(
          "the queue of {} is not known: {}", cluster, text::split(error.what(), '\n').front());
    }
  }
  return std::nullopt;
}

OrderedJson queue_json(const QueuePosition &queue) {
  OrderedJson out = OrderedJson::object();
  out["cluster"] = queue.cluster;
  out["priority"] = queue.priority.empty() ? OrderedJson(nullptr) : OrderedJson(queue.priority);
  out["position"] = queue.position;
  out["of"] = queue.of;
  out["waited_seconds"] = std::round(queue.waited_seconds);
  out["message"] = queue.message.empty() ? OrderedJson(nullptr) : OrderedJson(queue.message);
  return out;
}

std::string queue_line(const QueuePosition &queue) {
  std::string line =
      fmt::format("waiting {}: {} of {} at {} on {}",
                  duration_text(queue.waited_seconds),
                  ordinal(queue.position),
                  queue.of,
                  queue.priority.empty() ? "any priority" : "priority " + queue.priority,
                  queue.cluster);
  if (!queue.message.empty()) {
    line += "; beaker: " + queue.message;
  }
  return line;
}

} // namespace pb::runs
