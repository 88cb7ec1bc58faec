// SPDX-License-Identifier: MIT
// `primebeaker registry ...`: list, register, publish-endpoint, wait-redis, wait-services,
// probe-gateway (docs/registry.md).
#include <primebeaker/core/clock.hpp>
#include <primebeaker/core/command_tree.hpp>
#include <primebeaker/core/error.hpp>
#include <primebeaker/core/json.hpp>
#include <primebeaker/core/log.hpp>
#include <primebeaker/core/text.hpp>
#include <primebeaker/registry/gateway_probe.hpp>
#include <primebeaker/registry/registry.hpp>
#include <primebeaker/registry/wait.hpp>

#include <unistd.h>

#include <cmath>
#include <iostream>

namespace pb::registry {
namespace {

std::chrono::milliseconds seconds_option(double seconds, const std::string &flag_name) {
  if (!std::isfinite(seconds) || seconds < 0) {
    throw usage_error("--" + flag_name + " must be a non-negative number of seconds");
  }
  return std::chrono::milliseconds(static_cast<long long>(std::llround(seconds * 1000)));
}

// A single status line rewritten in place on a terminal; nothing otherwise (logs stay quiet).
class ProgressLine {
public:
  ProgressLine() : m_enabled(log::stderr_is_terminal()) {}
  ~ProgressLine() {
    if (m_shown) {
      std::cerr << "\r\033[K" << std::flush;
    }
  }
  ProgressLine(const ProgressLine &) = delete;
  ProgressLine &operator=(const ProgressLine &) = delete;

  std::function<void(const std::string &)> callback() {
    if (!m_enabled) {
      return {};
    }
    return [this](const std::string &line) {
      const auto seconds = std::chrono::duration_cast<std::chrono::seconds>(
          std::chrono::steady_clock::now() - m_start);
      std::cerr << "\r\033[K" << line << " (" << seconds.count() << "s)" << std::flush;
      m_shown = true;
    };
  }

private:
  bool m_enabled;
  bool m_shown = false;
  std::chrono::steady_clock::time_point m_start = std::chrono::steady_clock::now();
};

OrderedJson server_json(const ServerRecord &server, double now) {
  OrderedJson row = OrderedJson::object();
  row["server_id"] = server.server_id;
  row["uri"] = server.uri;
  row["host"] = server.host;
  if (server.port == std::floor(server.port)) {
    row["port"] = static_cast<long long>(server.port);
  } else {
    row["port"] = server.port;
  }
  row["last_heartbeat"] = server.last_heartbeat;
  row["age_seconds"] = std::round((now - server.last_heartbeat) * 1000) / 1000;
  return row;
}

// ---- list ----
struct ListOptions {
  std::string registry;
  bool json = false;
  double window = k_default_heartbeat_window;
};

void run_list(const ListOptions &options) {
  auto registry = open_registry(options.registry);
  SystemClock clock;
  const double now = epoch_seconds(clock.now());
  const auto groups = group_by_service(registry->live_servers(now, options.window));
  if (options.json) {
    OrderedJson out = OrderedJson::object();
    for (const auto &[service, servers] : groups) {
      OrderedJson rows = OrderedJson::array();
      for (const auto &server : servers) {
        rows.push_back(server_json(server, now));
      }
      out[service] = std::move(rows);
    }
    print_json(std::cout, out);
    return;
  }
  if (groups.empty()) {
    std::cout << "no live endpoints in " << registry->display() << "\n";
    return;
  }
  for (const auto &[service, servers] : groups) {
    std::cout << service << " (" << servers.size() << ")\n";
    for (const auto &server : servers) {
      char age[32];
      std::snprintf(age, sizeof age, "%.1fs", now - server.last_heartbeat);
      std::cout << "  " << (server.uri.empty() ? "(no uri)" : server.uri) << "  "
                << server.server_id << "  heartbeat " << age << " ago\n";
    }
  }
}

// ---- register ----
struct RegisterOptions {
  std::string registry;
  std::string service;
  std::string uri;
  std::string host;
  std::string server_id;
  std::string metadata_json;
  std::optional<double> heartbeat;
};

int port_of(const std::string &uri) {
  const auto scheme_end = uri.find("://");
  if (scheme_end == std::string::npos || scheme_end + 3 >= uri.size()) {
    throw usage_error("--uri must look like http://host:port, got '" + uri + "'");
  }
  const std::string scheme = uri.substr(0, scheme_end);
  std::string netloc = uri.substr(scheme_end + 3);
  netloc = netloc.substr(0, netloc.find_first_of("/?#"));
  netloc = netloc.substr(netloc.rfind('@') == std::string::npos ? 0 : netloc.rfind('@') + 1);
  const auto bracket = netloc.rfind(']');
  const auto colon = netloc.rfind(':');
  if (colon != std::string::npos && (bracket == std::string::npos || colon > bracket)) {
    const auto port = text::parse_integer(netloc.substr(colon + 1));
    if (!port || *port < 1 || *port > 65535) {
      throw usage_error("--uri has an invalid port: '" + uri + "'");
    }
    return static_cast<int>(*port);
  }
  if (netloc.empty()) {
    throw usage_error("--uri has no host: '" + uri + "'");
  }
  return scheme == "https" ? 443 : 80;
}

std::string local_hostname() {
  char name[256] = {};
  if (::gethostname(name, sizeof name - 1) != 0) {
    return "localhost";
  }
  std::string host(name);
  return host.substr(0, host.find('.')); // socket.gethostname() short name
}

void run_register(const RegisterOptions &options) {
  auto registry = open_registry(options.registry);
  if (options.service.empty()) {
    throw usage_error("--service must not be empty");
  }
  std::string uri = options.uri;
  while (!uri.empty() && uri.back() == '/') {
    uri.pop_back();
  }
  const int port = port_of(uri);
  const std::string host = options.host.empty() ? local_hostname() : options.host;
  OrderedJson metadata = OrderedJson::object();
  metadata["model_path"] = options.service;
  if (!options.metadata_json.empty()) {
    const auto extra = OrderedJson::parse(options.metadata_json, nullptr, false);
    if (extra.is_discarded() || !extra.is_object()) {
      throw usage_error("--metadata must be a JSON object, got " + options.metadata_json);
    }
    for (auto it = extra.begin(); it != extra.end(); ++it) {
      if (it.key() != "model_path") {
        metadata[it.key()] = it.value();
      }
    }
  }
  const std::string server_id = options.server_id.empty() ? new_server_id(host) : options.server_id;
  if (server_id.find('/') != std::string::npos) {
    throw usage_error("--server-id must not contain '/'");
  }
  SystemClock clock;
  const double heartbeat = options.heartbeat.value_or(epoch_seconds(clock.now()));
  const auto record = make_server_record(server_id, host, port, uri, heartbeat, metadata);
  registry->put_server(record);
  OrderedJson receipt = OrderedJson::object();
  receipt["registry"] = registry->display();
  receipt["key"] = record.key();
  receipt["server_id"] = server_id;
  receipt["service"] = options.service;
  receipt["uri"] = uri;
  receipt["last_heartbeat"] = heartbeat;
  print_json(std::cout, receipt);
}

// ---- publish-endpoint ----
struct PublishOptions {
  std::string registry;
  std::string name;
  std::string uri;
  std::string publisher_id;
  double ttl = 30;
};

void run_publish(const PublishOptions &options) {
  auto registry = open_registry(options.registry);
  if (!valid_endpoint_name(options.name)) {
    throw usage_error("--name must match [A-Za-z0-9][A-Za-z0-9_.-]{0,127}, got '" + options.name +
                      "'");
  }
  if (options.uri.empty() || options.uri.find_first_of(" \t\r\n") != std::string::npos ||
      options.uri.find("://") == std::string::npos) {
    throw usage_error("--uri must be a URI with a scheme and host, got '" +
                      redact_uri(options.uri) + "'");
  }
  if (!(options.ttl > 0) || !std::isfinite(options.ttl)) {
    throw usage_error("--ttl must be a positive number of seconds");
  }
  SystemClock clock;
  const double now = epoch_seconds(clock.now());
  EndpointRecord record;
  record.name = options.name;
  record.uri = options.uri;
  while (!record.uri.empty() && record.uri.back() == '/') {
    record.uri.pop_back();
  }
  const std::string host = local_hostname();
  record.publisher_id = options.publisher_id.empty()
                            ? "manual-" + new_server_id(host).substr(host.size() + 1)
                            : options.publisher_id;
  record.published_at = now;
  registry->put_endpoint(record, options.ttl, now);
  OrderedJson receipt = OrderedJson::object();
  receipt["registry"] = registry->display();
  receipt["key"] = record.key();
  receipt["name"] = record.name;
  receipt["uri"] = redact_uri(record.uri);
  receipt["publisher_id"] = record.publisher_id;
  receipt["expires_at"] = now + options.ttl;
  print_json(std::cout, receipt);
}

// ---- wait-redis / wait-services ----
struct WaitCommandOptions {
  std::string registry;
  double timeout = 0;
  std::string stop_file;
  double poll_interval = 0.1;
  std::vector<std::string> require;
  std::string requirements_json;
  double window = k_default_heartbeat_window;
};

WaitOptions wait_options(const WaitCommandOptions &options, ProgressLine &progress) {
  WaitOptions wait;
  wait.timeout = seconds_option(options.timeout, "timeout");
  wait.poll_interval = seconds_option(options.poll_interval, "poll-interval");
  if (wait.poll_interval.count() < 10) {
    throw usage_error("--poll-interval must be at least 0.01 seconds");
  }
  if (!options.stop_file.empty()) {
    wait.stop_file = options.stop_file;
  }
  if (!(options.window > 0)) {
    throw usage_error("--heartbeat-window must be a positive number of seconds");
  }
  wait.heartbeat_window = options.window;
  wait.progress = progress.callback();
  return wait;
}

void run_wait_redis(const WaitCommandOptions &options) {
  auto registry = open_registry(options.registry);
  ProgressLine progress;
  const auto result = wait_for_redis(*registry, wait_options(options, progress));
  throw_unless_ready(result.status, result.message);
  std::cout << registry->display() << "\n";
}

void run_wait_services(const WaitCommandOptions &options) {
  Requirements requirements = parse_requirements(options.require);
  if (!options.requirements_json.empty()) {
    for (const auto &[name, count] : parse_requirements_json(options.requirements_json)) {
      requirements[name] = count;
    }
  }
  auto registry = open_registry(options.registry);
  ProgressLine progress;
  const auto result = wait_for_services(*registry, requirements, wait_options(options, progress));
  throw_unless_ready(result.status, result.message);
  OrderedJson observed = OrderedJson::object();
  for (const auto &[name, count] : result.observed) { // std::map: sorted keys
    observed[name] = count;
  }
  print_json(std::cout, observed);
}

// ---- probe-gateway ----
struct ProbeOptions {
  std::string url;
  std::vector<std::string> model_paths;
  std::string model_paths_json;
  std::vector<std::string> required_paths;
  double timeout = 70;
};

void run_probe(const ProbeOptions &options) {
  GatewayProbe probe;
  probe.url = options.url;
  probe.model_paths = options.model_paths;
  if (!options.model_paths_json.empty()) {
    const auto parsed = nlohmann::json::parse(options.model_paths_json, nullptr, false);
    if (parsed.is_discarded() || !parsed.is_array()) {
      throw usage_error("--model-paths-json must be a JSON list of strings, got " +
                        options.model_paths_json);
    }
    for (const auto &item : parsed) {
      if (!item.is_string()) {
        throw usage_error("--model-paths-json must be a JSON list of strings, got " +
                          options.model_paths_json);
      }
      probe.model_paths.push_back(item.get<std::string>());
    }
  }
  probe.required_paths = options.required_paths;
  probe.timeout = seconds_option(options.timeout, "timeout");
  if (probe.timeout.count() == 0) {
    throw usage_error("--timeout must be positive");
  }
  probe.health_timeout = std::min(probe.health_timeout, probe.timeout);
  OrderedJson checks = OrderedJson::array();
  for (const auto &check : probe_gateway(probe)) {
    OrderedJson row = OrderedJson::object();
    row["method"] = check.method;
    row["path"] = check.path;
    if (!check.model_path.empty()) {
      row["model_path"] = check.model_path;
    }
    row["status"] = check.status;
    checks.push_back(std::move(row));
  }
  OrderedJson out = OrderedJson::object();
  out["url"] = redact_uri(options.url);
  out["ready"] = true;
  out["checks"] = std::move(checks);
  print_json(std::cout, out);
}

} // namespace

void register_commands(cli::CommandTree &tree) {
  tree.command({"registry"}, "Read and write LiteRegistry registries (file, sqlite, redis, head+)");
  const std::string uri_help =
      "Registry URI: /dir, file:///dir, sqlite:///db.sqlite3, redis://host:port[/db], "
      "head+file|sqlite|redis://...";

  {
    auto &options = tree.make_options<ListOptions>();
    auto &cmd = tree.command({"registry", "list"}, "List live endpoints grouped by service");
    cmd.add_option(cli::flag("registry"), options.registry, uri_help).required();
    cmd.add_flag(cli::flag("json"), options.json, "Print JSON {service: [endpoints]}");
    cmd.add_option(
           cli::flag("heartbeat-window"), options.window, "Liveness window in seconds (inclusive)")
        .capture_default_str();
    cmd.callback([&options] { run_list(options); });
  }
  {
    auto &options = tree.make_options<RegisterOptions>();
    auto &cmd = tree.command({"registry", "register"},
                             "Publish one endpoint as a LiteRegistry server record");
    cmd.add_option(cli::flag("registry"), options.registry, uri_help).required();
    cmd.add_option(cli::flag("service"), options.service, "Service name (metadata.model_path)")
        .required();
    cmd.add_option(cli::flag("uri"), options.uri, "Endpoint URL, e.g. http://node01:20306")
        .required();
    cmd.add_option(
        cli::flag("host"), options.host, "Host name stored in the record (default: ours)");
    cmd.add_option(
        cli::flag("server-id"), options.server_id, "Server id (default: <host>-<uuid4 hex>)");
    cmd.add_option(cli::flag("metadata"), options.metadata_json, "Extra metadata as a JSON object");
    cmd.add_option(
        cli::flag("heartbeat"), options.heartbeat, "last_heartbeat as Unix seconds (default: now)");
    cmd.callback([&options] { run_register(options); });
  }
  {
    auto &options = tree.make_options<PublishOptions>();
    auto &cmd = tree.command({"registry", "publish-endpoint"},
                             "Publish one TTL'd endpoint record (e.g. name redis for a head)");
    cmd.add_option(cli::flag("registry"), options.registry, "Endpoint registry URI").required();
    cmd.add_option(cli::flag("name"), options.name, "Endpoint name (redis, gateway, ...)")
        .required();
    cmd.add_option(cli::flag("uri"), options.uri, "Endpoint URI").required();
    cmd.add_option(cli::flag("publisher-id"),
                   options.publisher_id,
                   "Publisher id (default: manual-<uuid hex>)");
    cmd.add_option(cli::flag("ttl"), options.ttl, "Seconds until the record expires")
        .capture_default_str();
    cmd.callback([&options] { run_publish(options); });
  }
  {
    auto &options = tree.make_options<WaitCommandOptions>();
    options.timeout = 600;
    auto &cmd = tree.command({"registry", "wait-redis"},
                             "Wait until the registry's Redis answers PING (head+ resolved)");
    cmd.add_option(cli::flag("registry"), options.registry, uri_help).required();
    cmd.add_option(cli::flag("timeout"), options.timeout, "Seconds to wait").capture_default_str();
    cmd.add_option(
        cli::flag("stop-file"), options.stop_file, "Give up (exit 92) as soon as this file exists");
    cmd.add_option(cli::flag("poll-interval"), options.poll_interval, "Seconds between attempts")
        .capture_default_str();
    cmd.callback([&options] { run_wait_redis(options); });
  }
  {
    auto &options = tree.make_options<WaitCommandOptions>();
    options.timeout = 1800;
    auto &cmd = tree.command({"registry", "wait-services"},
                             "Wait until every named service has N live endpoints");
    cmd.add_option(cli::flag("registry"), options.registry, uri_help).required();
    cli::add_list_option(
        cmd, "require", options.require, "NAME=COUNT (repeat for several services)");
    cmd.add_option(cli::flag("requirements-json"),
                   options.requirements_json,
                   "Requirements as a JSON object {\"name\": count} (reference spelling)");
    cmd.add_option(cli::flag("timeout"), options.timeout, "Seconds to wait").capture_default_str();
    cmd.add_option(
        cli::flag("stop-file"), options.stop_file, "Give up (exit 92) as soon as this file exists");
    cmd.add_option(cli::flag("poll-interval"), options.poll_interval, "Seconds between reads")
        .capture_default_str();
    cmd.add_option(
           cli::flag("heartbeat-window"), options.window, "Liveness window in seconds (inclusive)")
        .capture_default_str();
    cmd.callback([&options] { run_wait_services(options); });
  }
  {
    auto &options = tree.make_options<ProbeOptions>();
    auto &cmd = tree.command({"registry", "probe-gateway"},
                             "Check that a tool gateway is ready (health, routes, search)");
    cmd.add_option(cli::flag("url"), options.url, "Gateway base URL, e.g. http://127.0.0.1:1212")
        .required();
    cli::add_list_option(cmd,
                         "model-path",
                         options.model_paths,
                         "Search service that must answer POST /search (repeatable)");
    cmd.add_option(cli::flag("model-paths-json"),
                   options.model_paths_json,
                   "Model paths as a JSON list (reference spelling)");
    cli::add_list_option(cmd,
                         "required-path",
                         options.required_paths,
                         "Route that must exist (OPTIONS 200/204/405), repeatable");
    cmd.add_option(cli::flag("timeout"), options.timeout, "Seconds per request")
        .capture_default_str();
    cmd.callback([&options] { run_probe(options); });
  }
}

} // namespace pb::registry
