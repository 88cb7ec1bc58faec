// SPDX-License-Identifier: MIT
// `primebeaker config get|set|unset|list` (docs/config.md): the user and project files, edited
// with the lossless TOML engine so their comments and layout stay.
#include <primebeaker/config/config.hpp>
#include <primebeaker/core/command_tree.hpp>
#include <primebeaker/core/error.hpp>
#include <primebeaker/core/fs.hpp>
#include <primebeaker/core/json.hpp>
#include <primebeaker/core/text.hpp>
#include <primebeaker/toml/edit.hpp>
#include <primebeaker/toml/value.hpp>

#include <fmt/format.h>
#include <nlohmann/json.hpp>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <cctype>
#include <iostream>

namespace pb::config {

namespace {

namespace stdfs = std::filesystem;

struct Options {
  std::string key;
  std::vector<std::string> values;
  bool user = false;
  bool project = false;
  bool show_origin = false;
  bool json = false;
};

// The file a `set`/`unset` edits: the user's unless --project.
stdfs::path target_of(const Options &o, const Files &files) {
  if (o.user && o.project) {
    throw usage_error("--user and --project: pick one file");
  }
  return o.project ? project_target(files, stdfs::current_path()) : files.user;
}

std::string value_literal(const KeyInfo &key, const std::vector<std::string> &values) {
  if (!key.list) {
    return nlohmann::json(values.front()).dump(); // a basic TOML string
  }
  std::vector<std::string> items;
  for (const auto &value : values) {
    items.push_back(nlohmann::json(value).dump());
  }
  return "[" + text::join(items, ", ") + "]";
}

// Items of a list key's values: repeated arguments, or one comma-separated argument.
std::vector<std::string> items_of(const KeyInfo &key, const std::vector<std::string> &values) {
  if (!key.list) {
    return values;
  }
  std::vector<std::string> items;
  for (const auto &value : values) {
    for (const auto &piece : text::split(value, ',')) {
      if (!text::trim(piece).empty()) {
        items.emplace_back(text::trim(piece));
      }
    }
  }
  return items;
}

// The file's text with `edit` applied, written atomically; the file (and its folder) is created
// when new. The whole configuration is read again first, so a broken file is reported, never
// made worse.
void edit_file(const stdfs::path &path,
               const std::function<std::string(const toml::Document &)> &edit) {
  std::error_code ec;
  const bool exists = stdfs::exists(path, ec);
  const std::string text = exists ? fs::read_file(path) : std::string();
  const auto document = toml::Document::parse(text, path.string());
  const std::string result = edit(document);
  if (exists && result == text) {
    return;
  }
  stdfs::create_directories(path.parent_path(), ec);
  if (ec) {
    throw failure(fmt::format("cannot create {}: {}", path.parent_path().string(), ec.message()));
  }
  fs::write_file_atomic(path, result);
}

// The key's name in files: a pattern key's own name ("price.H100"), else the table's.
std::string_view name_of(const KeyInfo &key, const std::string &given) {
  return is_pattern(key) ? std::string_view(given) : key.key;
}

// The TOML path of a key: a pattern's name is quoted where it is no bare key
// (price."ai2/jupiter").
std::string toml_path(const KeyInfo &key, const std::string &given) {
  if (!is_pattern(key)) {
    return std::string(key.key);
  }
  const auto prefix = key.key.substr(0, key.key.size() - 1);
  const std::string rest = given.substr(prefix.size());
  const bool bare = std::all_of(rest.begin(), rest.end(), [](unsigned char c) {
    return std::isalnum(c) != 0 || c == '_' || c == '-';
  });
  return std::string(prefix) + (bare ? rest : nlohmann::json(rest).dump());
}

void run_get(const Options &o) {
  const KeyInfo &key = key_info(o.key);
  const Settings settings = Settings::load();
  const Setting *setting = nullptr;
  if (o.user || o.project) {
    setting = settings.at(name_of(key, o.key), o.project ? Level::project : Level::user);
  } else {
    setting = settings.get(name_of(key, o.key));
  }
  if (setting == nullptr) {
    throw Error(ExitCode::failure, ""); // as `git config`: unset is exit 1, nothing printed
  }
  if (o.show_origin) {
    std::cout << setting->origin << '\t';
  }
  std::cout << setting->display() << '\n';
}

void run_set(const Options &o) {
  const KeyInfo &key = key_info(o.key);
  if (o.values.empty()) {
    throw usage_error(fmt::format("config set {}: give a VALUE", o.key));
  }
  const auto items = items_of(key, o.values);
  if (!key.list && items.size() != 1) {
    throw usage_error(fmt::format("config set {}: takes one VALUE, got {}", o.key, items.size()));
  }
  check_value(key, items, fmt::format("config set {}", o.key));
  // Every file must read cleanly before one is changed.
  const auto path = target_of(o, Settings::load().files());
  // A price is written as the number it is (checked above).
  const std::string literal = is_pattern(key) ? items.front() : value_literal(key, items);
  const std::string where = toml_path(key, o.key);
  edit_file(path,
            [&](const toml::Document &document) { return toml::set(document, where, literal); });
  spdlog::info("{} = {} in {}",
               where,
               key.key == "notify.webhook" ? std::string("(set; docs/notify.md)") : literal,
               path.string());
}

void run_unset(const Options &o) {
  const KeyInfo &key = key_info(o.key);
  const auto path = target_of(o, Settings::load().files());
  std::error_code ec;
  if (!stdfs::exists(path, ec)) {
    throw failure(
        fmt::format("{} is not set in {} (no such file)", name_of(key, o.key), path.string()));
  }
  edit_file(path, [&](const toml::Document &document) {
    toml::UnsetOptions options;
    options.prune = true;
    return toml::unset(document, toml_path(key, o.key), options);
  });
}

void run_list(const Options &o) {
  const Settings settings = Settings::load();
  std::vector<const Setting *> shown;
  if (o.user || o.project) {
    const Level level = o.project ? Level::project : Level::user;
    for (const auto &info : keys()) {
      std::vector<std::string_view> names = {info.key};
      if (is_pattern(info)) {
        names.clear();
        for (const auto *named : settings.matching(info)) {
          names.push_back(named->key_name());
        }
      }
      for (const auto name : names) {
        if (const auto *setting = settings.at(name, level)) {
          shown.push_back(setting);
        }
      }
    }
  } else {
    shown = settings.effective();
  }
  if (o.json) {
    OrderedJson out = OrderedJson::object();
    for (const auto *setting : shown) {
      OrderedJson value =
          setting->key->list ? OrderedJson(setting->values) : OrderedJson(setting->display());
      out[std::string(setting->key_name())] = {
          {"value", value}, {"origin", setting->origin}, {"level", level_name(setting->level)}};
    }
    print_json(std::cout, out);
    return;
  }
  for (const auto *setting : shown) {
    if (o.show_origin) {
      std::cout << setting->origin << '\t';
    }
    std::cout << setting->key_name() << '=' << setting->display() << '\n';
  }
}

void run_keys() {
  for (const auto &info : keys()) {
    std::cout << fmt::format("{:<22} {:<36} {}{}\n",
                             info.key,
                             info.env,
                             info.help,
                             info.flag.empty() ? "" : fmt::format(" (--{})", info.flag));
  }
}

void add_scope(cli::Command &command, Options &o) {
  command.add_flag(cli::flag("user"),
                   o.user,
                   "the user file ($XDG_CONFIG_HOME/primebeaker/config.toml, else "
                   "~/.config/primebeaker/config.toml)");
  command.add_flag(cli::flag("project"),
                   o.project,
                   "the project file (primebeaker.toml here or in a parent directory)");
}

} // namespace

void register_commands(cli::CommandTree &tree) {
  tree.command({"config"},
               "Your defaults: workspace, clusters, priority, mount and working dirs, W&B, secret "
               "names (docs/config.md)");
  auto &o = tree.make_options<Options>();

  auto &get = tree.command({"config", "get"},
                           "Print a key's value as launches see it (exit 1 when it has none)");
  get.add_option("KEY", o.key, "a key of `config keys`").required();
  add_scope(get, o);
  get.add_flag(cli::flag("show-origin"), o.show_origin, "also print where the value comes from");
  get.callback([&o] { run_get(o); });

  auto &set = tree.command({"config", "set"},
                           "Set a key in the user file (or --project), keeping its comments");
  set.add_option("KEY", o.key, "a key of `config keys`").required();
  set.add_option("VALUE", o.values, "the value; a list key takes A,B or several VALUEs").required();
  add_scope(set, o);
  set.callback([&o] { run_set(o); });

  auto &unset = tree.command({"config", "unset"}, "Remove a key from the user file (or --project)");
  unset.add_option("KEY", o.key, "a key of `config keys`").required();
  add_scope(unset, o);
  unset.callback([&o] { run_unset(o); });

  auto &list = tree.command({"config", "list"},
                            "Print every key that has a value (KEY=VALUE), from whichever level "
                            "gives it");
  add_scope(list, o);
  list.add_flag(cli::flag("show-origin"),
                o.show_origin,
                "prefix each line with its origin (file:PATH:LINE, env:NAME, beaker:PATH, "
                "built-in), as `git config --show-origin`");
  list.add_flag(cli::flag("json"), o.json, "print {KEY: {value, origin, level}}");
  list.callback([&o] { run_list(o); });

  auto &all = tree.command({"config", "keys"},
                           "Print every key with its PRIMEBEAKER_* variable and what it is");
  all.callback([] { run_keys(); });
}

} // namespace pb::config
