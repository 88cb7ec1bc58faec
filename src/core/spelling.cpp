// SPDX-License-Identifier: MIT
#include <primebeaker/core/error.hpp>
#include <primebeaker/core/spelling.hpp>
#include <primebeaker/core/text.hpp>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>

namespace pb::text {

std::string closest_match(std::string_view name, const std::vector<std::string> &known) {
  std::string best;
  size_t best_distance = 3;
  for (const auto &candidate : known) {
    const size_t distance = text::edit_distance(name, candidate);
    if (distance < best_distance) {
      best_distance = distance;
      best = candidate;
    }
  }
  return best;
}

std::string kebab_case(std::string_view name) {
  std::string out(name);
  std::replace(out.begin(), out.end(), '_', '-');
  return out;
}

std::string snake_case(std::string_view name) {
  std::string out(name);
  std::replace(out.begin(), out.end(), '-', '_');
  return out;
}

std::string expand_user(std::string_view path, std::string_view home) {
  if (home.empty() || !(path == "~" || text::starts_with(path, "~/"))) {
    return std::string(path);
  }
  if (path == "~") {
    return std::string(home);
  }
  std::string out(home);
  if (out.back() != '/') {
    out += '/';
  }
  out += path.substr(2);
  return out;
}

} // namespace pb::text

namespace pb::cli {

std::vector<std::string> list_values(std::string_view kebab_name,
                                     const std::vector<std::string> &values) {
  std::vector<std::string> items;
  for (const auto &value : values) {
    const auto trimmed = text::trim(value);
    if (!trimmed.empty() && trimmed.front() == '[') {
      const auto parsed = nlohmann::json::parse(trimmed, nullptr, false);
      if (!parsed.is_array() ||
          !std::all_of(parsed.begin(), parsed.end(), [](const auto &v) { return v.is_string(); })) {
        throw usage_error(fmt::format("--{}: {} is not a JSON list of strings", kebab_name, value));
      }
      for (const auto &item : parsed) {
        items.push_back(item.template get<std::string>());
      }
      continue;
    }
    items.push_back(value);
  }
  return items;
}

} // namespace pb::cli
