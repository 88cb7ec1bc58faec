// SPDX-License-Identifier: MIT
// The file work of staging: hashing, verified copies, the manifest.
#pragma once

#include <sys/types.h>

#include <filesystem>
#include <map>
#include <string>

namespace pb::staging::detail {

struct FileHash {
  std::string hex;
  std::uintmax_t size = 0;
};

// SHA-256 of a file, read in pieces. Throws pb::Error (exit 1) naming it.
FileHash hash_file(const std::filesystem::path &path);

// Copies `from` (symlinks followed) to the new file `to` with `mode`, hashing what it reads,
// fsyncs it, then reads the copy back and compares: returns the hash both agree on. Throws
// pb::Error (exit 1) naming the file and the OS reason (ENOSPC included).
std::string
copy_verified(const std::filesystem::path &from, const std::filesystem::path &to, mode_t mode);

// Writes `content` to the new file `to` with `mode` and fsyncs it; returns its SHA-256.
std::string write_new(const std::filesystem::path &to, const std::string &content, mode_t mode);

// The manifest: relative path -> SHA-256, in `sha256sum` format ("<hex>  <path>\n").
using Manifest = std::map<std::string, std::string>;
std::string format_manifest(const Manifest &manifest);
// Throws pb::Error (exit 1) naming `source` on a malformed line.
Manifest parse_manifest(const std::string &text, const std::string &source);

} // namespace pb::staging::detail
