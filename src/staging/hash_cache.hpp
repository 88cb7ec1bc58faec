// SPDX-License-Identifier: MIT
// The SHA-256 of files this machine has already verified, kept as git's index keeps its stat
// data (docs/staging.md "Reuse"): a file whose device, inode, size, mtime and ctime are those it
// had when it was hashed is not read again. A user can set mtime but not ctime, so a file
// changed since is hashed again; a file changed in the second before it was hashed is never
// remembered (its timestamps could not tell a later change within the same tick).
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <string>

namespace pb::staging::detail {

class HashCache {
public:
  // $XDG_CACHE_HOME/primebeaker/verified-sha256.json, else ~/.cache/...; empty when neither
  // variable is set (then nothing is remembered).
  static std::filesystem::path default_file();

  // Reads `file` (missing, unreadable or of another version: an empty cache).
  explicit HashCache(std::filesystem::path file);

  // The SHA-256 of `path`: remembered when its state is unchanged, else hashed now. Throws
  // pb::Error (exit 1) naming a file it cannot read.
  std::string sha256(const std::filesystem::path &path);

  // Writes the cache back when a hash was added (atomically; at most k_max_entries, the newest
  // kept). A cache that cannot be written is only slower: never throws.
  void save();

  std::size_t hashed() const { return m_hashed; } // files read by sha256() so far
  static constexpr std::size_t k_max_entries = 4096;

private:
  struct Entry {
    std::uint64_t device = 0, inode = 0, size = 0;
    std::int64_t mtime_ns = 0, ctime_ns = 0, hashed_ns = 0;
    std::string sha256;
  };
  std::filesystem::path m_file;
  std::map<std::string, Entry> m_entries; // by absolute path
  bool m_changed = false;
  std::size_t m_hashed = 0;
};

} // namespace pb::staging::detail
