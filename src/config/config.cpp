// SPDX-License-Identifier: MIT
// The layers of the user's defaults and their precedence (docs/config.md).
#include <primebeaker/config/config.hpp>
#include <primebeaker/core/env.hpp>
#include <primebeaker/core/error.hpp>
#include <primebeaker/core/fs.hpp>
#include <primebeaker/core/spelling.hpp>
#include <primebeaker/core/text.hpp>
#include <primebeaker/primerl/release.hpp>
#include <primebeaker/toml/value.hpp>

#include <fmt/format.h>

#include <pwd.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <system_error>

namespace pb::config {

namespace stdfs = std::filesystem;

const std::vector<KeyInfo> &keys() {
  static const std::vector<KeyInfo> table = {
      {"workspace",
       false,
       "PRIMEBEAKER_WORKSPACE",
       "workspace",
       "ai2/oe-agents",
       "Beaker workspace (ACCOUNT/NAME) of launches, `list` and `images default`"},
      {"clusters",
       true,
       "PRIMEBEAKER_CLUSTERS",
       "cluster",
       "ai2/holmes",
       "Beaker clusters (ACCOUNT/NAME, globs such as ai2/* for `clusters` and auto); \"auto\": "
       "launches choose among them (docs/clusters.md)"},
      {"priority",
       false,
       "PRIMEBEAKER_PRIORITY",
       "priority",
       "high",
       "Beaker priority: normal, high or urgent"},
      {"budget", false, "PRIMEBEAKER_BUDGET", "budget", "", "Beaker budget account"},
      {"prime_rl",
       false,
       "PRIMEBEAKER_PRIME_RL",
       "prime-rl",
       "",
       "Prime-RL release whose cataloged image a launch without --image runs (v0.7.1.dev83, "
       "v0.8.0, v0.9), as --prime-rl; default: the catalog's first that reads the TOML"},
      {"registry",
       false,
       "PRIMEBEAKER_REGISTRY",
       "registry",
       "",
       "LiteRegistry of RL launches (redis://HOST:PORT or file://DIR), as --registry; default "
       "for a v0.8.0 multi-node run: a file registry in its rendezvous dir on the mount"},
      {"mount_path",
       false,
       "PRIMEBEAKER_MOUNT_PATH",
       "mount-path",
       "/weka",
       "Where the Weka dataset is mounted, in the container and here"},
      {"dataset",
       false,
       "PRIMEBEAKER_DATASET",
       "dataset",
       "oe-adapt-default",
       "Weka dataset (bucket) mounted at mount_path"},
      {"working_dir",
       false,
       "PRIMEBEAKER_WORKING_DIR",
       "working-dir",
       "/weka",
       "Directory the container works in"},
      {"scratch_dir",
       false,
       "PRIMEBEAKER_SCRATCH_DIR",
       "scratch-dir",
       "/weka",
       "Root for spec files, rendezvous dirs, caches and the staged binary"},
      {"home_dir", false, "PRIMEBEAKER_HOME_DIR", "home-dir", "/weka", "HOME in the container"},
      {"user",
       false,
       "PRIMEBEAKER_USER",
       "",
       "",
       "Your name in derived paths (<mount_path>/<user>); default $USER, else $LOGNAME, else "
       "the passwd entry of your uid"},
      {"shared_dir",
       false,
       "PRIMEBEAKER_SHARED_DIR",
       "",
       "",
       "Your directory on the mount: evaluation services' shared_dir and the watcher's roots "
       "(default <mount_path>/<user>)"},
      {"wandb.entity",
       false,
       "PRIMEBEAKER_WANDB_ENTITY",
       "wandb-entity",
       "",
       "W&B entity when the TOML has none"},
      {"wandb.project",
       false,
       "PRIMEBEAKER_WANDB_PROJECT",
       "wandb-project",
       "",
       "W&B project when the TOML has none"},
      {"secrets.wandb",
       false,
       "PRIMEBEAKER_WANDB_SECRET",
       "wandb-secret",
       "WANDB_API_KEY",
       "Beaker secret exposed as WANDB_API_KEY"},
      {"secrets.hf",
       false,
       "PRIMEBEAKER_HF_SECRET",
       "hf-secret",
       "HF_TOKEN",
       "Beaker secret exposed as HF_TOKEN"},
      {"secrets.beaker_token",
       false,
       "PRIMEBEAKER_CONTROLLER_TOKEN_SECRET",
       "controller-token-secret",
       "BEAKER_TOKEN",
       "Workspace secret holding the Beaker token the recovery controller uses"},
      {"controller.clusters",
       true,
       "PRIMEBEAKER_CONTROLLER_CLUSTERS",
       "controller-cluster",
       "",
       "Clusters of the recovery controller (default: the run's)"},
      {"controller.priority",
       false,
       "PRIMEBEAKER_CONTROLLER_PRIORITY",
       "controller-priority",
       "normal",
       "Priority of the recovery controller"},
      {"notify.webhook",
       false,
       "PRIMEBEAKER_NOTIFY",
       "notify",
       "",
       "Webhook told of a run's transitions (docs/notify.md): secret:NAME (a workspace secret "
       "holding the URL; safest) or an http(s) URL; never printed, shown as scheme and host"},
      {"notify.events",
       true,
       "PRIMEBEAKER_NOTIFY_EVENTS",
       "notify-event",
       "",
       "The transitions the webhook is told of (default: all of preempted, resubmitted, failed, "
       "succeeded, stopped, budget_spent)"},
      {"price.*",
       false,
       "",
       "",
       "",
       "$ per GPU-hour of a GPU type (price.H100) or a cluster (price.ai2/jupiter), for the "
       "cost of `status`, `list` and `cost`; none built in: Beaker publishes no prices"},
  };
  return table;
}

bool is_pattern(const KeyInfo &key) {
  return key.key.ends_with(".*");
}

const KeyInfo *find_key(std::string_view key) {
  for (const auto &info : keys()) {
    if (info.key == key) {
      return &info;
    }
  }
  for (const auto &info : keys()) {
    const auto prefix = info.key.substr(0, info.key.size() - 1); // "price."
    if (is_pattern(info) && key.size() > prefix.size() && key.starts_with(prefix) &&
        key.find_first_of(" \t\"") == std::string_view::npos) {
      return &info;
    }
  }
  return nullptr;
}

namespace {

std::vector<std::string> key_names() {
  std::vector<std::string> names;
  for (const auto &info : keys()) {
    names.emplace_back(info.key);
  }
  return names;
}

std::string unknown_key_message(std::string_view key) {
  std::string message = fmt::format("unknown config key '{}'", key);
  if (const auto close = text::closest_match(key, key_names()); !close.empty()) {
    message += fmt::format(" (did you mean '{}'?)", close);
  } else {
    message += "; `primebeaker config list` shows every key";
  }
  return message;
}

bool is_workspace(std::string_view text) {
  const auto slash = text.find('/');
  return slash != std::string_view::npos && slash > 0 && slash + 1 < text.size() &&
         text.find('/', slash + 1) == std::string_view::npos &&
         text.find_first_of(" \t") == std::string_view::npos;
}

std::string home_of(const Environment &environment) {
  const auto home = environment.find("HOME");
  return home == environment.end() ? std::string() : home->second;
}

// beaker's `default_workspace:` (a top-level scalar of its YAML config).
std::string beaker_default_workspace(const std::string &text) {
  for (const auto &line : text::split(text, '\n')) {
    const std::string_view view(line);
    if (!view.starts_with("default_workspace:")) {
      continue;
    }
    std::string value(text::trim(view.substr(std::string_view("default_workspace:").size())));
    if (const auto hash = value.find(" #"); hash != std::string::npos) {
      value = std::string(text::trim(std::string_view(value).substr(0, hash)));
    }
    if (value.size() >= 2 && (value.front() == '"' || value.front() == '\'') &&
        value.back() == value.front()) {
      value = value.substr(1, value.size() - 2);
    }
    return value;
  }
  return {};
}

// The settings a config file holds, checked: every key known, every value of its type.
std::vector<Setting>
read_file_layer(const std::string &text, const stdfs::path &path, Level level) {
  const auto document = toml::Document::parse(text, path.string());
  std::vector<Setting> out;
  // Walk tables one level deep: keys are "name" or "table.name".
  const auto visit = [&](const std::string &prefix, const toml::Value &table, auto &self) -> void {
    for (const auto &[name, value] : *table.table()) {
      const std::string key = prefix.empty() ? name : prefix + "." + name;
      const KeyInfo *info = find_key(key);
      if (info == nullptr && value.is(toml::Type::table) && prefix.empty()) {
        bool any = false;
        for (const auto &known : keys()) {
          any = any || known.key.starts_with(key + ".");
        }
        if (any) {
          self(key, value, self);
          continue;
        }
      }
      const std::string where = document.location(value);
      if (info == nullptr) {
        throw input_error(fmt::format("{}: {}", where, unknown_key_message(key)));
      }
      Setting setting;
      setting.key = info;
      setting.level = level;
      setting.origin = fmt::format("file:{}:{}", path.string(), value.position().line);
      if (is_pattern(*info)) {
        setting.name = key;
      }
      if (is_pattern(*info) && value.integer()) {
        setting.values.push_back(std::to_string(*value.integer())); // price.H100 = 3
      } else if (is_pattern(*info) && value.floating()) {
        setting.values.push_back(value.raw()); // price.H100 = 2.5
      } else if (info->list) {
        const auto *items = value.array();
        if (items == nullptr && key == "clusters" && value.string() != nullptr &&
            *value.string() == "auto") {
          setting.values.push_back("auto"); // clusters = "auto" (docs/clusters.md)
        } else if (items == nullptr) {
          throw input_error(fmt::format(
              "{}: {} must be an array of strings, like [\"ai2/a\", \"ai2/b\"]", where, key));
        }
        static const std::vector<toml::Value> none;
        for (const auto &item : items != nullptr ? *items : none) {
          if (item.string() == nullptr) {
            throw input_error(
                fmt::format("{}: {} must be an array of strings", document.location(item), key));
          }
          setting.values.push_back(*item.string());
        }
      } else {
        if (value.string() == nullptr) {
          throw input_error(fmt::format("{}: {} must be a string (quote it)", where, key));
        }
        setting.values.push_back(*value.string());
      }
      try {
        check_value(*info, setting.values, where);
      } catch (const Error &error) {
        throw input_error(error.what());
      }
      out.push_back(std::move(setting));
    }
  };
  visit("", document.root(), visit);
  return out;
}

std::vector<std::string> env_items(const KeyInfo &info, const std::string &value) {
  if (!info.list) {
    return {value};
  }
  std::vector<std::string> items;
  for (const auto &piece : text::split(value, ',')) {
    if (!text::trim(piece).empty()) {
      items.emplace_back(text::trim(piece));
    }
  }
  return items;
}

} // namespace

const KeyInfo &key_info(std::string_view key) {
  if (const auto *info = find_key(key)) {
    return *info;
  }
  throw usage_error(unknown_key_message(key));
}

std::string_view level_name(Level level) {
  switch (level) {
  case Level::built_in:
    return "built-in";
  case Level::derived:
    return "derived";
  case Level::beaker:
    return "beaker's config";
  case Level::user:
    return "user file";
  case Level::project:
    return "project file";
  case Level::env:
    return "PRIMEBEAKER_* variable";
  case Level::flag:
    return "flag";
  }
  return "?";
}

const std::string &Setting::text() const {
  static const std::string empty;
  return values.empty() ? empty : values.front();
}

// The webhook URL is a credential (docs/notify.md): shown as its scheme and host only.
static std::string redacted_webhook(std::string_view value) {
  if (value.starts_with("secret:")) {
    return std::string(value);
  }
  const auto scheme = value.find("://");
  if (scheme == std::string_view::npos) {
    return "(set)";
  }
  auto host = value.substr(scheme + 3);
  host = host.substr(0, host.find_first_of("/?#"));
  host = host.substr(host.rfind('@') == std::string_view::npos ? 0 : host.rfind('@') + 1);
  return host.empty() ? "(set)" : fmt::format("{}://{}/…", value.substr(0, scheme), host);
}

std::string Setting::display() const {
  if (key != nullptr && key->key == "notify.webhook" && !values.empty()) {
    return redacted_webhook(values.front());
  }
  return text::join(values, ",");
}

void check_value(const KeyInfo &key,
                 const std::vector<std::string> &values,
                 std::string_view where) {
  const std::string name(key.key);
  if (!key.list && values.size() != 1) {
    throw usage_error(fmt::format("{}: {} takes one value", where, name));
  }
  for (const auto &value : values) {
    if (name == "priority" || name == "controller.priority") {
      if (value != "normal" && value != "high" && value != "urgent") {
        std::string message =
            fmt::format("{}: {} must be normal, high or urgent, got '{}'", where, name, value);
        if (const auto close = text::closest_match(value, {"normal", "high", "urgent"});
            !close.empty()) {
          message += fmt::format(" (did you mean '{}'?)", close);
        }
        throw usage_error(message);
      }
    } else if (name == "workspace" && !is_workspace(value)) {
      throw usage_error(
          fmt::format("{}: workspace must look like ACCOUNT/NAME, got '{}'", where, value));
    } else if (name.ends_with("_dir") || name == "mount_path") {
      if (value.empty() || value.front() != '/') {
        throw usage_error(
            fmt::format("{}: {} must be an absolute path, got '{}'", where, name, value));
      }
    } else if (name == "user" && (value.empty() || value.find('/') != std::string::npos)) {
      throw usage_error(fmt::format("{}: user must be a name without '/', got '{}'", where, value));
    } else if (name == "prime_rl" && !primerl::find_prime_rl(value)) {
      throw usage_error(
          fmt::format("{}: prime_rl must be a Prime-RL release primebeaker reads ({}), "
                      "got '{}'",
                      where,
                      primerl::known_prime_rl_versions(),
                      value));
    } else if (name == "registry" && !value.starts_with("redis://") &&
               !value.starts_with("rediss://") && !value.starts_with("file://")) {
      throw usage_error(fmt::format(
          "{}: registry must be redis://HOST:PORT, rediss://HOST:PORT or file://DIR, got '{}'",
          where,
          value));
    } else if (name == "notify.webhook" && !value.empty() && !value.starts_with("secret:") &&
               !value.starts_with("https://") && !value.starts_with("http://")) {
      // Never echoes the value: it may be the credential itself.
      throw usage_error(fmt::format("{}: notify.webhook is secret:NAME or an http(s) URL", where));
    } else if (name == "price.*") {
      // $ per GPU-hour: a plain non-negative number (docs/config.md "Prices").
      char *end = nullptr;
      const double price = std::strtod(value.c_str(), &end);
      if (value.empty() || end != value.c_str() + value.size() || !std::isfinite(price) ||
          price < 0) {
        throw usage_error(fmt::format(
            "{}: a price is $ per GPU-hour, a number like 2.5, got '{}'", where, value));
      }
    } else if ((name == "clusters" || name == "controller.clusters") && !is_workspace(value) &&
               !(name == "clusters" && value == "auto")) {
      throw usage_error(
          fmt::format("{}: {} items must look like ACCOUNT/CLUSTER, got '{}'", where, name, value));
    }
  }
}

Files locate(const Environment &environment, const stdfs::path &cwd) {
  Files files;
  const std::string home = home_of(environment);
  const auto xdg = environment.find("XDG_CONFIG_HOME");
  // XDG: an unset or relative XDG_CONFIG_HOME means ~/.config.
  const stdfs::path config_home =
      xdg != environment.end() && !xdg->second.empty() && xdg->second.front() == '/'
          ? stdfs::path(xdg->second)
          : stdfs::path(home) / ".config";
  files.user = config_home / "primebeaker" / "config.toml";
  std::error_code ec;
  for (stdfs::path dir = cwd; !dir.empty(); dir = dir.parent_path()) {
    const auto candidate = dir / "primebeaker.toml";
    if (stdfs::is_regular_file(candidate, ec)) {
      files.project = candidate;
      break;
    }
    if (dir == dir.root_path()) {
      break;
    }
  }
  const auto beaker = environment.find("BEAKER_CONFIG");
  files.beaker = beaker != environment.end() && !beaker->second.empty()
                     ? stdfs::path(beaker->second)
                     : stdfs::path(home) / ".beaker" / "config.yml";
  return files;
}

stdfs::path project_target(const Files &files, const stdfs::path &cwd) {
  return files.project.empty() ? cwd / "primebeaker.toml" : files.project;
}

Sources read_sources(const Environment &environment, const stdfs::path &cwd) {
  Sources sources;
  sources.environment = environment;
  sources.files = locate(environment, cwd);
  const auto read = [](const stdfs::path &path) -> std::optional<std::string> {
    std::error_code ec;
    if (path.empty() || !stdfs::exists(path, ec)) {
      return std::nullopt;
    }
    return fs::read_file(path);
  };
  sources.user_text = read(sources.files.user);
  sources.project_text = read(sources.files.project);
  try {
    sources.beaker_text = read(sources.files.beaker);
  } catch (const Error &) {
    // beaker's own file, unreadable here: its default workspace is simply not known.
  }
  sources.passwd_user = passwd_user_name();
  return sources;
}

std::string passwd_user_name() {
  long size = ::sysconf(_SC_GETPW_R_SIZE_MAX);
  std::vector<char> buffer(size > 0 ? static_cast<std::size_t>(size) : 4096);
  struct passwd entry {};
  struct passwd *found = nullptr;
  int error = 0;
  while ((error = ::getpwuid_r(::geteuid(), &entry, buffer.data(), buffer.size(), &found)) ==
             ERANGE &&
         buffer.size() < (1U << 20)) {
    buffer.resize(buffer.size() * 2);
  }
  if (error != 0 || found == nullptr || found->pw_name == nullptr) {
    return {};
  }
  return found->pw_name;
}

Settings Settings::resolve(const Sources &sources) {
  Settings settings;
  settings.m_files = sources.files;
  const auto add = [&](Setting setting) {
    settings.m_layers[std::string(setting.key_name())].push_back(std::move(setting));
  };
  for (const auto &info : keys()) {
    if (!info.built_in.empty()) {
      Setting setting;
      setting.key = &info;
      setting.values = env_items(info, std::string(info.built_in));
      setting.origin = "built-in";
      add(std::move(setting));
    }
  }
  if (sources.beaker_text) {
    if (auto workspace = beaker_default_workspace(*sources.beaker_text);
        !workspace.empty() && is_workspace(workspace)) {
      Setting setting;
      setting.key = find_key("workspace");
      setting.values = {std::move(workspace)};
      setting.level = Level::beaker;
      setting.origin = "beaker:" + sources.files.beaker.string();
      add(std::move(setting));
    }
  }
  std::vector<Setting> user_file, project_file;
  if (sources.user_text) {
    user_file = read_file_layer(*sources.user_text, sources.files.user, Level::user);
  }
  if (sources.project_text) {
    project_file = read_file_layer(*sources.project_text, sources.files.project, Level::project);
  }
  for (auto &setting : user_file) {
    add(std::move(setting));
  }
  for (auto &setting : project_file) {
    add(std::move(setting));
  }
  for (const auto &info : keys()) {
    const auto found = sources.environment.find(std::string(info.env));
    if (found == sources.environment.end() || found->second.empty()) {
      continue;
    }
    Setting setting;
    setting.key = &info;
    setting.values = env_items(info, found->second);
    setting.level = Level::env;
    setting.origin = "env:" + std::string(info.env);
    try {
      check_value(info, setting.values, info.env);
    } catch (const Error &error) {
      throw input_error(error.what());
    }
    add(std::move(setting));
  }
  // Derived values: the user name from $USER, $LOGNAME or the passwd entry (a container or a CI
  // job often sets neither variable), the shared dir from the mount and the user.
  if (settings.get("user") == nullptr) {
    const auto usable = [](const std::string &name) {
      return !name.empty() && name.find('/') == std::string::npos;
    };
    std::string name, origin;
    for (const char *variable : {"USER", "LOGNAME"}) {
      const auto found = sources.environment.find(variable);
      if (found != sources.environment.end() && usable(found->second)) {
        name = found->second;
        origin = std::string("env:") + variable;
        break;
      }
    }
    if (name.empty() && usable(sources.passwd_user)) {
      name = sources.passwd_user;
      origin = "passwd";
    }
    if (!name.empty()) {
      Setting setting;
      setting.key = find_key("user");
      setting.values = {std::move(name)};
      setting.level = Level::derived;
      setting.origin = std::move(origin);
      add(std::move(setting));
    }
  }
  if (settings.get("shared_dir") == nullptr && settings.get("user") != nullptr) {
    Setting setting;
    setting.key = find_key("shared_dir");
    const std::string mount = settings.text("mount_path");
    setting.values = {(stdfs::path(mount) / settings.text("user")).lexically_normal().string()};
    setting.level = Level::derived;
    setting.origin = "derived: mount_path/user";
    add(std::move(setting));
  }
  return settings;
}

Settings Settings::load() {
  return resolve(read_sources(env::snapshot(), stdfs::current_path()));
}

const Setting *Settings::get(std::string_view key) const {
  const auto found = m_layers.find(key);
  if (found == m_layers.end() || found->second.empty()) {
    return nullptr;
  }
  // Highest level wins; within one level (never two), the later.
  return &*std::max_element(found->second.begin(),
                            found->second.end(),
                            [](const Setting &a, const Setting &b) { return a.level < b.level; });
}

std::string Settings::text(std::string_view key) const {
  const auto *setting = get(key);
  return setting == nullptr ? std::string() : setting->text();
}

const Setting *Settings::at(std::string_view key, Level level) const {
  const auto found = m_layers.find(key);
  if (found == m_layers.end()) {
    return nullptr;
  }
  for (const auto &setting : found->second) {
    if (setting.level == level) {
      return &setting;
    }
  }
  return nullptr;
}

std::vector<const Setting *> Settings::effective() const {
  std::vector<const Setting *> out;
  for (const auto &info : keys()) {
    if (is_pattern(info)) {
      const auto named = matching(info);
      out.insert(out.end(), named.begin(), named.end());
    } else if (const auto *setting = get(info.key)) {
      out.push_back(setting);
    }
  }
  return out;
}

std::vector<const Setting *> Settings::matching(const KeyInfo &pattern) const {
  std::vector<const Setting *> out;
  const auto prefix = pattern.key.substr(0, pattern.key.size() - 1);
  for (auto it = m_layers.lower_bound(prefix);
       it != m_layers.end() && it->first.starts_with(prefix);
       ++it) {
    if (const auto *setting = get(it->first); setting != nullptr && setting->key == &pattern) {
      out.push_back(setting);
    }
  }
  return out;
}

} // namespace pb::config
