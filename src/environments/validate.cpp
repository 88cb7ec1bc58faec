// SPDX-License-Identifier: MIT
// Environment argument validation (docs/environments.md "Validation").
#include <primebeaker/core/text.hpp>
#include <primebeaker/environments/validate.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <filesystem>
#include <iterator>
#include <map>

namespace pb::environments {
namespace {

using J = OrderedJson;
using toml::Type;
using toml::Value;

bool is_integer(const J &v) {
  return v.is_number_integer();
}
bool is_number(const J &v) {
  return v.is_number();
}

std::string describe_json(const J &v) {
  if (v.is_null()) {
    return "null";
  }
  if (v.is_boolean()) {
    return "a boolean";
  }
  if (v.is_number_integer()) {
    return "an integer";
  }
  if (v.is_number()) {
    return "a float";
  }
  if (v.is_string()) {
    return "a string";
  }
  if (v.is_array()) {
    return "an array";
  }
  return "a table";
}

bool type_ok(const Parameter &p, const J &v) {
  if (v.is_null()) {
    return p.nullable || !p.required;
  }
  switch (p.type) {
  case ParamType::string:
    return v.is_string();
  case ParamType::integer:
    return is_integer(v);
  case ParamType::number:
    return is_number(v);
  case ParamType::boolean:
    return v.is_boolean();
  case ParamType::string_list:
    if (!v.is_array()) {
      return false;
    }
    for (const auto &item : v) {
      if (!item.is_string()) {
        return false;
      }
    }
    return true;
  case ParamType::int_or_none:
    return is_integer(v) || (v.is_string() && v.get<std::string>() == "None");
  case ParamType::any:
    return true;
  }
  return false;
}

struct Checker {
  const Environment &env;
  const J &args;
  std::vector<Problem> problems;

  void error(const std::string &key, std::string message) {
    problems.push_back({true, key, {}, std::move(message)});
  }
  void warning(const std::string &key, std::string message) {
    problems.push_back({false, key, {}, std::move(message)});
  }
  // The value in effect: given, else the catalog default.
  J value(const std::string &name) const {
    if (args.contains(name)) {
      return args.at(name);
    }
    const Parameter *p = env.parameter(name);
    return p != nullptr ? p->default_value : J();
  }
  bool given(const std::string &name) const {
    return args.contains(name) && !args.at(name).is_null();
  }

  void bound(const Parameter &p, const J &v) {
    if (!is_number(v)) {
      if (p.constraint == "non-blank" && v.is_string() &&
          text::trim(v.get_ref<const std::string &>()).empty()) {
        error(p.name, "must not be blank");
      }
      return;
    }
    const double x = v.get<double>();
    const std::string &c = p.constraint;
    auto starts = [&c](const char *prefix) { return text::starts_with(c, prefix); };
    if (!std::isfinite(x)) {
      error(p.name, "must be finite");
    } else if (starts("> 0") && !(x > 0)) {
      error(p.name, fmt::format("must be > 0, got {}", v.dump()));
    } else if (starts(">= 0") && !(x >= 0)) {
      error(p.name, fmt::format("must be >= 0, got {}", v.dump()));
    } else if (starts(">= 1") && !(x >= 1)) {
      error(p.name, fmt::format("must be >= 1, got {}", v.dump()));
    } else if (starts("<= 0") && !(x <= 0)) {
      error(p.name, fmt::format("must be <= 0 (a penalty), got {}", v.dump()));
    } else if (starts("0 <= rate <= 1") && !(x >= 0 && x <= 1)) {
      error(p.name, fmt::format("must be between 0 and 1, got {}", v.dump()));
    } else if (starts("0 < fraction <= 1") && !(x > 0 && x <= 1)) {
      error(p.name, fmt::format("must be in (0, 1], got {}", v.dump()));
    } else if (starts("0 < eps < 0.5") && !(x > 0 && x < 0.5)) {
      error(p.name, fmt::format("must be in (0, 0.5), got {}", v.dump()));
    }
  }

  void generic() {
    for (const auto &p : env.parameters) {
      if (p.required && !given(p.name)) {
        error("", fmt::format("{} needs the argument '{}'", env.name, p.name));
      }
    }
    for (const auto &[key, v] : args.items()) {
      const Parameter *p = env.parameter(key);
      if (p == nullptr) {
        std::string hint;
        size_t best = 3;
        for (const auto &candidate : env.parameters) {
          const size_t d = text::edit_distance(key, candidate.name);
          if (d < best) {
            best = d;
            hint = fmt::format(" (did you mean '{}'?)", candidate.name);
          }
        }
        switch (env.unknown_args) {
        case UnknownArgs::reject:
          error(key, fmt::format("{} has no argument '{}'{}", env.name, key, hint));
          break;
        case UnknownArgs::forward:
          warning(key,
                  fmt::format("not an argument of {}; forwarded to the Verifiers environment "
                              "class{}",
                              env.name,
                              hint));
          break;
        case UnknownArgs::ignore:
          warning(key, fmt::format("{} ignores the argument '{}'{}", env.name, key, hint));
          break;
        }
        continue;
      }
      if (v.is_null() && !p->nullable && !p->required) {
        continue; // JSON null for an optional argument: the default applies
      }
      if (!type_ok(*p, v)) {
        error(key, fmt::format("must be {}, got {}", param_type_name(p->type), describe_json(v)));
        continue;
      }
      bound(*p, v);
    }
  }

  void max_turns_at_least_calls(const char *calls_name, bool strict) {
    const J calls = value(calls_name);
    const J turns = value("max_turns");
    if (!is_integer(calls) || !is_integer(turns)) {
      return;
    }
    const auto needed = calls.get<long long>() + 1;
    if (turns.get<long long>() < (strict ? needed : 1)) {
      error("max_turns",
            strict ? fmt::format("must be at least {} + 1 = {}, got {}",
                                 calls_name,
                                 needed,
                                 turns.get<long long>())
                   : fmt::format("must be >= 1, got {}", turns.get<long long>()));
    }
  }

  void tool_label_family() {
    const J tools = value("tools");
    if (tools.is_array()) {
      for (const auto &t : tools) {
        if (!t.is_string()) {
          continue;
        }
        const auto name = t.get<std::string>();
        if (name == "terminal" || name == "submit") {
          continue;
        }
        if (name == "python" || name == "bash" || name == "webterminal" || name == "search") {
          error("tools",
                fmt::format("tool '{}' has no execution client in {} (missing execution "
                            "clients); use terminal and submit",
                            name,
                            env.name));
        } else {
          error("tools",
                fmt::format("unknown tool '{}'; known: bash, python, search, submit, terminal, "
                            "webterminal",
                            name));
        }
      }
      const J calls = value("max_tool_calls");
      if (tools.empty() && is_integer(calls) && calls.get<long long>() != 0) {
        error("max_tool_calls", "must be 0 when no tools are selected");
      }
    }
    const J commands = value("standalone_command_repeat_commands");
    if (commands.is_array()) {
      for (const auto &c : commands) {
        if (!c.is_string()) {
          continue;
        }
        const auto &s = c.get_ref<const std::string &>();
        if (s.empty() || s.find_first_of(" \t\r\n\v\f") != std::string::npos) {
          error("standalone_command_repeat_commands",
                fmt::format("command names must be non-empty without whitespace, got '{}'", s));
        }
      }
    }
    max_turns_at_least_calls("max_tool_calls", false);
  }

  void judge_url() {
    if (given("judge_server_url")) {
      return;
    }
    const J search = value("search_server_url");
    if (search.is_string()) {
      std::string s = search.get<std::string>();
      while (!s.empty() && s.back() == '/') {
        s.pop_back();
      }
      if (!text::starts_with(std::string(s.rbegin(), s.rend()), "hcraes/")) {
        error("search_server_url",
              "must end in /search when judge_server_url is not given (the judge URL is "
              "derived from it)");
      }
    }
  }

  void specific() {
    switch (env.behaviour) {
    case Behaviour::tool_label:
    case Behaviour::articulated_harness:
      tool_label_family();
      break;
    case Behaviour::podman_terminal:
      if (given("verifier_reward_weight") && args.contains("reward_file_weight") &&
          args.at("reward_file_weight") != J(1.0)) {
        error("verifier_reward_weight",
              "is the legacy name of reward_file_weight; give only one of them");
      }
      max_turns_at_least_calls("max_tool_calls", false);
      break;
    case Behaviour::terminal_tool_label:
      max_turns_at_least_calls("max_terminal_calls", false);
      break;
    case Behaviour::reward_model: {
      const J t = value("score_transform");
      if (t.is_string() && t != "identity" && t != "logit") {
        error("score_transform",
              fmt::format("must be identity or logit, got '{}'", t.get<std::string>()));
      }
      break;
    }
    case Behaviour::search_agent:
      max_turns_at_least_calls("max_tool_calls", true);
      break;
    case Behaviour::search_agent_judge:
    case Behaviour::search_visit_agent_judge:
      max_turns_at_least_calls("max_tool_calls", true);
      judge_url();
      break;
    case Behaviour::search_visit_agent:
      max_turns_at_least_calls("max_tool_calls", true);
      break;
    case Behaviour::rubrichub_judge:
      if (!given("judge_model_path")) {
        warning(
            "",
            "judge_model_path is not set: Python PrimeBeaker's default is a checkpoint path on its "
            "authors' cluster");
      }
      break;
    default:
      break;
    }
  }
};

std::string join_path(const std::string &prefix, const std::string &key) {
  if (key.empty()) {
    return prefix;
  }
  const bool bare = key.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
                                          "0123456789_-") == std::string::npos;
  return prefix + "." + (bare ? key : J(key).dump());
}

} // namespace

std::string format_problem(const Problem &problem, const std::string &source_name) {
  std::string where = source_name;
  if (problem.position.line != 0) {
    where += fmt::format(":{}:{}", problem.position.line, problem.position.column);
  }
  return fmt::format("{}: {}: {}{}{}",
                     where,
                     problem.error ? "error" : "warning",
                     problem.key_path,
                     problem.key_path.empty() ? "" : ": ",
                     problem.message);
}

std::vector<Problem> validate_args(const Environment &environment, const OrderedJson &args) {
  if (!args.is_object()) {
    return {{true, "", {}, "environment arguments must be a table"}};
  }
  Checker checker{environment, args, {}};
  checker.generic();
  checker.specific();
  return std::move(checker.problems);
}

OrderedJson toml_to_json(const toml::Value &value) {
  switch (value.type()) {
  case Type::string:
    return *value.string();
  case Type::integer:
    return *value.integer();
  case Type::floating:
    return *value.floating();
  case Type::boolean:
    return *value.boolean();
  case Type::array: {
    J out = J::array();
    for (const auto &item : *value.array()) {
      out.push_back(toml_to_json(item));
    }
    return out;
  }
  case Type::table: {
    J out = J::object();
    for (const auto &[key, member] : *value.table()) {
      out[key] = toml_to_json(member);
    }
    return out;
  }
  default:
    return value.raw();
  }
}

namespace {

// One bundled environment's entry in a TOML: where it is and its `args` (nullptr when absent).
struct Entry {
  std::string prefix; // orchestrator.train.source[0].legacy
  const Environment *environment = nullptr;
  const Value *id = nullptr;
  const Value *args = nullptr;
};

// Every entry validate_toml() checks, in document order; third-party ids are left out.
std::vector<Entry> bundled_entries(const toml::Document &document) {
  std::vector<Entry> found;
  const Value *orchestrator = document.root().find("orchestrator");
  if (orchestrator == nullptr || !orchestrator->is(Type::table)) {
    return found;
  }
  struct Collection {
    std::vector<std::string_view> keys;
    std::string name;
  };
  const std::vector<Collection> collections = {
      {{"env"}, "orchestrator.env"},
      {{"train", "source"}, "orchestrator.train.source"},
      {{"train", "env"}, "orchestrator.train.env"},
      {{"eval", "source"}, "orchestrator.eval.source"},
      {{"eval", "env"}, "orchestrator.eval.env"},
  };
  for (const auto &collection : collections) {
    const Value *entries = orchestrator;
    for (auto key : collection.keys) {
      entries = entries != nullptr && entries->is(Type::table) ? entries->find(key) : nullptr;
    }
    if (entries == nullptr || !entries->is(Type::array)) {
      continue;
    }
    for (size_t i = 0; i < entries->array()->size(); ++i) {
      const Value &entry = (*entries->array())[i];
      if (!entry.is(Type::table)) {
        continue;
      }
      std::string prefix = fmt::format("{}[{}]", collection.name, i);
      const Value *holder = &entry;
      bool taskset = false;
      if (const Value *legacy = entry.find("legacy");
          legacy != nullptr && legacy->is(Type::table)) {
        holder = legacy;
        prefix += ".legacy";
      } else if (const Value *v1 = entry.find_path({"env", "taskset"});
                 v1 != nullptr && v1->is(Type::table)) {
        // Prime-RL v0.9: a Verifiers v1 taskset carries its arguments in `args`.
        holder = v1;
        prefix += ".env.taskset";
        taskset = true;
      }
      const Value *id = holder->find("id");
      if (id == nullptr || id->string() == nullptr) {
        continue;
      }
      const Environment *environment =
          taskset ? environment_for_taskset(*id->string()) : environment_for_id(*id->string());
      if (environment == nullptr) {
        continue; // a third-party environment: not ours to check
      }
      found.push_back({std::move(prefix), environment, id, holder->find("args")});
    }
  }
  return found;
}

// The arguments that name a dataset (the catalog's `dataset`; the other spellings reach
// factories that forward unknown arguments).
bool is_dataset_argument(std::string_view name) {
  return name == "dataset" || name == "dataset_path" || name == "data_path";
}

} // namespace

std::vector<Problem> validate_toml(const toml::Document &document, const std::string &path) {
  (void)path;
  std::vector<Problem> problems;
  for (const Entry &entry : bundled_entries(document)) {
    const Value *args = entry.args;
    J json_args = J::object();
    toml::Position args_position = entry.id->position();
    if (args != nullptr) {
      if (!args->is(Type::table)) {
        problems.push_back({true,
                            entry.prefix + ".args",
                            args->position(),
                            "environment arguments must be a table"});
        continue;
      }
      json_args = toml_to_json(*args);
      if (args->position().line != 0) {
        args_position = args->position();
      }
    }
    for (auto problem : validate_args(*entry.environment, json_args)) {
      if (problem.key_path.empty()) {
        problem.position = args_position;
        problem.key_path = entry.prefix + (args != nullptr ? ".args" : ".id");
      } else {
        const Value *member = args != nullptr ? args->find(problem.key_path) : nullptr;
        problem.position = member != nullptr ? member->position() : args_position;
        problem.key_path = join_path(entry.prefix + ".args", problem.key_path);
      }
      problems.push_back(std::move(problem));
    }
  }
  return problems;
}

bool names_local_file(std::string_view value) {
  if (text::starts_with(value, "/") || text::starts_with(value, "./") ||
      text::starts_with(value, "../")) {
    return true;
  }
  const auto dot = value.rfind('.');
  if (dot == std::string_view::npos) {
    return false; // a hub id ("org/name") or a save_to_disk directory: cannot tell
  }
  std::string extension(value.substr(dot + 1));
  std::transform(extension.begin(), extension.end(), extension.begin(), [](unsigned char c) {
    return static_cast<char>(std::tolower(c));
  });
  return extension == "jsonl" || extension == "json" || extension == "parquet" ||
         extension == "csv" || extension == "arrow";
}

std::vector<DatasetFile> dataset_files(const toml::Document &document) {
  std::vector<DatasetFile> files;
  for (const Entry &entry : bundled_entries(document)) {
    if (entry.args == nullptr || !entry.args->is(Type::table)) {
      continue;
    }
    for (const auto &[name, value] : *entry.args->table()) {
      if (is_dataset_argument(name) && value.string() != nullptr &&
          names_local_file(*value.string())) {
        files.push_back(
            {join_path(entry.prefix + ".args", name), value.position(), *value.string()});
      }
    }
  }
  return files;
}

std::vector<Problem> check_dataset_files(const toml::Document &document,
                                         const DatasetRoots &roots,
                                         fs::FileSystem &files) {
  namespace stdfs = std::filesystem;
  std::vector<Problem> problems;
  stdfs::path mount = roots.mount.lexically_normal();
  if (mount.filename().empty() && mount != mount.root_path()) {
    mount = mount.parent_path(); // "/weka/" -> "/weka"
  }
  for (const auto &file : dataset_files(document)) {
    const stdfs::path written(file.path);
    const stdfs::path path =
        (written.is_absolute() ? written : roots.working_dir / written).lexically_normal();
    const stdfs::path below = path.lexically_relative(mount);
    if (below.empty() || *below.begin() == "..") {
      problems.push_back({false,
                          file.key_path,
                          file.position,
                          fmt::format("{} is outside the mount {}: not checked (only the image "
                                      "could hold it)",
                                      path.string(),
                                      mount.string())});
      continue;
    }
    // Checked where this machine sees the filesystem the file would be on: its directory is
    // here, or (below a mount other than "/") the directory right under the mount it sits in
    // (/weka/<bucket>). Else the mount is not here, or only partly: a note, not a refusal.
    const bool directory_here = files.is_directory(path.parent_path());
    const bool bucket_here = mount != mount.root_path() &&
                             std::distance(below.begin(), below.end()) > 1 &&
                             files.is_directory(mount / *below.begin());
    if (!directory_here && !bucket_here) {
      problems.push_back({false,
                          file.key_path,
                          file.position,
                          fmt::format("{} is not visible from this machine (no {} here): not "
                                      "checked",
                                      path.string(),
                                      path.parent_path().string())});
      continue;
    }
    if (!files.exists(path)) {
      problems.push_back({true,
                          file.key_path,
                          file.position,
                          written.is_absolute() ? fmt::format("no such file: {}", path.string())
                                                : fmt::format("no such file: {} (relative to {})",
                                                              path.string(),
                                                              roots.working_dir.string())});
    }
  }
  return problems;
}

} // namespace pb::environments
