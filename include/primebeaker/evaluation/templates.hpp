// SPDX-License-Identifier: MIT
// Prompt templates of evaluation YAMLs (docs/evaluation.md "Templates and snapshots"): where a
// relative path is looked for, the JSON check, and the content-addressed snapshot under the run
// directory that the worker reads instead of the original.
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace pb::evaluation {

// The directories a relative template path is tried in, in order: the YAML's directory, `cwd`,
// every ancestor of the YAML's directory (nearest first), then `extra` (--template-dir entries,
// then PRIMEBEAKER_TEMPLATE_PATH entries). Duplicates are kept once, at their first place. Pure.
std::vector<std::filesystem::path>
template_search_dirs(const std::filesystem::path &yaml_dir,
                     const std::filesystem::path &cwd,
                     const std::vector<std::filesystem::path> &extra);

// The first existing regular file for `requested` (used as is when absolute).
std::optional<std::filesystem::path> find_template(const std::string &requested,
                                                   const std::vector<std::filesystem::path> &dirs);

// Checks that `content` (read from `path`) is one JSON object. Throws pb::Error (exit 3)
// "invalid JSON template <path>: ..." or "template must contain a JSON object: <path>".
void check_template(const std::string &path, std::string_view content);

// <root>/.jtceval-inputs/templates/<sha256 of content>.json. Pure.
std::string snapshot_path(const std::string &root, std::string_view content);

// Writes a snapshot: parent directories created, then an atomic write (temporary sibling,
// fsync, rename). An existing target with the same bytes is kept; with other bytes it throws
// pb::Error (exit 1) "template snapshot digest collision: <target>".
void write_snapshot(const std::string &target, std::string_view content);

// "a:b::c" -> {a, b, c} (PRIMEBEAKER_TEMPLATE_PATH).
std::vector<std::filesystem::path> split_search_path(std::string_view text);

} // namespace pb::evaluation
