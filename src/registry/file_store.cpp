// SPDX-License-Identifier: MIT
// Directory registries (docs/registry.md): one file per key, TTLs in sidecar files.
#include "stores.hpp"

#include <primebeaker/core/error.hpp>
#include <primebeaker/core/fs.hpp>
#include <primebeaker/core/text.hpp>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

namespace pb::registry::detail {
namespace {

namespace stdfs = std::filesystem;

constexpr const char *k_ttl_dir = ".literegistry_ttl";

std::optional<std::string> read_if_present(const stdfs::path &path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    return std::nullopt;
  }
  std::ostringstream buffer;
  buffer << in.rdbuf();
  return buffer.str();
}

class FileStore final : public Registry {
public:
  explicit FileStore(stdfs::path root) : m_root(std::move(root)) {}

  std::string display() const override { return file_uri(m_root); }

  BackendKind kind() const override { return BackendKind::file; }

  std::vector<ServerRecord> live_servers(double now, double window_seconds) override {
    std::vector<ServerRecord> out;
    for (const auto &[key, value] : live_items(std::string(k_server_prefix), now)) {
      if (auto record = decode_server_record(key, value);
          record && record->live_at(now, window_seconds)) {
        out.push_back(std::move(*record));
      }
    }
    return out;
  }

  void put_server(const ServerRecord &record) override {
    ensure_root();
    std::error_code ec;
    stdfs::remove(sidecar(record.key()), ec); // a server record has no TTL
    pb::fs::write_file_atomic(m_root / record.key(), encode_server_record(record));
  }

  bool remove_server(const std::string &server_id) override {
    const std::string key = std::string(k_server_prefix) + server_id;
    std::error_code ec;
    const bool removed_value = stdfs::remove(m_root / key, ec);
    const bool removed_ttl = stdfs::remove(sidecar(key), ec);
    return removed_value || removed_ttl;
  }

  std::vector<EndpointRecord> endpoint_records(const std::string &name, double now) override {
    std::vector<EndpointRecord> out;
    for (const auto &[key, value] : live_items("endpoint_" + name + "_", now)) {
      if (auto record = decode_endpoint_record(value, name)) {
        out.push_back(std::move(*record));
      }
    }
    return out;
  }

  void put_endpoint(const EndpointRecord &record, double ttl_seconds, double now) override {
    if (!(ttl_seconds > 0)) {
      throw usage_error("an endpoint TTL must be a positive number of seconds");
    }
    ensure_root();
    std::error_code ec;
    stdfs::create_directories(m_root / k_ttl_dir, ec);
    // Sidecar first, then the value: a reader never sees the value without its expiry.
    pb::fs::write_file_atomic(sidecar(record.key()), python_float_text(now + ttl_seconds));
    pb::fs::write_file_atomic(m_root / record.key(), encode_endpoint_record(record));
  }

  void check_reachable(double) override { require_root(); }

private:
  stdfs::path sidecar(const std::string &key) const { return m_root / k_ttl_dir / sha256_hex(key); }

  void ensure_root() {
    std::error_code ec;
    stdfs::create_directories(m_root, ec);
    if (ec) {
      throw failure("cannot create registry directory " + m_root.string() + ": " + ec.message());
    }
  }

  void require_root() const {
    std::error_code ec;
    const auto status = stdfs::status(m_root, ec);
    if (!stdfs::exists(status)) {
      throw failure("registry directory " + m_root.string() + " does not exist (yet)");
    }
    if (!stdfs::is_directory(status)) {
      throw failure("registry path " + m_root.string() + " is not a directory");
    }
  }

  // Expired per its sidecar? Readers never delete: a reader must not race a writer's rename.
  bool expired(const std::string &key, double now) const {
    const auto text = read_if_present(sidecar(key));
    if (!text) {
      return false;
    }
    const std::string trimmed(pb::text::trim(*text));
    char *end = nullptr;
    const double expiry = std::strtod(trimmed.c_str(), &end);
    if (trimmed.empty() || end != trimmed.c_str() + trimmed.size()) {
      return false; // unparsable sidecar: ignored, the value stays valid (docs/registry.md)
    }
    return now >= expiry;
  }

  std::vector<std::pair<std::string, std::string>> live_items(const std::string &prefix,
                                                              double now) {
    require_root();
    std::vector<std::pair<std::string, std::string>> items;
    std::error_code ec;
    stdfs::directory_iterator it(m_root, ec);
    if (ec) {
      throw failure("cannot list registry directory " + m_root.string() + ": " + ec.message());
    }
    for (; it != stdfs::directory_iterator(); it.increment(ec)) {
      const std::string name = it->path().filename().string();
      if (name.empty() || name[0] == '.' || !pb::text::starts_with(name, prefix) ||
          !it->is_regular_file(ec)) {
        continue;
      }
      if (expired(name, now)) {
        continue;
      }
      if (auto value = read_if_present(it->path())) { // vanished in between: skipped
        items.emplace_back(name, std::move(*value));
      }
    }
    std::sort(items.begin(), items.end());
    return items;
  }

  stdfs::path m_root;
};

} // namespace

std::unique_ptr<Registry> open_file_store(const Location &location) {
  return std::make_unique<FileStore>(location.path);
}

} // namespace pb::registry::detail
