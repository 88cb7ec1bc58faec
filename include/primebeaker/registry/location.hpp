// SPDX-License-Identifier: MIT
// Registry URIs (docs/registry.md): parsing, canonical forms and redaction. Pure, no I/O.
#pragma once

#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

namespace pb::registry {

// Where a Redis lives, as given in a redis:// URI (credentials already percent-decoded).
struct RedisAddress {
  std::string host;
  int port = 6379;
  std::string username; // empty: AUTH with the password only
  std::string password; // empty: no AUTH
  int database = 0;     // SELECT n when non-zero
  bool tls = false;     // rediss://

  // "redis://[user:***@]host:port[/db]": safe to print.
  std::string redacted() const;
  // The full URI including the password: for connecting, never for printing.
  std::string uri() const;
};

enum class BackendKind { file, sqlite, redis, head };

// A parsed registry URI. For `head`, `head_backend` is the parsed endpoint registry that holds
// the `redis` endpoint record (file, sqlite or redis, never head).
struct Location {
  BackendKind kind = BackendKind::file;
  std::filesystem::path path; // file: the directory; sqlite: the database file (absolute)
  RedisAddress redis;         // redis
  std::shared_ptr<const Location> head_backend;

  // The canonical URI (file:///abs, sqlite:///abs, redis://host:port, head+...), with any
  // Redis password replaced by "***": safe for messages and output.
  std::string display() const;
};

// What parsing needs from the outside world, passed in so parsing stays pure.
struct ParseContext {
  std::filesystem::path current_dir; // relative paths are made absolute against it
  std::string home;                  // for "~" expansion; empty: "~" is left as is
};
ParseContext current_parse_context(); // reads $HOME and the working directory

// Parses any registry URI of docs/registry.md: file:// and plain paths, sqlite://,
// redis://, rediss:// and head+file|sqlite|redis:// (plus the legacy head:///). Throws
// pb::Error (exit 2) naming the URI and what is wrong. rediss:// parses (so it can be
// reported precisely) but every attempt to connect to it fails with a clear TLS error.
Location parse_location(std::string_view uri, const ParseContext &context);
Location parse_location(std::string_view uri); // with current_parse_context()

// Replaces the password of every redis:// or rediss:// URL inside `text` (also after head+).
std::string redact_uri(std::string_view text);

// Percent-encodes a path the way Python's Path.as_uri does ("file:///a%20b").
std::string file_uri(const std::filesystem::path &absolute_path);

// The Beaker host-gateway rewrite of docs/registry.md: when both values are set and the URI's host
// equals `node_hostname`, the host becomes `host_gateway` (bracketed if IPv6). Pure.
std::string beaker_rewrite(const std::string &uri,
                           const std::optional<std::string> &node_hostname,
                           const std::optional<std::string> &host_gateway);

} // namespace pb::registry
