// SPDX-License-Identifier: MIT
#include "stores.hpp"

#include <primebeaker/core/env.hpp>
#include <primebeaker/core/error.hpp>
#include <primebeaker/registry/registry.hpp>

#include <fstream>

namespace pb::registry {

double epoch_seconds(std::chrono::system_clock::time_point time) {
  return std::chrono::duration<double>(time.time_since_epoch()).count();
}

OpenOptions default_open_options() {
  OpenOptions options;
  options.beaker_node_hostname = env::get("BEAKER_NODE_HOSTNAME");
  options.beaker_host_gateway = env::get("BEAKER_HOST_GATEWAY");
  return options;
}

std::unique_ptr<Registry> open_registry(std::string_view uri, const OpenOptions &options) {
  return open_registry(parse_location(uri, options.parse), options);
}

std::unique_ptr<Registry> open_registry(const Location &location, const OpenOptions &options) {
  switch (location.kind) {
  case BackendKind::file:
    return detail::open_file_store(location);
  case BackendKind::sqlite:
    return detail::open_sqlite_store(location, options);
  case BackendKind::redis:
    if (location.redis.tls) {
      throw usage_error(tls_unsupported_message(location.redis));
    }
    return detail::open_redis_store(location, options);
  case BackendKind::head:
    if (location.head_backend->kind == BackendKind::redis && location.head_backend->redis.tls) {
      throw usage_error(tls_unsupported_message(location.head_backend->redis));
    }
    return detail::open_head_store(location, options);
  }
  throw usage_error("unsupported registry URI");
}

std::map<std::string, std::vector<ServerRecord>>
group_by_service(const std::vector<ServerRecord> &servers) {
  std::map<std::string, std::vector<ServerRecord>> groups;
  for (const auto &server : servers) {
    groups[server.service].push_back(server);
  }
  return groups;
}

std::map<std::string, int> count_by_service(const std::vector<ServerRecord> &servers) {
  std::map<std::string, int> counts;
  for (const auto &server : servers) {
    ++counts[server.service];
  }
  return counts;
}

std::optional<EndpointRecord>
newest_endpoint(Registry &registry, const std::string &name, double now) {
  std::optional<EndpointRecord> newest;
  for (auto &record : registry.endpoint_records(name, now)) {
    if (!newest || record.published_at > newest->published_at) {
      newest = std::move(record);
    }
  }
  return newest;
}

std::string new_server_id(const std::string &host) {
  std::array<unsigned char, 16> bytes{};
  std::ifstream random("/dev/urandom", std::ios::binary);
  random.read(reinterpret_cast<char *>(bytes.data()), bytes.size());
  if (!random) {
    throw failure("cannot read /dev/urandom for a server id");
  }
  bytes[6] = static_cast<unsigned char>((bytes[6] & 0x0f) | 0x40); // uuid4
  bytes[8] = static_cast<unsigned char>((bytes[8] & 0x3f) | 0x80);
  static const char *const k_hex = "0123456789abcdef";
  std::string hex;
  for (const unsigned char b : bytes) {
    hex.push_back(k_hex[b >> 4]);
    hex.push_back(k_hex[b & 15]);
  }
  return host + "-" + hex;
}

} // namespace pb::registry
