// SPDX-License-Identifier: MIT
#include "stores.hpp"

#include <primebeaker/core/python_json.hpp>
#include <primebeaker/core/sha2.hpp>
#include <primebeaker/registry/records.hpp>

#include <cmath>
#include <cstdint>
#include <map>

namespace pb::registry {
namespace {

// Sorts object keys at every level (json.dumps(sort_keys=True)); nlohmann::json's std::map
// orders by bytes, which for UTF-8 is code point order, as Python sorts.
nlohmann::ordered_json sorted(const nlohmann::ordered_json &value) {
  if (value.is_object()) {
    std::map<std::string, nlohmann::ordered_json> items;
    for (auto it = value.begin(); it != value.end(); ++it) {
      items.emplace(it.key(), sorted(it.value()));
    }
    nlohmann::ordered_json out = nlohmann::ordered_json::object();
    for (auto &[key, item] : items) {
      out[key] = std::move(item);
    }
    return out;
  }
  if (value.is_array()) {
    nlohmann::ordered_json out = nlohmann::ordered_json::array();
    for (const auto &item : value) {
      out.push_back(sorted(item));
    }
    return out;
  }
  return value;
}

bool is_number(const nlohmann::ordered_json &value) {
  return value.is_number() && !value.is_boolean();
}

} // namespace

bool ServerRecord::live_at(double now, double window_seconds) const {
  return now - last_heartbeat <= window_seconds;
}

ServerRecord make_server_record(const std::string &server_id,
                                const std::string &host,
                                int port,
                                const std::string &uri,
                                double last_heartbeat,
                                nlohmann::ordered_json metadata) {
  ServerRecord record;
  record.server_id = server_id;
  record.host = host;
  record.port = port;
  record.uri = uri;
  record.last_heartbeat = last_heartbeat;
  if (!metadata.is_object()) {
    metadata = nlohmann::ordered_json::object();
  }
  const auto model_path = metadata.find("model_path");
  record.service = model_path != metadata.end() && model_path->is_string()
                       ? model_path->get<std::string>()
                       : "default";
  record.fields = nlohmann::ordered_json::object();
  record.fields["server_id"] = server_id;
  record.fields["host"] = host;
  record.fields["port"] = port;
  record.fields["last_heartbeat"] = last_heartbeat;
  record.fields["metadata"] = std::move(metadata);
  record.fields["status"] = "active";
  record.fields["uri"] = uri;
  return record;
}

std::optional<ServerRecord> decode_server_record(std::string_view key, std::string_view bytes) {
  auto parsed = nlohmann::ordered_json::parse(bytes, nullptr, false);
  if (parsed.is_discarded() || !parsed.is_object()) {
    return std::nullopt;
  }
  const auto heartbeat = parsed.find("last_heartbeat");
  if (heartbeat == parsed.end() || !is_number(*heartbeat) ||
      !std::isfinite(heartbeat->get<double>())) {
    return std::nullopt;
  }
  ServerRecord record;
  record.last_heartbeat = heartbeat->get<double>();
  const auto text_field = [&parsed](const char *name) -> std::string {
    const auto it = parsed.find(name);
    return it != parsed.end() && it->is_string() ? it->get<std::string>() : std::string();
  };
  record.server_id = text_field("server_id");
  if (record.server_id.empty() && key.substr(0, k_server_prefix.size()) == k_server_prefix) {
    record.server_id = std::string(key.substr(k_server_prefix.size()));
  }
  record.host = text_field("host");
  record.uri = text_field("uri");
  if (const auto port = parsed.find("port"); port != parsed.end() && is_number(*port)) {
    record.port = port->get<double>();
  }
  record.service = "default";
  if (const auto metadata = parsed.find("metadata");
      metadata != parsed.end() && metadata->is_object()) {
    if (const auto model = metadata->find("model_path");
        model != metadata->end() && model->is_string()) {
      record.service = model->get<std::string>();
    }
  }
  record.fields = std::move(parsed);
  return record;
}

std::string encode_server_record(const ServerRecord &record) {
  auto fields = record.fields.is_object() ? record.fields : nlohmann::ordered_json::object();
  // The typed members win over stale copies in `fields` (a heartbeat changes last_heartbeat).
  fields["last_heartbeat"] = record.last_heartbeat;
  return python_json(fields);
}

std::string EndpointRecord::key() const {
  return "endpoint_" + name + "_" + sha256_hex(publisher_id);
}

std::string encode_endpoint_record(const EndpointRecord &record) {
  nlohmann::ordered_json value = nlohmann::ordered_json::object();
  value["metadata"] =
      record.metadata.is_object() ? record.metadata : nlohmann::ordered_json::object();
  value["name"] = record.name;
  value["published_at"] = record.published_at;
  value["publisher_id"] = record.publisher_id;
  value["schema_version"] = 1;
  std::string uri = record.uri;
  while (!uri.empty() && uri.back() == '/') {
    uri.pop_back();
  }
  value["uri"] = uri;
  return python_json(sorted(value), ",", ":");
}

bool valid_endpoint_name(std::string_view name) {
  if (name.empty() || name.size() > 128 || std::isalnum(static_cast<unsigned char>(name[0])) == 0) {
    return false;
  }
  for (const char c : name) {
    if (std::isalnum(static_cast<unsigned char>(c)) == 0 && c != '_' && c != '.' && c != '-') {
      return false;
    }
  }
  return true;
}

std::optional<EndpointRecord> decode_endpoint_record(std::string_view bytes,
                                                     std::string_view expected_name) {
  const auto parsed = nlohmann::ordered_json::parse(bytes, nullptr, false);
  if (parsed.is_discarded() || !parsed.is_object()) {
    return std::nullopt;
  }
  const auto version = parsed.find("schema_version");
  if (version == parsed.end() || !version->is_number_integer() || version->get<int64_t>() != 1) {
    return std::nullopt;
  }
  const auto get_string = [&parsed](const char *name) -> std::optional<std::string> {
    const auto it = parsed.find(name);
    if (it == parsed.end() || !it->is_string()) {
      return std::nullopt;
    }
    return it->get<std::string>();
  };
  EndpointRecord record;
  const auto name = get_string("name");
  const auto uri = get_string("uri");
  const auto publisher = get_string("publisher_id");
  if (!name || !uri || !publisher || *name != expected_name || !valid_endpoint_name(*name) ||
      publisher->empty() || uri->empty() || uri->find_first_of(" \t\r\n") != std::string::npos ||
      uri->find("://") == std::string::npos || uri->find("://") + 3 >= uri->size()) {
    return std::nullopt;
  }
  const auto published = parsed.find("published_at");
  if (published == parsed.end() || !is_number(*published)) {
    return std::nullopt;
  }
  record.name = *name;
  record.uri = *uri;
  record.publisher_id = *publisher;
  record.published_at = published->get<double>();
  if (const auto metadata = parsed.find("metadata");
      metadata != parsed.end() && metadata->is_object()) {
    record.metadata = *metadata;
  }
  return record;
}

std::string python_json(const nlohmann::ordered_json &value,
                        std::string_view item_separator,
                        std::string_view key_separator) {
  return pb::python_json::dumps(value,
                                {.item_separator = item_separator, .key_separator = key_separator});
}

std::string sha256_hex(std::string_view data) {
  return sha2::sha256_hex(data);
}

} // namespace pb::registry

namespace pb::registry::detail {
std::string python_float_text(double value) {
  return pb::python_json::dumps(nlohmann::ordered_json(value));
}
} // namespace pb::registry::detail
