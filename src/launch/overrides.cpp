// SPDX-License-Identifier: MIT
// `--set KEY=VALUE` on a launch (docs/launch.md "Overrides"): the lossless engine applied to a
// copy of the TOML, whose problems are reported at the --set argument that made them.
#include <primebeaker/core/error.hpp>
#include <primebeaker/core/text.hpp>
#include <primebeaker/launch/overrides.hpp>
#include <primebeaker/toml/edit.hpp>
#include <primebeaker/toml/value.hpp>

#include <fmt/format.h>

namespace pb::launch {

std::vector<Override> parse_overrides(const std::vector<std::string> &arguments) {
  std::vector<Override> out;
  for (const auto &argument : arguments) {
    const auto eq = argument.find('=');
    if (eq == std::string::npos || eq == 0) {
      throw usage_error(
          fmt::format("--set {}: expected KEY=VALUE (a dotted TOML key and a TOML value, as "
                      "`toml set` takes them: 3e-6, true, '\"text\"', '[1, 2]')",
                      argument));
    }
    Override o;
    o.key = std::string(text::trim(std::string_view(argument).substr(0, eq)));
    o.literal = std::string(text::trim(std::string_view(argument).substr(eq + 1)));
    o.argument = argument;
    for (const auto &earlier : out) {
      if (earlier.key == o.key) {
        throw usage_error(fmt::format(
            "--set {}: {} is already set by --set {}", argument, o.key, earlier.argument));
      }
    }
    out.push_back(std::move(o));
  }
  return out;
}

std::string apply_overrides(const toml::Document &document,
                            const std::vector<Override> &overrides) {
  toml::Editor editor(toml::Document::parse(document.text(), document.source_name()));
  for (const auto &o : overrides) {
    try {
      toml::parse_value_literal(o.literal);
    } catch (const Error &error) {
      throw usage_error(fmt::format(
          "--set {}: '{}' is not a TOML value (for the string, write --set '{}=\"{}\"')",
          o.argument,
          o.literal,
          o.key,
          o.literal));
    }
    try {
      editor.set(o.key, o.literal);
    } catch (const Error &error) {
      throw Error(
          ExitCode::usage, fmt::format("--set {}: {}", o.argument, error.what()), error.context());
    }
  }
  return editor.text();
}

// Lines of `error` that point into the copy at a line an override wrote (its key, and the tables
// it created) now name that --set.
Error at_override_arguments(const Error &error,
                            const toml::Document &original,
                            const toml::Document &copy,
                            const std::vector<Override> &overrides) {
  std::vector<std::pair<std::string, std::string>> prefixes; // "copy:L:" -> "--set K=V:"
  for (const auto &o : overrides) {
    const auto path = text::split(o.key, '.');
    for (size_t n = 1; n <= path.size(); ++n) {
      const std::vector<std::string> prefix(path.begin(), path.begin() + n);
      const toml::Value *value = copy.root().find_path(prefix);
      if (value == nullptr || (n < path.size() && original.root().find_path(prefix) != nullptr)) {
        continue; // a table that was there before the override
      }
      std::string at = copy.location(*value); // "<copy>:L:C"
      at.resize(at.rfind(':') + 1);
      prefixes.emplace_back(at, "--set " + o.argument + ":");
    }
  }
  const auto renamed = [&](const std::string &line) {
    for (const auto &[prefix, argument] : prefixes) {
      const auto at = line.find(prefix);
      if (at != std::string::npos) {
        const auto column_end = line.find(':', at + prefix.size());
        if (column_end != std::string::npos) {
          return line.substr(0, at) + argument + line.substr(column_end + 1);
        }
      }
    }
    return line;
  };
  std::vector<std::string> context;
  for (const auto &line : error.context()) {
    context.push_back(renamed(line));
  }
  return Error(error.code(), renamed(error.what()), context);
}

} // namespace pb::launch
