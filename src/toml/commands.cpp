// SPDX-License-Identifier: MIT
// `primebeaker toml get|set|unset|check|diff`.
#include <primebeaker/core/command_tree.hpp>
#include <primebeaker/core/error.hpp>
#include <primebeaker/core/fs.hpp>
#include <primebeaker/core/json.hpp>
#include <primebeaker/toml/check.hpp>
#include <primebeaker/toml/diff.hpp>
#include <primebeaker/toml/edit.hpp>
#include <primebeaker/toml/format.hpp>
#include <primebeaker/toml/value.hpp>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <malloc.h>
#include <sys/stat.h>

#include <filesystem>
#include <iostream>
#include <iterator>

namespace pb::toml {
namespace {

struct GetOptions {
  std::string file;
  std::string key;
  std::string format = "value";
};

struct EditOptions {
  std::string file;
  std::string key;
  std::string value;
  bool string = false;
  std::string type;
  std::string value_file;
  bool dry_run = false;
  std::string output;
  bool if_exists = false;
  bool prune = false;
  std::string prime_rl; // --prime-rl VERSION: check the edit as that release's config
  bool no_check = false;
};

struct CheckOptions {
  std::vector<std::string> files;
  bool prime_rl = false;
  std::string root = "auto";
  std::string version; // the operand after --prime-rl that names a version, if any
};

PrimeRlCheck &prime_rl_check() {
  static PrimeRlCheck check;
  return check;
}

PrimeRlEditCheck &prime_rl_edit_check() {
  static PrimeRlEditCheck check;
  return check;
}

struct DiffOptions {
  std::string a;
  std::string b;
  bool json = false;
};

void run_get(const GetOptions &o) {
  const Document doc = Document::load(o.file);
  const KeyPath path = KeyPath::parse(o.key);
  const bool many = std::any_of(path.steps.begin(), path.steps.end(), [](const PathStep &s) {
    return s.kind == PathStep::Kind::all;
  });
  if (o.format == "toml") {
    std::cout << source_text(doc, path);
    return;
  }
  const auto values = lookup(doc, path);
  if (o.format == "value") {
    for (const Value *value : values) {
      std::cout << to_value_text(*value);
    }
    return;
  }
  const bool tagged = o.format == "tagged-json";
  auto convert = [tagged](const Value &v) { return tagged ? to_tagged_json(v) : to_json(v); };
  if (!many) {
    print_json(std::cout, convert(*values.front()));
    return;
  }
  OrderedJson list = OrderedJson::array();
  for (const Value *value : values) {
    list.push_back(convert(*value));
  }
  print_json(std::cout, list);
}

std::optional<Type> parse_type(std::string_view name) {
  static constexpr std::pair<std::string_view, Type> names[] = {
      {"string", Type::string},
      {"integer", Type::integer},
      {"float", Type::floating},
      {"boolean", Type::boolean},
      {"bool", Type::boolean},
      {"datetime", Type::offset_datetime},
      {"datetime-local", Type::local_datetime},
      {"date-local", Type::local_date},
      {"time-local", Type::local_time},
      {"array", Type::array},
      {"table", Type::table},
  };
  for (const auto &[n, t] : names) {
    if (n == name) {
      return t;
    }
  }
  return std::nullopt;
}

// Refuses in-place edits of files nobody may write (root could, but the mode says "don't").
void check_writable(const std::string &path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) {
    return; // write_file_atomic reports it
  }
  if ((st.st_mode & 0222) == 0) {
    throw failure(
        fmt::format("{} is read-only (mode {:04o}); nothing written", path, st.st_mode & 07777));
  }
}

std::string target_of(const EditOptions &o) {
  return !o.output.empty() ? o.output : o.file;
}

// Refuses in-place edits of read-only files, once the edit is planned.
void before_writing(const EditOptions &o) {
  if (o.output.empty() || o.output == o.file) {
    check_writable(target_of(o));
  }
}

// A file edited into a regular (or new) file is streamed at the memory of one parse
// (set_file()); a diff, stdin, stdout or a device (-o /dev/null) go through the text in memory.
bool streams_to_file(const EditOptions &o) {
  if (o.dry_run || o.file == "-" || target_of(o) == "-") {
    return false;
  }
  struct stat st {};
  return ::stat(target_of(o).c_str(), &st) != 0 || S_ISREG(st.st_mode);
}

// Before a streamed edit loads the file: blocks under 4 MB (the text, the node arena) come from
// the heap and freed memory stays there, so that toml++'s DOM in the second stage reuses the
// pages our document used instead of faulting in new ones (a 2 MB file: about 9,000 minor faults
// become about 6,100, for +0.5 MB of peak; bench/toml/README.md). The reservations above 4 MB
// are still mapped apart and returned whole.
void reuse_freed_memory() {
  ::mallopt(M_MMAP_THRESHOLD, 4 << 20);
  ::mallopt(M_TRIM_THRESHOLD, 256 << 20);
}

void emit(const EditOptions &o, const std::string &before, const std::string &after) {
  if (o.dry_run) {
    std::cout << unified_diff(before, after, o.file == "-" ? "<stdin>" : o.file);
    return;
  }
  const std::string target = target_of(o);
  if (target == "-") {
    std::cout << after;
    return;
  }
  before_writing(o);
  fs::write_file_atomic(target, after);
}

// Files this large are never read as Prime-RL configs (those are a few KB): the check would
// build the typed values of every line and read them as each entrypoint, and the streamed edit of
// a large file keeps its footprint of one parse (docs/toml.md "Footprint").
constexpr std::size_t k_largest_checked = 1 << 20;

// The schema check of the edit (docs/toml.md "Edits of Prime-RL configs"), or an empty function
// when the file is no Prime-RL config or --no-check says not to check.
EditCheck edit_check(const EditOptions &o, const Document &doc) {
  if (o.no_check) {
    if (!o.prime_rl.empty()) {
      throw usage_error("--prime-rl VERSION checks the edit, --no-check does not: give one");
    }
    return {};
  }
  if (o.prime_rl.empty() && doc.text().size() >= k_largest_checked) {
    return {};
  }
  if (!prime_rl_edit_check()) {
    throw failure("internal error: no Prime-RL check was provided to `toml set|unset`");
  }
  return prime_rl_edit_check()(doc, o.prime_rl);
}

// Refuses an edit that introduces problems: one line each (FILE:LINE:COL of the edited text),
// exit 3, nothing written.
void refuse_introduced(const EditOptions &o,
                       const std::string &verb,
                       const EditCheck &check,
                       const std::string &after,
                       const std::string &source_name) {
  ExtraCheckResult result = check(Document::parse(after, source_name));
  for (const auto &note : result.notes) {
    spdlog::info("{}", note);
  }
  if (result.errors.empty()) {
    return;
  }
  Error error(ExitCode::bad_input, result.errors.front());
  for (auto it = result.errors.begin() + 1; it != result.errors.end(); ++it) {
    error.add_context(*it);
  }
  error.add_context(
      fmt::format("{} {}: nothing written ({}; --no-check writes it anyway)",
                  verb,
                  o.key,
                  result.notes.empty() ? "Prime-RL's schema refuses it" : result.notes.front()));
  throw error;
}

void run_set(const EditOptions &o) {
  const bool has_value = !o.value.empty() || o.string;
  if (!o.value_file.empty() && !o.value.empty()) {
    throw usage_error("give VALUE or --value-file, not both");
  }
  if (o.value_file.empty() && !has_value) {
    throw usage_error("missing VALUE (or --value-file FILE)");
  }
  if (streams_to_file(o)) {
    reuse_freed_memory();
  }
  Document doc = Document::load(o.file);
  std::string value = o.value;
  if (!o.value_file.empty()) {
    if (o.value_file == "-" && o.file == "-") {
      throw usage_error("FILE and --value-file cannot both be stdin");
    }
    value = fs::read_file(o.value_file);
  }
  const std::string literal = o.string ? quote_string(value) : value;
  if (!o.type.empty()) {
    const auto expected = parse_type(o.type);
    if (!expected) {
      throw usage_error(fmt::format(
          "--type {}: expected string, integer, float, boolean, datetime, datetime-local, "
          "date-local, time-local, array or table",
          o.type));
    }
    const Value parsed = parse_value_literal(literal);
    if (parsed.type() != *expected) {
      throw usage_error(fmt::format(
          "value '{}' is {}, not {} (--type)", value, type_name(parsed.type()), o.type));
    }
  }
  const EditCheck check = edit_check(o, doc);
  if (check) {
    // A Prime-RL config: the edit in memory (a few KB), checked before anything is written.
    const std::string source_name = doc.source_name();
    std::string before = o.dry_run ? doc.text() : std::string();
    const std::string after = set(std::move(doc), o.key, literal);
    refuse_introduced(o, "set", check, after, source_name);
    emit(o, before, after);
    return;
  }
  if (streams_to_file(o)) {
    set_file(std::move(doc), target_of(o), o.key, literal, [&o] { before_writing(o); });
    return;
  }
  std::string before = o.dry_run ? doc.text() : std::string();
  emit(o, before, set(std::move(doc), o.key, literal));
}

void run_unset(const EditOptions &o) {
  const bool streamed = streams_to_file(o);
  if (streamed) {
    reuse_freed_memory();
  }
  Document doc = Document::load(o.file);
  if (const EditCheck check = edit_check(o, doc)) {
    const std::string source_name = doc.source_name();
    std::string before = o.dry_run ? doc.text() : std::string();
    const std::string after = unset(std::move(doc), o.key, {o.if_exists, o.prune});
    refuse_introduced(o, "unset", check, after, source_name);
    emit(o, before, after);
    return;
  }
  if (streamed) {
    unset_file(
        std::move(doc), target_of(o), o.key, {o.if_exists, o.prune}, [&o] { before_writing(o); });
    return;
  }
  std::string before = o.dry_run ? doc.text() : std::string();
  emit(o, before, unset(std::move(doc), o.key, {o.if_exists, o.prune}));
}

// Every error of every file as one pb::Error: the first is its message, the others its
// context lines.
void run_check(CheckOptions &o) {
  // `--prime-rl` is a flag, so `--prime-rl v0.8.0 FILE` leaves the version as the first operand.
  if (o.prime_rl && o.files.size() > 1 && looks_like_version(o.files.front()) &&
      !std::filesystem::exists(o.files.front())) {
    o.version = o.files.front();
    o.files.erase(o.files.begin());
  }
  std::vector<Error> errors;
  for (const auto &file : o.files) {
    try {
      const std::string text = fs::read_file(file);
      auto found = Document::check(text, file);
      if (found.empty() && o.prime_rl) {
        if (!prime_rl_check()) {
          throw failure("internal error: no Prime-RL check was provided to `toml check`");
        }
        auto extra = prime_rl_check()(Document::parse(text, file), o.root, o.version);
        for (auto &line : extra.errors) {
          found.emplace_back(ExitCode::bad_input, std::move(line));
        }
        for (const auto &note : extra.notes) {
          spdlog::info("{}", note);
        }
      }
      errors.insert(errors.end(),
                    std::make_move_iterator(found.begin()),
                    std::make_move_iterator(found.end()));
    } catch (const Error &e) { // cannot be read
      errors.push_back(e);
    }
  }
  if (errors.empty()) {
    return;
  }
  Error error(ExitCode::bad_input, errors.front().what());
  for (auto it = errors.begin() + 1; it != errors.end(); ++it) {
    error.add_context(it->what());
  }
  throw error;
}

} // namespace

void provide_prime_rl_check(PrimeRlCheck check) {
  prime_rl_check() = std::move(check);
}

void provide_prime_rl_edit_check(PrimeRlEditCheck check) {
  prime_rl_edit_check() = std::move(check);
}

bool looks_like_version(const std::string &word) {
  // v?N.N[.N][.devN]
  std::string_view rest = word;
  if (!rest.empty() && rest.front() == 'v') {
    rest.remove_prefix(1);
  }
  int numbers = 0;
  while (!rest.empty()) {
    if (numbers > 0) {
      if (rest.front() != '.') {
        return false;
      }
      rest.remove_prefix(1);
      if (numbers >= 2 && rest.substr(0, 3) == "dev") {
        rest.remove_prefix(3);
        numbers = 3;
      }
    }
    const auto digits = rest.find_first_not_of("0123456789");
    if (digits == 0 || rest.empty()) {
      return false;
    }
    rest.remove_prefix(digits == std::string_view::npos ? rest.size() : digits);
    if (++numbers > 4) {
      return false;
    }
  }
  return numbers >= 2;
}

namespace {

// --prime-rl VERSION and --no-check of `toml set|unset`.
void add_check_options(cli::Command &command, EditOptions &o) {
  command
      .add_option(cli::flag("prime-rl"),
                  o.prime_rl,
                  "check the edited file as this Prime-RL release's config (v0.7.1.dev83, "
                  "v0.8.0, v0.8.1.dev67 = v0.9); without it, a file `toml check --prime-rl` "
                  "reads as a Prime-RL config is checked as the release it reads as")
      .type_name("VERSION");
  command.add_flag(cli::flag("no-check"),
                   o.no_check,
                   "write the edit even if Prime-RL's schema refuses what it introduces");
}

void run_diff(const DiffOptions &o) {
  if (o.a == "-" && o.b == "-") {
    throw usage_error("A and B cannot both be stdin");
  }
  const DocumentDiff diff = diff_documents(Document::load(o.a), Document::load(o.b));
  if (o.json) {
    print_json(std::cout, diff_json(diff));
  } else {
    std::cout << diff_text(diff);
  }
  if (!diff.same()) {
    throw Error(ExitCode::failure, ""); // reported on stdout: exit 1 says "different"
  }
}

} // namespace

void register_commands(cli::CommandTree &tree) {
  tree.command({"toml"}, "Read and edit TOML files, keeping every byte an edit does not touch");

  auto &get_cmd = tree.command({"toml", "get"}, "Print the value at a key path");
  auto &g = tree.make_options<GetOptions>();
  get_cmd.add_option("FILE", g.file, "TOML file ('-' for stdin)").required();
  get_cmd
      .add_option("KEY",
                  g.key,
                  "key path: a.b, \"a.b\".c, bin[0].name, deps[-1], x[*]; '.' is "
                  "the whole document")
      .required();
  get_cmd
      .add_option(cli::flag("format"),
                  g.format,
                  "value (default), toml (exact source bytes), json, tagged-json (toml-test)")
      .one_of({"value", "toml", "json", "tagged-json"});
  get_cmd.callback([&g] { run_get(g); });

  auto &set_cmd = tree.command({"toml", "set"}, "Set a key to a value, editing the file in place");
  auto &s = tree.make_options<EditOptions>();
  set_cmd.add_option("FILE", s.file, "TOML file ('-': read stdin, print the result)").required();
  set_cmd
      .add_option("KEY",
                  s.key,
                  "key path: a.b, \"a.b\".c, bin[0].name, deps[+] (append), "
                  "deps[-1] (last)")
      .required();
  set_cmd.add_option("VALUE",
                     s.value,
                     "a TOML value literal: 8080, 3.5, true, '\"text\"', '[1, 2]', '{ a = 1 }', "
                     "1979-05-27 (with -s: plain text stored as a string)");
  set_cmd.add_flag(cli::flag("string", "-s"), s.string, "store VALUE as a string");
  set_cmd.add_option(cli::flag("type"),
                     s.type,
                     "assert the value's type: string, integer, float, boolean, datetime, "
                     "datetime-local, date-local, time-local, array, table");
  set_cmd.add_option(cli::flag("value-file"), s.value_file, "read VALUE from a file ('-': stdin)");
  set_cmd.add_flag(cli::flag("dry-run"), s.dry_run, "print a unified diff, write nothing");
  set_cmd.add_option(cli::flag("output", "-o"),
                     s.output,
                     "write the result here instead of in place ('-': stdout)");
  add_check_options(set_cmd, s);
  set_cmd.callback([&s] { run_set(s); });

  auto &unset_cmd = tree.command({"toml", "unset"}, "Remove a key and the comments it owns");
  auto &u = tree.make_options<EditOptions>();
  unset_cmd.add_option("FILE", u.file, "TOML file ('-': read stdin, print the result)").required();
  unset_cmd.add_option("KEY", u.key, "key path (see `toml set --help`)").required();
  unset_cmd.add_flag(cli::flag("if-exists"), u.if_exists, "a missing key is not an error");
  unset_cmd.add_flag(cli::flag("prune"), u.prune, "also remove [tables] left empty");
  unset_cmd.add_flag(cli::flag("dry-run"), u.dry_run, "print a unified diff, write nothing");
  unset_cmd.add_option(cli::flag("output", "-o"),
                       u.output,
                       "write the result here instead of in place ('-': stdout)");
  add_check_options(unset_cmd, u);
  unset_cmd.callback([&u] { run_unset(u); });

  auto &check_cmd = tree.command({"toml", "check"},
                                 "Validate TOML files; reports every error as FILE:LINE:COL: "
                                 "message and exits 3");
  auto &c = tree.make_options<CheckOptions>();
  check_cmd.add_option("FILE", c.files, "TOML files ('-' for stdin)").required();
  check_cmd.add_flag(cli::flag("prime-rl"),
                     c.prime_rl,
                     "also check every key against Prime-RL's config schema: unknown keys, "
                     "types, bounds, allowed values; `--prime-rl VERSION FILE...` reads them as "
                     "that release (v0.7.1.dev83, v0.8.0, v0.8.1.dev67 = v0.9), else as any "
                     "release of the generation the keys show (docs/primerl-schema.md)");
  check_cmd
      .add_option(cli::flag("root"),
                  c.root,
                  "with --prime-rl: the entrypoint that reads the files (auto: the one that "
                  "accepts them, the likeliest first)")
      .capture_default_str()
      .one_of({"auto", "rl", "sft", "trainer", "orchestrator", "inference", "env_server", "evals"});
  check_cmd.callback([&c] { run_check(c); });

  auto &diff_cmd = tree.command({"toml", "diff"},
                                "Keys added, removed and changed from A to B, by meaning; exits "
                                "0 when the same, 1 when different");
  auto &d = tree.make_options<DiffOptions>();
  diff_cmd.add_option("A", d.a, "TOML file ('-' for stdin)").required();
  diff_cmd.add_option("B", d.b, "TOML file ('-' for stdin)").required();
  diff_cmd.add_flag(
      cli::flag("json"), d.json, "print {\"same\", \"added\", \"removed\", \"changed\"} as JSON");
  diff_cmd.callback([&d] { run_diff(d); });
}

} // namespace pb::toml
