// SPDX-License-Identifier: MIT
// `--set KEY=VALUE` on a launch (docs/launch.md "Overrides"): the lossless engine applied to a
// copy of the TOML, whose problems are reported at the --set argument that made them.
#include <primebeaker/core/error.hpp>
#include <primebeaker/core/text.hpp>
#include <primebeaker/launch/overrides.hpp>
#include <primebeaker/toml/edit.hpp>
#include <primebeaker/toml/value.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cstdint>

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

namespace {

// For each line of `copy`, the 1-based line of `original` it is (0: written by an edit). The
// lossless engine keeps every line it did not write byte for byte, so a longest common
// subsequence of the lines pairs them; TOMLs are small enough for the quadratic table.
std::vector<size_t> original_lines(const std::string &original, const std::string &copy) {
  const auto a = text::split(original, '\n');
  const auto b = text::split(copy, '\n');
  std::vector<std::vector<uint32_t>> longest(a.size() + 1, std::vector<uint32_t>(b.size() + 1));
  for (size_t i = a.size(); i-- > 0;) {
    for (size_t j = b.size(); j-- > 0;) {
      longest[i][j] = a[i] == b[j] ? longest[i + 1][j + 1] + 1
                                   : std::max(longest[i + 1][j], longest[i][j + 1]);
    }
  }
  std::vector<size_t> out(b.size() + 1, 0); // out[0] unused: lines are 1-based
  for (size_t i = 0, j = 0; i < a.size() && j < b.size();) {
    if (a[i] == b[j]) {
      out[++j] = ++i;
    } else if (longest[i + 1][j] >= longest[i][j + 1]) {
      ++i;
    } else {
      ++j;
    }
  }
  return out;
}

} // namespace

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
      prefixes.emplace_back(at, (o.shown.empty() ? "--set " + o.argument : o.shown) + ":");
    }
  }
  const std::string copy_name = copy.source_name();
  const std::string original_name = original.source_name();
  const std::vector<size_t> lines = original_lines(original.text(), copy.text());
  // "<copy>:L:C" at an unedited line -> "<original>:L':C"; "<copy>" alone -> "<original>".
  const auto in_original = [&](std::string line) {
    for (size_t at = line.find(copy_name); at != std::string::npos;
         at = line.find(copy_name, at + 1)) {
      size_t end = at + copy_name.size();
      std::string replacement = original_name;
      if (end < line.size() && line[end] == ':') {
        size_t digits = end + 1;
        while (digits < line.size() && std::isdigit(static_cast<unsigned char>(line[digits]))) {
          ++digits;
        }
        if (digits > end + 1) {
          const size_t number = std::stoul(line.substr(end + 1, digits - end - 1));
          if (number < lines.size() && lines[number] != 0) {
            replacement += ":" + std::to_string(lines[number]);
            end = digits;
          }
        }
      }
      line.replace(at, end - at, replacement);
      at += replacement.size() - 1;
    }
    return line;
  };
  const auto renamed = [&](const std::string &line) {
    for (const auto &[prefix, argument] : prefixes) {
      const auto at = line.find(prefix);
      if (at != std::string::npos) {
        const auto column_end = line.find(':', at + prefix.size());
        if (column_end != std::string::npos) {
          return in_original(line.substr(0, at) + argument + line.substr(column_end + 1));
        }
      }
    }
    return in_original(line);
  };
  std::vector<std::string> context;
  for (const auto &line : error.context()) {
    context.push_back(renamed(line));
  }
  return Error(error.code(), renamed(error.what()), context);
}

} // namespace pb::launch
