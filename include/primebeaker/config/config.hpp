// SPDX-License-Identifier: MIT
// The user's defaults (docs/config.md): a user file ($XDG_CONFIG_HOME/primebeaker/config.toml),
// a project file (primebeaker.toml, found from the working directory upwards), PRIMEBEAKER_*
// variables, beaker's own default workspace, and the built-ins, each value with its origin.
// Precedence: a flag > PRIMEBEAKER_* > project > user > beaker's default workspace > built-in.
#pragma once

#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace pb::config {

// One key a config file may hold. A key ending in ".*" is a pattern ("price.*"): it stands for
// every "price.<name>" (docs/config.md "Prices").
struct KeyInfo {
  std::string_view key;      // dotted, as written in the file: "workspace", "wandb.entity"
  bool list = false;         // an array of strings (else a string)
  std::string_view env;      // PRIMEBEAKER_* variable that overrides the files
  std::string_view flag;     // the launch flag it is the default of ("" when none)
  std::string_view built_in; // "" when there is none (items separated by ',' for lists)
  std::string_view help;
};

// Every key, in `config list` order.
const std::vector<KeyInfo> &keys();
// The key named `key`; throws pb::Error exit 2 naming it, with a did-you-mean, when unknown.
// "price.H100" finds the pattern key "price.*".
const KeyInfo &key_info(std::string_view key);
const KeyInfo *find_key(std::string_view key);
bool is_pattern(const KeyInfo &key); // "price.*"

// Where a value came from, lowest precedence first.
enum class Level { built_in, derived, beaker, user, project, env, flag };

struct Setting {
  const KeyInfo *key = nullptr;
  std::string name;                // the key as named ("price.H100"); empty: key->key
  std::vector<std::string> values; // one for a string key
  Level level = Level::built_in;
  std::string origin; // "file:PATH:LINE", "env:NAME", "beaker:PATH", "built-in", "derived: ..."

  std::string_view key_name() const { return name.empty() ? key->key : std::string_view(name); }
  const std::string &text() const; // the first value ("" when none)
  std::string display() const;     // list items joined with ','
};

// The files a process reads.
struct Files {
  std::filesystem::path user;    // may not exist
  std::filesystem::path project; // empty when no primebeaker.toml is found upwards
  std::filesystem::path beaker;  // beaker's config.yml (BEAKER_CONFIG, else ~/.beaker/config.yml)
};
using Environment = std::map<std::string, std::string>;
Files locate(const Environment &environment, const std::filesystem::path &cwd);
// Where `config set --project` writes: the project file found, else ./primebeaker.toml.
std::filesystem::path project_target(const Files &files, const std::filesystem::path &cwd);

// The texts of the files (nullopt: absent), for a pure resolve().
struct Sources {
  Environment environment;
  Files files;
  std::optional<std::string> user_text;
  std::optional<std::string> project_text;
  std::optional<std::string> beaker_text;
  // The login name of the passwd entry of the effective uid ("" when it has none): the user
  // name's last fallback, after `user`, $USER and $LOGNAME (docs/config.md).
  std::string passwd_user;
};
Sources read_sources(const Environment &environment, const std::filesystem::path &cwd);

// The name of the passwd entry of the effective uid (getpwuid_r(geteuid())), "" when none.
std::string passwd_user_name();

class Settings {
public:
  // Reads and checks every layer: an unknown key or a wrong type in a file is exit 3 naming
  // FILE:LINE:COL; a bad PRIMEBEAKER_* value names the variable.
  static Settings resolve(const Sources &sources);
  // resolve(read_sources(env::snapshot(), current_path())).
  static Settings load();

  // The effective setting of `key` (nullptr when it has no value at any level).
  const Setting *get(std::string_view key) const;
  std::string text(std::string_view key) const; // "" when unset
  // Your name in derived paths: `user` (PRIMEBEAKER_USER, project or user file), else $USER,
  // else $LOGNAME, else the passwd entry of the effective uid; "" when none is known. Every
  // command that needs the user name takes it from here.
  std::string user() const { return text("user"); }
  // The setting of `key` at one level only (a file's own entry), for `config list --user`.
  const Setting *at(std::string_view key, Level level) const;
  // Effective settings of every key that has a value, in keys() order (a pattern's keys by name).
  std::vector<const Setting *> effective() const;
  // Effective settings of the keys a pattern key stands for ("price.*"), by name.
  std::vector<const Setting *> matching(const KeyInfo &pattern) const;
  const Files &files() const { return m_files; }

private:
  Files m_files;
  std::map<std::string, std::vector<Setting>, std::less<>> m_layers; // key -> settings, low first
};

// Throws pb::Error exit 2 when `values` cannot be the value of `key` (a priority Beaker does not
// know, a workspace that is not ACCOUNT/NAME, a relative path, ...). `where` names the source.
void check_value(const KeyInfo &key,
                 const std::vector<std::string> &values,
                 std::string_view where);

// The name of a level for messages: "flag", "PRIMEBEAKER_* variable", "project file", ...
std::string_view level_name(Level level);

} // namespace pb::config
