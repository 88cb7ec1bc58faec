// SPDX-License-Identifier: MIT
// Verified hashes kept by file state (hash_cache.hpp).
#include "hash_cache.hpp"

#include "copy.hpp"

#include <primebeaker/core/env.hpp>
#include <primebeaker/core/error.hpp>
#include <primebeaker/core/fs.hpp>
#include <primebeaker/core/json.hpp>

#include <spdlog/spdlog.h>

#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <vector>

namespace pb::staging::detail {
namespace {

constexpr int k_version = 1;
constexpr std::int64_t k_settle_ns = 1'000'000'000; // a change within this before hashing: racy

std::int64_t ns(const struct timespec &time) {
  return static_cast<std::int64_t>(time.tv_sec) * 1'000'000'000 + time.tv_nsec;
}

std::int64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

} // namespace

std::filesystem::path HashCache::default_file() {
  if (const auto xdg = env::get("XDG_CACHE_HOME"); xdg && !xdg->empty() && xdg->front() == '/') {
    return std::filesystem::path(*xdg) / "primebeaker" / "verified-sha256.json";
  }
  if (const auto home = env::get("HOME"); home && !home->empty() && home->front() == '/') {
    return std::filesystem::path(*home) / ".cache" / "primebeaker" / "verified-sha256.json";
  }
  return {};
}

HashCache::HashCache(std::filesystem::path file) : m_file(std::move(file)) {
  if (m_file.empty()) {
    return;
  }
  std::string text;
  try {
    text = fs::read_file(m_file);
  } catch (const Error &) {
    return; // none yet
  }
  const auto j = OrderedJson::parse(text, nullptr, false);
  if (!j.is_object() || j.value("version", 0) != k_version || !j.contains("files") ||
      !j["files"].is_object()) {
    return;
  }
  for (const auto &[path, e] : j["files"].items()) {
    try {
      Entry entry;
      entry.device = e.at("dev").get<std::uint64_t>();
      entry.inode = e.at("ino").get<std::uint64_t>();
      entry.size = e.at("size").get<std::uint64_t>();
      entry.mtime_ns = e.at("mtime_ns").get<std::int64_t>();
      entry.ctime_ns = e.at("ctime_ns").get<std::int64_t>();
      entry.hashed_ns = e.at("hashed_ns").get<std::int64_t>();
      entry.sha256 = e.at("sha256").get<std::string>();
      m_entries.emplace(path, std::move(entry));
    } catch (const std::exception &) {
      // a damaged entry is only a file hashed again
    }
  }
}

std::string HashCache::sha256(const std::filesystem::path &path) {
  std::error_code ec;
  const std::filesystem::path absolute = std::filesystem::absolute(path, ec);
  const std::string key = (ec ? path : absolute).lexically_normal().string();
  struct stat before {};
  const bool stated = ::stat(key.c_str(), &before) == 0;
  if (stated) {
    const auto found = m_entries.find(key);
    if (found != m_entries.end()) {
      const Entry &e = found->second;
      if (e.device == before.st_dev && e.inode == before.st_ino &&
          e.size == static_cast<std::uint64_t>(before.st_size) &&
          e.mtime_ns == ns(before.st_mtim) && e.ctime_ns == ns(before.st_ctim)) {
        return e.sha256;
      }
    }
  }
  const std::int64_t started = now_ns();
  const std::string hex = hash_file(path).hex; // throws, naming the file
  ++m_hashed;
  struct stat after {};
  if (!m_file.empty() && stated && ::stat(key.c_str(), &after) == 0 &&
      after.st_ino == before.st_ino && after.st_size == before.st_size &&
      ns(after.st_mtim) == ns(before.st_mtim) && ns(after.st_ctim) == ns(before.st_ctim) &&
      ns(after.st_ctim) < started - k_settle_ns && ns(after.st_mtim) < started - k_settle_ns) {
    Entry entry;
    entry.device = static_cast<std::uint64_t>(after.st_dev);
    entry.inode = static_cast<std::uint64_t>(after.st_ino);
    entry.size = static_cast<std::uint64_t>(after.st_size);
    entry.mtime_ns = ns(after.st_mtim);
    entry.ctime_ns = ns(after.st_ctim);
    entry.hashed_ns = started;
    entry.sha256 = hex;
    m_entries[key] = std::move(entry);
    m_changed = true;
  }
  return hex;
}

void HashCache::save() {
  if (!m_changed || m_file.empty()) {
    return;
  }
  std::vector<std::pair<std::string, const Entry *>> newest;
  for (const auto &[path, entry] : m_entries) {
    newest.emplace_back(path, &entry);
  }
  std::sort(newest.begin(), newest.end(), [](const auto &a, const auto &b) {
    return a.second->hashed_ns > b.second->hashed_ns;
  });
  if (newest.size() > k_max_entries) {
    newest.resize(k_max_entries);
  }
  OrderedJson files = OrderedJson::object();
  std::sort(newest.begin(), newest.end());
  for (const auto &[path, e] : newest) {
    files[path] = {{"dev", e->device},
                   {"ino", e->inode},
                   {"size", e->size},
                   {"mtime_ns", e->mtime_ns},
                   {"ctime_ns", e->ctime_ns},
                   {"hashed_ns", e->hashed_ns},
                   {"sha256", e->sha256}};
  }
  OrderedJson j = OrderedJson::object();
  j["version"] = k_version;
  j["files"] = std::move(files);
  try {
    std::error_code ec;
    std::filesystem::create_directories(m_file.parent_path(), ec);
    fs::write_file_atomic(m_file, j.dump() + "\n");
    m_changed = false;
  } catch (const Error &error) {
    spdlog::debug("the hash cache {} was not written: {}", m_file.string(), error.what());
  }
}

} // namespace pb::staging::detail
