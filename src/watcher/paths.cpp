// SPDX-License-Identifier: MIT
// Path helpers of the indexer: Python's Path rules, checkpoint steps and output directories,
// file discovery under the roots, whole-file reads.
#include "indexer_internal.hpp"

#include <primebeaker/core/env.hpp>
#include <primebeaker/core/text.hpp>

#include <algorithm>
#include <fstream>
#include <regex>
#include <sstream>
#include <unordered_set>

namespace pb::watcher::detail {
namespace {

std::string expand_user(const std::string &value) {
  if (value == "~" || text::starts_with(value, "~/")) {
    if (const auto home = env::get("HOME")) {
      return *home + value.substr(1);
    }
  }
  return value;
}

} // namespace

std::string clean(const std::string &path) {
  std::string out;
  size_t start = 0;
  while (start <= path.size()) {
    const size_t end = std::min(path.find('/', start), path.size());
    const std::string_view part(path.data() + start, end - start);
    if (!part.empty() && part != ".") {
      out += '/';
      out += part;
    }
    start = end + 1;
  }
  return out.empty() ? "/" : out;
}

std::string file_name(const std::string &path) {
  const auto slash = path.rfind('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

std::string parent_of(const std::string &path) {
  const auto slash = path.rfind('/');
  return slash == 0 || slash == std::string::npos ? "/" : path.substr(0, slash);
}

std::vector<std::string> parts_of(const std::string &path) {
  std::vector<std::string> parts{"/"};
  for (auto &part : text::split(path, '/')) {
    if (!part.empty()) {
      parts.push_back(part);
    }
  }
  return parts;
}

bool is_dir(const std::string &path) {
  std::error_code ec;
  return stdfs::is_directory(path, ec);
}

bool is_file(const std::string &path) {
  std::error_code ec;
  return stdfs::is_regular_file(path, ec);
}

std::string resolve(const std::string &value, const stdfs::path &repo) {
  const std::string expanded = expand_user(value);
  if (!expanded.empty() && expanded.front() == '/') {
    return clean(expanded);
  }
  return clean(repo.string() + "/" + expanded);
}

std::optional<std::int64_t> checkpoint_step(const std::string &path) {
  static const std::regex step(R"((?:^|/)step[_-]?(\d+)$)");
  std::smatch match;
  if (!std::regex_search(path, match, step)) {
    return std::nullopt;
  }
  try {
    return std::stoll(match[1].str());
  } catch (const std::out_of_range &) {
    return std::nullopt;
  }
}

std::string checkpoint_output_dir(const std::string &checkpoint) {
  const std::string parent = parent_of(checkpoint);
  if (file_name(parent) == "weights" && checkpoint_step(checkpoint)) {
    return parent_of(parent);
  }
  // v0.9: <run_dir>/checkpoints/step_N/{trainer,orchestrator}; v0.8.0's orchestrator writes
  // under run_default/, never here.
  if (file_name(parent) == "checkpoints" && checkpoint_step(checkpoint) &&
      is_dir(checkpoint + "/orchestrator")) {
    return parent_of(parent);
  }
  return parent;
}

namespace {

void walk(const stdfs::path &dir,
          const std::vector<std::string> &suffixes,
          std::set<std::string> &visited_dirs,
          std::vector<std::string> &out) {
  std::error_code ec;
  const auto canonical = stdfs::canonical(dir, ec);
  if (ec || !visited_dirs.insert(canonical.string()).second) {
    return; // unreadable, or a directory symlink loop
  }
  for (const auto &entry : stdfs::directory_iterator(dir, ec)) {
    std::error_code type_ec;
    if (entry.is_directory(type_ec)) {
      walk(entry.path(), suffixes, visited_dirs, out);
    } else if (entry.is_regular_file(type_ec)) {
      const std::string name = entry.path().filename().string();
      for (const auto &suffix : suffixes) {
        if (name.size() >= suffix.size() &&
            name.compare(name.size() - suffix.size(), suffix.size(), suffix) == 0) {
          out.push_back(entry.path().string());
          break;
        }
      }
    }
  }
}

} // namespace

std::vector<std::string> find_files(const std::vector<stdfs::path> &roots,
                                    const std::vector<std::string> &suffixes) {
  std::vector<std::string> out;
  std::unordered_set<std::string> seen;
  for (const auto &root_path : roots) {
    const std::string root = resolve(root_path.string(), stdfs::current_path());
    std::vector<std::string> found;
    if (is_file(root)) {
      found.push_back(root);
    } else if (is_dir(root)) {
      std::set<std::string> visited;
      walk(root, suffixes, visited, found);
      std::sort(found.begin(), found.end());
    }
    for (auto &path : found) {
      path = clean(path);
      if (seen.insert(path).second) {
        out.push_back(path);
      }
    }
  }
  return out;
}

std::vector<std::string> subdirectory_names(const std::string &root) {
  std::vector<std::string> names;
  if (!is_dir(root)) {
    return names;
  }
  std::error_code ec;
  for (const auto &entry : stdfs::directory_iterator(root, ec)) {
    if (entry.is_directory(ec)) {
      names.push_back(entry.path().filename().string());
    }
  }
  std::sort(names.begin(), names.end());
  return names;
}

std::optional<std::string> try_read(const std::string &path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    return std::nullopt;
  }
  std::ostringstream buffer;
  buffer << in.rdbuf();
  if (in.bad()) {
    return std::nullopt;
  }
  return buffer.str();
}

} // namespace pb::watcher::detail
