// SPDX-License-Identifier: MIT
#include <primebeaker/core/env.hpp>
#include <primebeaker/core/error.hpp>
#include <primebeaker/core/spelling.hpp>
#include <primebeaker/core/text.hpp>
#include <primebeaker/registry/location.hpp>

#include <cctype>

namespace pb::registry {
namespace {

// The pieces of "scheme:[//netloc]path[?query][#fragment]", as Python's urlsplit sees them.
struct SplitUrl {
  std::string scheme;
  bool has_netloc = false;
  std::string netloc;
  std::string path;
  bool has_query = false;
  bool has_fragment = false;
};

SplitUrl split_url(std::string_view text) {
  SplitUrl out;
  const auto colon = text.find(':');
  out.scheme = std::string(text.substr(0, colon));
  for (char &c : out.scheme) {
    c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  }
  std::string_view rest = text.substr(colon + 1);
  if (const auto hash = rest.find('#'); hash != std::string_view::npos) {
    out.has_fragment = true;
    rest = rest.substr(0, hash);
  }
  if (const auto question = rest.find('?'); question != std::string_view::npos) {
    out.has_query = true;
    rest = rest.substr(0, question);
  }
  if (text::starts_with(rest, "//")) {
    out.has_netloc = true;
    rest.remove_prefix(2);
    const auto slash = rest.find('/');
    out.netloc = std::string(rest.substr(0, slash));
    rest = slash == std::string_view::npos ? std::string_view{} : rest.substr(slash);
  }
  out.path = std::string(rest);
  return out;
}

// urllib.parse.unquote: malformed escapes stay as they are.
std::string percent_decode(std::string_view text) {
  std::string out;
  for (size_t i = 0; i < text.size(); ++i) {
    if (text[i] == '%' && i + 2 < text.size() && text::hex_digit_value(text[i + 1]) >= 0 &&
        text::hex_digit_value(text[i + 2]) >= 0) {
      out.push_back(static_cast<char>(text::hex_digit_value(text[i + 1]) * 16 +
                                      text::hex_digit_value(text[i + 2])));
      i += 2;
    } else {
      out.push_back(text[i]);
    }
  }
  return out;
}

Error bad_uri(std::string_view uri, const std::string &why) {
  return usage_error("invalid registry URI " + redact_uri(uri) + ": " + why);
}

// ~otheruser is not expanded (no passwd lookups in a pure parser).
std::filesystem::path expand_user(const std::string &path, const ParseContext &context) {
  return text::expand_user(path, context.home);
}

std::filesystem::path make_absolute(const std::filesystem::path &path,
                                    const ParseContext &context) {
  if (path.is_absolute()) {
    return path.lexically_normal();
  }
  return (context.current_dir / path).lexically_normal();
}

std::string strip_trailing_slash(std::filesystem::path path) {
  std::string text = path.string();
  while (text.size() > 1 && text.back() == '/') {
    text.pop_back();
  }
  return text;
}

Location parse_file(std::string_view uri, const ParseContext &context) {
  Location location;
  location.kind = BackendKind::file;
  if (!text::starts_with(uri, "file:")) {
    location.path =
        strip_trailing_slash(make_absolute(expand_user(std::string(uri), context), context));
    return location;
  }
  const auto split = split_url(uri);
  if (split.netloc != "" && split.netloc != "localhost") {
    throw bad_uri(uri,
                  "a file:// registry must be local (host empty or localhost), got host '" +
                      split.netloc + "'");
  }
  if (split.has_query || split.has_fragment) {
    throw bad_uri(uri, "a file:// registry takes no query or fragment");
  }
  const auto path = expand_user(percent_decode(split.path), context);
  if (path.empty() || !path.is_absolute()) {
    throw bad_uri(uri, "a file:// registry needs an absolute path, e.g. file:///shared/registry");
  }
  location.path = strip_trailing_slash(path.lexically_normal());
  return location;
}

Location parse_sqlite(std::string_view uri, const ParseContext &context) {
  Location location;
  location.kind = BackendKind::sqlite;
  const auto split = split_url(uri);
  if (split.netloc != "" && split.netloc != "localhost") {
    throw bad_uri(uri,
                  "an SQLite registry must be a local file; use "
                  "sqlite:///absolute/path/to/registry.sqlite3");
  }
  if (split.has_query || split.has_fragment) {
    throw bad_uri(uri, "an sqlite:// registry takes no query or fragment");
  }
  const auto path = percent_decode(split.path);
  if (path.empty() || path == "/") {
    throw bad_uri(uri, "the database path is empty; use sqlite:///absolute/path/registry.sqlite3");
  }
  if (path == ":memory:" || path == "/:memory:") {
    throw bad_uri(uri, "an in-memory SQLite database cannot be shared; give a file path");
  }
  location.path = make_absolute(expand_user(path, context), context);
  return location;
}

Location parse_redis(std::string_view uri) {
  Location location;
  location.kind = BackendKind::redis;
  const auto split = split_url(uri);
  auto &address = location.redis;
  address.tls = split.scheme == "rediss";
  if (split.has_query || split.has_fragment) {
    throw bad_uri(uri, "query parameters and fragments are not supported in redis:// URIs");
  }
  std::string hostport = split.netloc;
  if (const auto at = hostport.rfind('@'); at != std::string::npos) {
    const std::string userinfo = hostport.substr(0, at);
    hostport = hostport.substr(at + 1);
    if (const auto colon = userinfo.find(':'); colon != std::string::npos) {
      address.username = percent_decode(userinfo.substr(0, colon));
      address.password = percent_decode(userinfo.substr(colon + 1));
    } else {
      address.username = percent_decode(userinfo);
    }
  }
  std::string port_text;
  if (!hostport.empty() && hostport.front() == '[') {
    const auto close = hostport.find(']');
    if (close == std::string::npos) {
      throw bad_uri(uri, "unterminated IPv6 address");
    }
    address.host = hostport.substr(1, close - 1);
    const std::string after = hostport.substr(close + 1);
    if (!after.empty()) {
      if (after.front() != ':') {
        throw bad_uri(uri, "unexpected text after the IPv6 address");
      }
      port_text = after.substr(1);
    }
  } else if (const auto colon = hostport.rfind(':'); colon != std::string::npos) {
    address.host = hostport.substr(0, colon);
    port_text = hostport.substr(colon + 1);
  } else {
    address.host = hostport;
  }
  if (address.host.empty()) {
    throw bad_uri(uri, "a Redis registry needs a host name, e.g. redis://host:6379");
  }
  if (!port_text.empty()) {
    const auto port = text::parse_integer(port_text);
    if (!port || *port < 1 || *port > 65535) {
      throw bad_uri(uri, "port '" + port_text + "' is not a number in 1..65535");
    }
    address.port = static_cast<int>(*port);
  }
  std::string db = split.path;
  while (!db.empty() && db.front() == '/') {
    db.erase(0, 1);
  }
  while (!db.empty() && db.back() == '/') {
    db.pop_back();
  }
  if (!db.empty()) {
    const auto index = text::parse_integer(db);
    if (!index || *index < 0 || *index > INT32_MAX) {
      throw bad_uri(uri, "the path '/" + db + "' is not a database number");
    }
    address.database = static_cast<int>(*index);
  }
  return location;
}

// coop.endpoints.normalize_endpoint_registry: what a head+ prefix may wrap.
Location parse_endpoint_registry(std::string_view uri,
                                 std::string_view original,
                                 const ParseContext &context) {
  if (uri.empty()) {
    throw bad_uri(original, "the head registry after 'head+' is empty");
  }
  if (text::starts_with(uri, "file:") || uri.find("://") == std::string_view::npos) {
    return parse_file(uri, context);
  }
  if (text::starts_with(uri, "sqlite:")) {
    return parse_sqlite(uri, context);
  }
  if (text::starts_with(uri, "redis://") || text::starts_with(uri, "rediss://")) {
    return parse_redis(uri);
  }
  throw bad_uri(original, "endpoint registry must use file://, sqlite://, or redis://");
}

} // namespace

std::string RedisAddress::redacted() const {
  std::string out = tls ? "rediss://" : "redis://";
  if (!password.empty()) {
    out += username + ":***@";
  } else if (!username.empty()) {
    out += username + "@";
  }
  out += host.find(':') != std::string::npos ? "[" + host + "]" : host;
  out += ":" + std::to_string(port);
  if (database != 0) {
    out += "/" + std::to_string(database);
  }
  return out;
}

std::string RedisAddress::uri() const {
  std::string out = tls ? "rediss://" : "redis://";
  if (!password.empty()) {
    out += username + ":" + password + "@";
  } else if (!username.empty()) {
    out += username + "@";
  }
  out += host.find(':') != std::string::npos ? "[" + host + "]" : host;
  out += ":" + std::to_string(port);
  if (database != 0) {
    out += "/" + std::to_string(database);
  }
  return out;
}

std::string Location::display() const {
  switch (kind) {
  case BackendKind::file:
    return file_uri(path);
  case BackendKind::sqlite:
    return "sqlite://" + path.string();
  case BackendKind::redis:
    return redis.redacted();
  case BackendKind::head:
    return "head+" + head_backend->display();
  }
  return {};
}

ParseContext current_parse_context() {
  ParseContext context;
  std::error_code ec;
  context.current_dir = std::filesystem::current_path(ec);
  context.home = env::get("HOME").value_or("");
  return context;
}

Location parse_location(std::string_view uri) {
  return parse_location(uri, current_parse_context());
}

Location parse_location(std::string_view raw, const ParseContext &context) {
  const std::string_view uri = text::trim(raw);
  if (uri.empty()) {
    throw usage_error("the registry URI is empty");
  }
  if (text::starts_with(uri, "head+") || text::starts_with(uri, "head://")) {
    std::string backend = text::starts_with(uri, "head+") ? std::string(uri.substr(5))
                                                          : "file://" + std::string(uri.substr(7));
    Location location;
    location.kind = BackendKind::head;
    location.head_backend = std::make_shared<const Location>(
        parse_endpoint_registry(text::trim(backend), uri, context));
    return location;
  }
  if (text::starts_with(uri, "redis://") || text::starts_with(uri, "rediss://")) {
    return parse_redis(uri);
  }
  if (text::starts_with(uri, "sqlite:")) {
    return parse_sqlite(uri, context);
  }
  if (text::starts_with(uri, "file:")) {
    return parse_file(uri, context);
  }
  if (const auto scheme_end = uri.find("://"); scheme_end != std::string_view::npos) {
    throw bad_uri(uri,
                  "unsupported scheme '" + std::string(uri.substr(0, scheme_end)) +
                      "'; use file://, sqlite://, redis:// or head+file|sqlite|redis://");
  }
  return parse_file(uri, context);
}

std::string redact_uri(std::string_view text) {
  std::string out(text);
  size_t from = 0;
  while (true) {
    const auto plain = out.find("redis://", from);
    const auto tls = out.find("rediss://", from);
    const size_t start = std::min(plain, tls);
    if (start == std::string::npos) {
      return out;
    }
    const size_t netloc = start + (start == tls ? 9 : 8);
    size_t end = netloc;
    while (end < out.size() && out[end] != '/' && out[end] != '?' && out[end] != '#' &&
           !std::isspace(static_cast<unsigned char>(out[end])) && out[end] != '"' &&
           out[end] != '\'') {
      ++end;
    }
    const auto at = out.rfind('@', end == 0 ? 0 : end - 1);
    if (at != std::string::npos && at >= netloc && at < end) {
      const auto colon = out.find(':', netloc);
      if (colon != std::string::npos && colon < at) {
        out.replace(colon + 1, at - colon - 1, "***");
        end = colon + 1 + 3 + (end - at);
      }
    }
    from = end;
  }
}

std::string file_uri(const std::filesystem::path &absolute_path) {
  return "file://" + text::percent_encode(absolute_path.string(), "/");
}

std::string beaker_rewrite(const std::string &uri,
                           const std::optional<std::string> &node_hostname,
                           const std::optional<std::string> &host_gateway) {
  if (!node_hostname || !host_gateway || node_hostname->empty() || host_gateway->empty()) {
    return uri;
  }
  const auto scheme_end = uri.find("://");
  if (scheme_end == std::string::npos) {
    return uri;
  }
  const size_t netloc = scheme_end + 3;
  size_t end = uri.find_first_of("/?#", netloc);
  if (end == std::string::npos) {
    end = uri.size();
  }
  size_t host_start = netloc;
  if (const auto at = uri.rfind('@', end - 1); at != std::string::npos && at >= netloc) {
    host_start = at + 1;
  }
  size_t host_end = end;
  std::string host;
  if (host_start < end && uri[host_start] == '[') {
    host_end = uri.find(']', host_start);
    if (host_end == std::string::npos || host_end > end) {
      return uri;
    }
    host = uri.substr(host_start + 1, host_end - host_start - 1);
    ++host_end;
  } else {
    const auto colon = uri.find(':', host_start);
    if (colon != std::string::npos && colon < end) {
      host_end = colon;
    }
    host = uri.substr(host_start, host_end - host_start);
  }
  if (host != *node_hostname) {
    return uri;
  }
  const std::string replacement =
      host_gateway->find(':') != std::string::npos && host_gateway->front() != '['
          ? "[" + *host_gateway + "]"
          : *host_gateway;
  return uri.substr(0, host_start) + replacement + uri.substr(host_end);
}

} // namespace pb::registry
