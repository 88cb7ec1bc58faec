// SPDX-License-Identifier: MIT
// LiteRegistry's records (docs/registry.md) and their exact byte formats. Pure.
#pragma once

#include <nlohmann/json.hpp>

#include <optional>
#include <string>
#include <string_view>

namespace pb::registry {

// Key prefix of worker records, and the Redis sorted set indexing their heartbeats.
inline constexpr std::string_view k_server_prefix = "server_";
inline constexpr std::string_view k_heartbeat_index = "literegistry:server_heartbeats:v1";
// The liveness window PrimeBeaker's barriers use (seconds, inclusive).
inline constexpr double k_default_heartbeat_window = 240.0;

// One worker ("server") record. `fields` is the whole decoded object in its stored key order,
// so unknown fields survive a rewrite.
struct ServerRecord {
  std::string server_id;
  std::string host;
  double port = 0;
  double last_heartbeat = 0; // Unix epoch seconds
  std::string uri;
  std::string service; // metadata.model_path, or "default" when missing or not a string
  nlohmann::ordered_json fields;

  std::string key() const { return std::string(k_server_prefix) + server_id; }
  // Live iff now - last_heartbeat <= window (the inclusive edge of docs/registry.md).
  bool live_at(double now, double window_seconds) const;
};

// Builds the record ServerRegistry.register_server writes: server_id, host, port,
// last_heartbeat, metadata, status "active", uri, in that order. Pure.
ServerRecord make_server_record(const std::string &server_id,
                                const std::string &host,
                                int port,
                                const std::string &uri,
                                double last_heartbeat,
                                nlohmann::ordered_json metadata);

// Decodes the value stored under `key`; nullopt when it is not a JSON object or lacks a
// numeric last_heartbeat. Readers skip such records (docs/registry.md). A missing server_id is
// taken from the key.
std::optional<ServerRecord> decode_server_record(std::string_view key, std::string_view bytes);
// Python json.dumps with default separators (", ", ": ") and ensure_ascii: LiteRegistry's bytes.
std::string encode_server_record(const ServerRecord &record);

// One endpoint record, schema version 1 (docs/registry.md).
struct EndpointRecord {
  std::string name;
  std::string uri;
  std::string publisher_id;
  double published_at = 0;
  nlohmann::ordered_json metadata = nlohmann::ordered_json::object();

  // endpoint_<name>_<sha256hex(publisher_id)>
  std::string key() const;
};

// Compact JSON with sorted keys (separators "," and ":"), ensure_ascii, schema_version 1.
std::string encode_endpoint_record(const EndpointRecord &record);
// nullopt unless schema_version is exactly 1, name/uri/publisher are valid and the name equals
// `expected_name`.
std::optional<EndpointRecord> decode_endpoint_record(std::string_view bytes,
                                                     std::string_view expected_name);
// True for names matching [A-Za-z0-9][A-Za-z0-9_.-]{0,127}.
bool valid_endpoint_name(std::string_view name);

// Python's json.dumps(value, ensure_ascii=True) with the given separators; floats as Python's
// repr (shortest round-trip, "1.0", "1e-05"). Keys are emitted in the order `value` holds them.
std::string python_json(const nlohmann::ordered_json &value,
                        std::string_view item_separator = ", ",
                        std::string_view key_separator = ": ");

// Lower-case hex SHA-256 of `data` (endpoint keys and file TTL sidecar names).
std::string sha256_hex(std::string_view data);

} // namespace pb::registry
