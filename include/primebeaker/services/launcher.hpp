// SPDX-License-Identifier: MIT
// Delegation to LiteRegistry's own Python launchers (docs/services.md): primebeaker never renders
// service stacks. A small embedded Python helper builds BaseDeploymentConfig/PodmanStackConfig
// from a JSON request on stdin and answers with JSON on stdout.
#pragma once

#include <primebeaker/core/json.hpp>
#include <primebeaker/core/process.hpp>

#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace pb::services {

enum class Stack : std::uint8_t { base, podman };

// Where the upstream code of a stack lives: import module, classes, pip distribution.
struct StackInfo {
  std::string_view name; // "base" / "podman"
  std::string_view module;
  std::string_view config_class;
  std::string_view launcher_class;
  std::string_view distribution;
};
const StackInfo &stack_info(Stack stack);

// Where a configuration came from, which decides error wording and exit codes
// (flags: usage error, exit 2; files: bad input, exit 3).
enum class ConfigSource : std::uint8_t { flags, file };

// One field for the upstream config constructor.
struct ConfigField {
  std::string name;       // the upstream field name (snake_case)
  OrderedJson value;      // typed (from YAML) or the flag text(s) (from the command line)
  bool from_text = false; // flag text: the helper converts it to the field's declared type
  bool as_tuple = false;  // pass a list as a Python tuple (the service_cluster alias)
  std::string origin;     // "--terminal-replicas" or "services.yaml:4:3", for messages
  std::string path;       // "services.terminal_replicas" for file fields, else empty
};

// Everything the upstream constructor receives, in order.
struct LauncherConfig {
  Stack stack = Stack::base;
  ConfigSource source = ConfigSource::flags;
  std::vector<ConfigField> fields;

  const ConfigField *find(std::string_view name) const;
  // The value of a string field, if present and a string (for registry derivation).
  std::optional<std::string> string_value(std::string_view name) const;
};

// The interpreter: --python if given, else PRIMEBEAKER_PYTHON, else "python3". Pure.
std::string resolve_python(const std::optional<std::string> &flag,
                           const std::map<std::string, std::string> &env);

// The JSON request the helper reads for preview/submit. Pure.
OrderedJson config_request(std::string_view action, const LauncherConfig &config);

// The embedded helper's source (python3 -c). Run as a script it serves one request; executed
// under another __name__ it only defines its functions (handle(request) answers one request), so
// another embedded helper can serve LiteRegistry requests in the same Python process.
std::string_view helper_source();

// Turns a failed helper answer ({"ok": false, "error": KIND, ...}) into the pb::Error that
// LiteRegistry's calls throw: `config` (may be null) locates fields in messages.
[[noreturn]] void throw_helper_failure(const OrderedJson &answer,
                                       const LauncherConfig *config,
                                       const std::string &python);

// The PATH under which LiteRegistry's launchers, which run plain `beaker` from PATH, reach
// `program` (the beaker program primebeaker resolved, beaker::program_from_environment): a path
// ending in /beaker has its directory put before `path_list`. nullopt when `program` is the
// default, or cannot be reached that way (a warning says so). Pure but for the warning.
std::optional<std::string> launcher_path_for_beaker(const std::string &program,
                                                    const std::string &path_list);

// Runs the helper with `python`. Every failure becomes one clear pb::Error: a missing package
// names its pip requirement (exit 4), unknown fields name their flag or file:line:col with a
// suggestion, upstream validation errors keep upstream's message, Beaker failures exit 4.
class LiteRegistry {
public:
  LiteRegistry(proc::Runner &runner, std::string python);

  // The `beaker` program as primebeaker resolves it; see launcher_path_for_beaker().
  void use_beaker(const std::string &program, const std::string &path_list);

  // preview(): upstream `{experiment_name, config, spec}`; no Beaker call, nothing written.
  OrderedJson preview(const LauncherConfig &config);
  // submit(): upstream `{experiment_name, beaker}`; creates one Beaker experiment.
  OrderedJson submit(const LauncherConfig &config);
  // stop(): upstream `{command, dry_run}`; runs `beaker experiment stop ID` unless dry_run.
  OrderedJson stop(Stack stack, const std::string &experiment_id, bool dry_run);
  // The installed version of a distribution (importlib.metadata), nullopt when not installed.
  std::optional<std::string> installed_version(std::string_view distribution);
  // Unpacks a source archive into `destination` refusing members that would land outside it,
  // links, and devices; returns the single top-level directory it contains.
  std::filesystem::path unpack_source_archive(const std::filesystem::path &archive,
                                              const std::filesystem::path &destination);

  const std::string &python() const { return m_python; }

private:
  OrderedJson call(const OrderedJson &request, const LauncherConfig *config);

  proc::Runner &m_runner;
  std::string m_python;
  std::optional<std::string> m_helper_path; // PATH for the helper, when beaker was relocated
};

} // namespace pb::services
