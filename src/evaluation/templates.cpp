// SPDX-License-Identifier: MIT
#include <primebeaker/core/error.hpp>
#include <primebeaker/core/fs.hpp>
#include <primebeaker/core/text.hpp>
#include <primebeaker/evaluation/templates.hpp>
#include <primebeaker/registry/records.hpp>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <system_error>

namespace pb::evaluation {

namespace stdfs = std::filesystem;

std::vector<stdfs::path> template_search_dirs(const stdfs::path &yaml_dir,
                                              const stdfs::path &cwd,
                                              const std::vector<stdfs::path> &extra) {
  std::vector<stdfs::path> dirs;
  const auto add = [&dirs](const stdfs::path &dir) {
    const auto normal = dir.lexically_normal();
    if (!normal.empty() && std::find(dirs.begin(), dirs.end(), normal) == dirs.end()) {
      dirs.push_back(normal);
    }
  };
  add(yaml_dir);
  add(cwd);
  for (auto dir = yaml_dir.lexically_normal(); dir.has_relative_path();) {
    dir = dir.parent_path();
    add(dir);
  }
  for (const auto &dir : extra) {
    add(dir.is_absolute() ? dir : cwd / dir);
  }
  return dirs;
}

std::optional<stdfs::path> find_template(const std::string &requested,
                                         const std::vector<stdfs::path> &dirs) {
  std::error_code ec;
  const stdfs::path wanted(requested);
  if (wanted.is_absolute()) {
    if (stdfs::is_regular_file(wanted, ec)) {
      return wanted;
    }
    return std::nullopt;
  }
  for (const auto &dir : dirs) {
    const auto candidate = (dir / wanted).lexically_normal();
    if (stdfs::is_regular_file(candidate, ec)) {
      return candidate;
    }
  }
  return std::nullopt;
}

void check_template(const std::string &path, std::string_view content) {
  nlohmann::json parsed;
  try {
    parsed = nlohmann::json::parse(content);
  } catch (const nlohmann::json::parse_error &error) {
    std::string reason = error.what();
    if (const auto colon = reason.find("parse error"); colon != std::string::npos) {
      reason = reason.substr(colon);
    }
    throw input_error(fmt::format("invalid JSON template {}: {}", path, reason));
  }
  if (!parsed.is_object()) {
    throw input_error(fmt::format("template must contain a JSON object: {}", path));
  }
}

std::string snapshot_path(const std::string &root, std::string_view content) {
  std::string base = root;
  while (base.size() > 1 && base.back() == '/') {
    base.pop_back();
  }
  return base + "/.jtceval-inputs/templates/" + registry::sha256_hex(content) + ".json";
}

void write_snapshot(const std::string &target, std::string_view content) {
  const stdfs::path path(target);
  std::error_code ec;
  stdfs::create_directories(path.parent_path(), ec);
  if (ec) {
    throw failure(fmt::format("cannot create the template snapshot directory {}: {}",
                              path.parent_path().string(),
                              ec.message()));
  }
  if (stdfs::exists(path, ec)) {
    if (fs::read_file(path, 1) != content) {
      throw failure(fmt::format("template snapshot digest collision: {}", target));
    }
    return;
  }
  fs::write_file_atomic(path, content, 0644);
}

std::vector<stdfs::path> split_search_path(std::string_view text) {
  std::vector<stdfs::path> dirs;
  for (const auto &part : text::split(text, ':')) {
    if (!text::trim(part).empty()) {
      dirs.emplace_back(part);
    }
  }
  return dirs;
}

} // namespace pb::evaluation
