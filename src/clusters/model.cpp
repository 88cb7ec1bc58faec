// SPDX-License-Identifier: MIT
// Beaker's cluster JSON read in one place, and the snapshot of the clusters a command asks
// for (docs/clusters.md).
#include <primebeaker/beaker/client.hpp>
#include <primebeaker/clusters/clusters.hpp>
#include <primebeaker/core/concurrent.hpp>
#include <primebeaker/core/error.hpp>
#include <primebeaker/core/text.hpp>

#include <fmt/chrono.h>
#include <fmt/format.h>

#include <fnmatch.h>

#include <algorithm>
#include <chrono>
#include <map>
#include <set>

namespace pb::clusters {
namespace {

const OrderedJson *member(const OrderedJson &object, std::string_view key) {
  if (!object.is_object()) {
    return nullptr;
  }
  const auto found = object.find(std::string(key));
  return found == object.end() || found->is_null() ? nullptr : &*found;
}

// Protobuf's JSON omits zero values and writes int64 as a string: both are a count.
std::int64_t count(const OrderedJson &object, std::string_view key, std::string_view where) {
  const OrderedJson *value = member(object, key);
  if (value == nullptr) {
    return 0;
  }
  if (value->is_number_integer()) {
    return value->get<std::int64_t>();
  }
  if (value->is_string()) {
    if (const auto parsed = text::parse_integer(value->get_ref<const std::string &>())) {
      return *parsed;
    }
  }
  throw tool_error(fmt::format(
      "beaker's answer for {}: {} is not a whole number: {}", where, key, value->dump()));
}

std::string string_of(const OrderedJson &object, std::string_view key) {
  const OrderedJson *value = member(object, key);
  if (value == nullptr) {
    return {};
  }
  return value->is_string() ? value->get<std::string>() : value->dump();
}

SlotCounts slots_of(const OrderedJson &object, std::string_view where) {
  SlotCounts slots;
  const OrderedJson *counts = member(object, "slotCounts");
  if (counts == nullptr) {
    return slots;
  }
  if (!counts->is_object()) {
    throw tool_error(fmt::format("beaker's answer for {}: slotCounts is not an object", where));
  }
  slots.total = count(*counts, "total", where);
  slots.available = count(*counts, "available", where);
  slots.occupied = count(*counts, "occupied", where);
  slots.assigned = count(*counts, "assigned", where);
  slots.cordoned = count(*counts, "cordoned", where);
  return slots;
}

// A cluster's ACCOUNT/NAME as an answer gives it, "" when it does not.
std::string full_name(const OrderedJson &object, const std::string &account) {
  if (auto name = string_of(object, "fullName"); !name.empty()) {
    return name;
  }
  std::string name = string_of(object, "name");
  if (name.empty() || name.find('/') != std::string::npos) {
    return name;
  }
  std::string owner = string_of(object, "organizationName");
  if (const OrderedJson *organization = member(object, "organization");
      owner.empty() && organization != nullptr) {
    owner = string_of(*organization, "name");
  }
  if (owner.empty()) {
    owner = account;
  }
  return owner.empty() ? name : owner + "/" + name;
}

std::string now_rfc3339() {
  const auto now = std::chrono::floor<std::chrono::seconds>(std::chrono::system_clock::now());
  return fmt::format("{:%Y-%m-%dT%H:%M:%SZ}", now);
}

} // namespace

std::int64_t Cluster::free_nodes(std::int64_t gpus) const {
  if (gpus <= 0) {
    gpus = node_gpus;
  }
  if (gpus <= 0 || !has_occupancy) {
    return 0;
  }
  return std::count_if(nodes.begin(), nodes.end(), [gpus](const NodeOccupancy &node) {
    return node.slots.available >= gpus;
  });
}

Cluster parse_cluster(const OrderedJson &answer, const std::string &requested) {
  const OrderedJson &object = answer.is_array() && !answer.empty() ? answer.front() : answer;
  if (!object.is_object()) {
    throw tool_error(
        fmt::format("beaker's answer for cluster {} is not a cluster object", requested));
  }
  Cluster cluster;
  cluster.name = requested;
  if (cluster.name.empty()) {
    cluster.name = full_name(object, "");
  }
  const std::string &where = cluster.name;
  cluster.node_count = count(object, "nodeCount", where);
  cluster.queued_jobs = count(object, "clusterJobQueueSize", where);
  if (const OrderedJson *shape = member(object, "nodeShape")) {
    cluster.node_gpus = count(*shape, "gpuCount", where);
    cluster.gpu_type = string_of(*shape, "gpuType");
  }
  if (const OrderedJson *occupancy = member(object, "clusterOccupancy")) {
    if (!occupancy->is_object()) {
      throw tool_error(
          fmt::format("beaker's answer for {}: clusterOccupancy is not an object", where));
    }
    cluster.has_occupancy = true;
    cluster.running_jobs = count(*occupancy, "runningJobsCount", where);
    cluster.slots = slots_of(*occupancy, where);
    if (const OrderedJson *nodes = member(*occupancy, "nodeOccupancies")) {
      if (!nodes->is_array()) {
        throw tool_error(
            fmt::format("beaker's answer for {}: nodeOccupancies is not a list", where));
      }
      for (const auto &node : *nodes) {
        NodeOccupancy read;
        read.node_id = string_of(node, "nodeId");
        read.running_jobs = count(node, "runningJobsCount", where);
        read.slots = slots_of(node, where);
        cluster.nodes.push_back(std::move(read));
      }
    }
  }
  return cluster;
}

std::vector<std::string> parse_cluster_names(const OrderedJson &answer,
                                             const std::string &account) {
  if (!answer.is_array() && !answer.is_object()) {
    throw tool_error(
        fmt::format("beaker cluster list {} printed JSON that is not a list", account));
  }
  std::vector<std::string> names;
  const auto add = [&](const OrderedJson &object) {
    if (auto name = full_name(object, account); !name.empty()) {
      names.push_back(std::move(name));
    }
  };
  if (answer.is_object()) {
    add(answer);
  } else {
    for (const auto &object : answer) {
      add(object);
    }
  }
  return names;
}

bool is_glob(std::string_view pattern) {
  return pattern.find_first_of("*?[") != std::string_view::npos;
}

std::vector<std::string> expand_patterns(const std::vector<std::string> &patterns,
                                         const std::vector<std::string> &known) {
  std::set<std::string> names;
  for (const auto &pattern : patterns) {
    if (!is_glob(pattern)) {
      names.insert(pattern);
      continue;
    }
    for (const auto &name : known) {
      if (::fnmatch(pattern.c_str(), name.c_str(), 0) == 0) {
        names.insert(name);
      }
    }
  }
  return {names.begin(), names.end()};
}

Snapshot take_snapshot(beaker::Client &beaker,
                       const std::vector<std::string> &patterns,
                       std::string_view flag,
                       std::size_t workers) {
  Snapshot snapshot;
  snapshot.patterns = patterns;
  std::map<std::string, std::vector<std::string>> known; // account -> its clusters
  for (const auto &pattern : patterns) {
    const auto slash = pattern.find('/');
    if (slash == std::string::npos || slash == 0 || slash + 1 == pattern.size() ||
        is_glob(pattern.substr(0, slash))) {
      throw usage_error(
          fmt::format("{} {}: name clusters as ACCOUNT/NAME (a glob only after the '/': ai2/*)",
                      flag,
                      pattern));
    }
    const std::string account = pattern.substr(0, slash);
    if (is_glob(pattern) && known.count(account) == 0) {
      snapshot.calls.push_back(fmt::format("beaker cluster list {}", account));
      known[account] = parse_cluster_names(beaker.list_clusters(account), account);
    }
  }
  std::vector<std::string> listed;
  for (const auto &[account, names] : known) {
    listed.insert(listed.end(), names.begin(), names.end());
  }
  for (const auto &pattern : patterns) {
    if (is_glob(pattern) && expand_patterns({pattern}, listed).empty()) {
      throw usage_error(fmt::format("{} {}: no cluster of `beaker cluster list {}` matches it",
                                    flag,
                                    pattern,
                                    pattern.substr(0, pattern.find('/'))));
    }
  }
  const auto names = expand_patterns(patterns, listed);
  if (names.empty()) {
    throw usage_error(fmt::format("{}: no cluster to look at", flag));
  }
  snapshot.clusters.resize(names.size());
  concurrent::for_each_index(names.size(), workers, [&](std::size_t i) {
    try {
      snapshot.clusters[i] = parse_cluster(beaker.get_cluster(names[i]), names[i]);
    } catch (const Error &error) {
      // One cluster Beaker will not describe is shown and ruled out, not the end of the list.
      snapshot.clusters[i].name = names[i];
      snapshot.clusters[i].error = error.what();
    }
  });
  for (const auto &name : names) {
    snapshot.calls.push_back(fmt::format("beaker cluster get {}", name));
  }
  snapshot.taken_at = now_rfc3339();
  return snapshot;
}

OrderedJson row_json(const Cluster &cluster, std::int64_t gpus) {
  OrderedJson row = OrderedJson::object();
  row["cluster"] = cluster.name;
  row["free_gpus"] = cluster.free_gpus();
  row["total_gpus"] = cluster.slots.total;
  row["cordoned_gpus"] = cluster.slots.cordoned;
  row["free_nodes"] = cluster.free_nodes(gpus);
  row["gpus_per_node"] = cluster.node_gpus;
  row["nodes"] = cluster.node_count;
  row["queued_jobs"] = cluster.queued_jobs;
  row["gpu_type"] = cluster.gpu_type;
  if (!cluster.error.empty()) {
    row["error"] = cluster.error;
  } else if (!cluster.has_occupancy) {
    row["error"] = "beaker gave no occupancy for it";
  }
  return row;
}

} // namespace pb::clusters
