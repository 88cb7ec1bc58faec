// SPDX-License-Identifier: MIT
// `primebeaker environments list|resolve|show|validate|parse-tool-calls` (docs/environments.md);
// `environments score` calls the scoring services and lives in src/environments_runtime.
#include <primebeaker/core/command_tree.hpp>
#include <primebeaker/core/error.hpp>
#include <primebeaker/core/json.hpp>
#include <primebeaker/environments/catalog.hpp>
#include <primebeaker/environments/parsing.hpp>
#include <primebeaker/environments/python.hpp>
#include <primebeaker/environments/scoring.hpp>
#include <primebeaker/environments/validate.hpp>
#include <primebeaker/toml/value.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <iterator>

namespace pb::environments {
namespace {

// What NAME may be (catalog.hpp, lookup_environment).
constexpr const char *k_name_help =
    "name, legacy alias, module or module path as TOMLs name it "
    "(label, jtc-label, jtc_label_env, primebeaker.environments.jtc_label_env)";

struct ListOptions {
  bool json = false;
  bool keys = false;
};

// One row per environment, its aliases in a column (the names a TOML or `show` accepts).
void run_list(const ListOptions &o) {
  if (o.json && o.keys) {
    throw usage_error("environments list takes --json or --keys, not both");
  }
  if (o.keys) {
    for (const auto &key : registry_keys()) {
      std::cout << key << '\n';
    }
    return;
  }
  if (o.json) {
    OrderedJson all = OrderedJson::array();
    for (const auto &e : catalog()) {
      all.push_back(describe(e));
    }
    print_json(std::cout, all);
    return;
  }
  std::vector<std::array<std::string, 3>> rows = {{"NAME", "ALIASES", "MODULE"}};
  for (const auto &e : catalog()) {
    rows.push_back({e.name,
                    e.aliases.empty() ? "-" : fmt::format("{}", fmt::join(e.aliases, ", ")),
                    e.module});
  }
  std::size_t name_width = 0;
  std::size_t alias_width = 0;
  for (const auto &row : rows) {
    name_width = std::max(name_width, row[0].size());
    alias_width = std::max(alias_width, row[1].size());
  }
  for (const auto &row : rows) {
    std::cout << fmt::format(
        "{:<{}}  {:<{}}  {}\n", row[0], name_width, row[1], alias_width, row[2]);
  }
}

struct ShowOptions {
  std::string name;
  bool json = false;
};

void print_show(const Environment &e) {
  std::cout << e.name << " -> " << e.entry_point() << '\n';
  std::cout << "  " << e.summary << '\n';
  if (!e.aliases.empty()) {
    std::cout << "  aliases: " << fmt::format("{}", fmt::join(e.aliases, ", ")) << '\n';
  }
  std::cout << "  behaviour: " << behaviour_name(e.behaviour) << " (" << e.env_class
            << ", max turns " << e.max_turns_text() << ")\n";
  std::cout << "  tools: "
            << (e.tools.empty() ? "none" : fmt::format("{}", fmt::join(e.tools, ", "))) << '\n';
  std::cout << "  services: "
            << (e.services.empty() ? "none" : fmt::format("{}", fmt::join(e.services, ", ")))
            << '\n';
  std::cout << "  parameters (unknown arguments are "
            << (e.unknown_args == UnknownArgs::reject    ? "rejected"
                : e.unknown_args == UnknownArgs::forward ? "forwarded"
                                                         : "ignored")
            << "):\n";
  for (const auto &p : e.parameters) {
    std::string line = fmt::format("    {} ({})", p.name, param_type_name(p.type));
    line += p.required ? " required"
                       : " = " + (p.default_value.is_null() ? std::string("None")
                                                            : p.default_value.dump());
    if (!p.constraint.empty()) {
      line += "; " + p.constraint;
    }
    std::cout << line << '\n';
  }
  std::cout << "  rewards:\n";
  for (const auto &r : e.rewards) {
    std::cout << "    " << r.name << " (weight " << r.weight_text() << "): " << r.meaning << '\n';
  }
  if (!e.metrics.empty()) {
    std::cout << "  metrics: " << fmt::format("{}", fmt::join(e.metrics, ", ")) << '\n';
  }
}

struct ValidateOptions {
  std::string toml;
  std::string working_dir; // "": the current directory
  bool json = false;
};

void run_validate(const ValidateOptions &o) {
  const toml::Document document = toml::Document::load(o.toml);
  const std::string name = o.toml == "-" ? std::string("<stdin>") : o.toml;
  auto problems = validate_toml(document, name);
  // Then the dataset files the arguments name, where this machine can see them.
  const std::filesystem::path cwd = std::filesystem::current_path();
  DatasetRoots roots;
  roots.working_dir = o.working_dir.empty() ? cwd : (cwd / o.working_dir).lexically_normal();
  fs::RealFileSystem files;
  for (auto &problem : check_dataset_files(document, roots, files)) {
    problems.push_back(std::move(problem));
  }
  size_t errors = 0;
  OrderedJson list = OrderedJson::array();
  for (const auto &p : problems) {
    errors += p.error ? 1 : 0;
    if (o.json) {
      list.push_back({{"severity", p.error ? "error" : "warning"},
                      {"key", p.key_path},
                      {"line", p.position.line},
                      {"column", p.position.column},
                      {"message", p.message}});
    } else {
      std::cerr << format_problem(p, name) << '\n';
    }
  }
  if (o.json) {
    print_json(std::cout, list);
  }
  if (errors > 0) {
    throw Error(
        ExitCode::bad_input,
        fmt::format("{}: {} bad environment argument{}", name, errors, errors == 1 ? "" : "s"));
  }
  if (!o.json) {
    std::cout << name << ": environment arguments OK\n";
  }
}

struct ParseOptions {
  std::string format = "auto";
};

std::string read_all(std::istream &in) {
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

void run_parse(const ParseOptions &o) {
  std::cout << py::dumps(tool_call_report(read_all(std::cin), o.format)) << '\n';
}

} // namespace

void register_commands(pb::cli::CommandTree &tree) {
  tree.command({"environments"}, "The bundled Verifiers environments (docs/environments.md)");

  auto &list = tree.command({"environments", "list"},
                            "Print the 16 environments: name, legacy aliases, module");
  auto &list_options = tree.make_options<ListOptions>();
  list.add_flag("--json",
                list_options.json,
                "Print the whole catalog as JSON (per environment: name, module, entry_point, "
                "aliases, ..., as `show --json`)");
  list.add_flag("--keys",
                list_options.keys,
                "Print the 31 names and aliases one per line, sorted (Python PrimeBeaker's "
                "`python -m primebeaker.environments`)");
  list.footer("A TOML names an environment by its module: id = "
              "\"primebeaker.environments.<MODULE>\". `environments show NAME` describes one.");
  list.callback([&list_options] { run_list(list_options); });

  auto &resolve_name = tree.make_options<std::string>();
  auto &resolve_cmd = tree.command({"environments", "resolve"},
                                   "Print primebeaker.environments.<module>:load_environment");
  resolve_cmd.add_option("NAME", resolve_name, k_name_help).required();
  resolve_cmd.callback(
      [&resolve_name] { std::cout << resolve(resolve_name).entry_point() << '\n'; });

  auto &show = tree.make_options<ShowOptions>();
  auto &show_cmd = tree.command({"environments", "show"},
                                "Describe an environment: parameters, tools, rewards, services");
  show_cmd.add_option("NAME", show.name, k_name_help).required();
  show_cmd.add_flag("--json", show.json, "Print JSON");
  show_cmd.callback([&show] {
    const Environment &e = resolve(show.name);
    if (show.json) {
      print_json(std::cout, describe(e));
    } else {
      print_show(e);
    }
  });

  auto &validate = tree.make_options<ValidateOptions>();
  auto &validate_cmd =
      tree.command({"environments", "validate"},
                   "Check every environment entry of a Prime-RL TOML against the catalog");
  validate_cmd.add_option(cli::flag("toml"), validate.toml, "RL TOML ('-' for stdin)").required();
  validate_cmd.add_option(cli::flag("working-dir"),
                          validate.working_dir,
                          "Where the run starts: relative dataset paths are relative to it, as in "
                          "the container (default: the current directory)");
  validate_cmd.add_flag("--json", validate.json, "Print the problems as JSON");
  validate_cmd.callback([&validate] { run_validate(validate); });

  auto &parse = tree.make_options<ParseOptions>();
  auto &parse_cmd = tree.command({"environments", "parse-tool-calls"},
                                 "Read an assistant message (JSON object or text) on stdin and "
                                 "print the tool calls found, for debugging");
  parse_cmd.add_option(cli::flag("format"), parse.format, "auto|qwen-json|qwen-xml|structured")
      .one_of({"auto", "qwen-json", "qwen-xml", "structured"})
      .capture_default_str();
  parse_cmd.callback([&parse] { run_parse(parse); });
}

} // namespace pb::environments
