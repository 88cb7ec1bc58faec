// SPDX-License-Identifier: MIT
// A training TOML's datasets and the data manifests they were materialised from (exact path,
// same family of file names, shared 16-hex-digit UIDs).
#include "indexer_internal.hpp"

#include <primebeaker/core/error.hpp>
#include <primebeaker/core/text.hpp>

#include <algorithm>
#include <cctype>

namespace pb::watcher::detail {
namespace {

using nlohmann::json;

void values_for_key(const json &value, const std::string &key, std::vector<const json *> &out) {
  if (value.is_object()) {
    for (const auto &[child_key, child] : value.items()) {
      if (child_key == key) {
        out.push_back(&child);
      }
      values_for_key(child, key, out);
    }
  } else if (value.is_array()) {
    for (const auto &child : value) {
      values_for_key(child, key, out);
    }
  }
}

std::vector<std::string>
dataset_paths(const std::string &stage, const json &config, const stdfs::path &repo) {
  std::vector<std::pair<std::string, std::string>> found;
  if (stage == "sft") {
    if (const json *name = find(config, {"data", "name"}); name && name->is_string()) {
      found.emplace_back("train", resolve(name->get<std::string>(), repo));
    }
    if (const json *name = find(config, {"val", "data", "name"}); name && name->is_string()) {
      found.emplace_back("validation", resolve(name->get<std::string>(), repo));
    }
  } else if (const json *orchestrator = find(config, {"orchestrator"});
             orchestrator && orchestrator->is_object()) {
    // TOML tables come back with sorted keys; document order only matters for which
    // configured path a deduplicated binding keeps, and both spellings resolve the same mix.
    for (const char *role : {"train", "eval"}) {
      if (const json *subtree = find(*orchestrator, {role})) {
        std::vector<const json *> values;
        values_for_key(*subtree, "dataset", values);
        for (const json *value : values) {
          if (value->is_string()) {
            found.emplace_back(role, resolve(value->get<std::string>(), repo));
          }
        }
      }
    }
  }
  std::vector<std::string> paths;
  std::set<std::pair<std::string, std::string>> seen;
  for (const auto &item : found) {
    if (seen.insert(item).second) {
      paths.push_back(item.second);
    }
  }
  return paths;
}

std::string dataset_stem(std::string name) {
  for (const std::string suffix :
       {".jsonl", ".parquet", "_train", "_validation", "_messages", "_prompt_split", "_harmony"}) {
    if (name.size() >= suffix.size() &&
        name.compare(name.size() - suffix.size(), suffix.size(), suffix) == 0) {
      name.resize(name.size() - suffix.size());
    }
  }
  return name;
}

bool same_family(const std::string &left, const std::string &right) {
  const std::string a = dataset_stem(file_name(left));
  const std::string b = dataset_stem(file_name(right));
  return !a.empty() && !b.empty() && (a == b || text::starts_with(a, b) || text::starts_with(b, a));
}

std::string mix_signature(const Manifest &manifest) {
  json sources = json::array();
  for (const auto &source : manifest.raw["sources"]) {
    if (!source.is_object()) {
      continue;
    }
    json item = json::object();
    for (const char *key :
         {"name", "parquet", "path", "weight", "train_quota", "validation_quota"}) {
      item[key] = source.contains(key) ? source[key] : json();
    }
    sources.push_back(item);
  }
  return compact_sorted_json(sources);
}

size_t shared_prefix_depth(const std::string &left, const std::string &right) {
  const auto a = parts_of(left);
  const auto b = parts_of(right);
  size_t depth = 0;
  while (depth < a.size() && depth < b.size() && a[depth] == b[depth]) {
    ++depth;
  }
  return depth;
}

const Manifest *match_manifest(const std::string &dataset, const std::vector<Manifest> &manifests) {
  const auto dataset_uids = find_uids(dataset);
  std::vector<std::pair<int, const Manifest *>> scored;
  for (const auto &manifest : manifests) {
    int score = 0;
    const auto &paths = manifest.matched_paths;
    if (std::find(paths.begin(), paths.end(), dataset) != paths.end()) {
      score = 100;
    } else if (std::any_of(paths.begin(), paths.end(), [&](const std::string &path) {
                 return same_family(dataset, path);
               })) {
      score = 20;
    }
    if (std::any_of(dataset_uids.begin(), dataset_uids.end(), [&](const std::string &uid) {
          return manifest.uids.count(uid) > 0;
        })) {
      score += 40;
    }
    if (score > 0) {
      scored.emplace_back(score, &manifest);
    }
  }
  if (scored.empty()) {
    return nullptr;
  }
  int best = 0;
  for (const auto &[score, manifest] : scored) {
    best = std::max(best, score);
  }
  std::vector<const Manifest *> matches;
  for (const auto &[score, manifest] : scored) {
    if (score == best) {
      matches.push_back(manifest);
    }
  }
  if (matches.size() == 1) {
    return matches.front();
  }
  std::set<std::string> signatures;
  for (const auto *manifest : matches) {
    signatures.insert(mix_signature(*manifest));
  }
  if (signatures.size() == 1) {
    // Identical mixes materialised twice: the copy nearest the dataset is the one it came from.
    return *std::max_element(
        matches.begin(), matches.end(), [&](const Manifest *a, const Manifest *b) {
          const auto da = shared_prefix_depth(dataset, a->path);
          const auto db = shared_prefix_depth(dataset, b->path);
          return da != db ? da < db : a->path < b->path;
        });
  }
  std::string listed;
  for (const auto *manifest : matches) {
    listed += (listed.empty() ? "" : ", ") + manifest->path;
  }
  throw input_error("multiple data manifests match " + dataset + ": " + listed +
                    "; pass only the intended --manifest");
}

} // namespace

// ---- 16-hex-digit UIDs: maximal runs of exactly 16 hex digits ----

std::set<std::string> find_uids(const std::string &text) {
  std::set<std::string> uids;
  size_t i = 0;
  while (i < text.size()) {
    if (!std::isxdigit(static_cast<unsigned char>(text[i]))) {
      ++i;
      continue;
    }
    size_t end = i;
    while (end < text.size() && std::isxdigit(static_cast<unsigned char>(text[end]))) {
      ++end;
    }
    if (end - i == 16) {
      uids.insert(text.substr(i, 16));
    }
    i = end;
  }
  return uids;
}

std::vector<Binding> dataset_bindings(Catalog &catalog, const Artifact &artifact) {
  std::vector<Binding> bindings;
  if (artifact.config == nullptr) {
    return bindings;
  }
  std::set<std::string> seen;
  for (const auto &configured :
       dataset_paths(artifact.stage, artifact.config->config, catalog.repo())) {
    const Manifest *manifest = match_manifest(configured, catalog.manifests());
    const std::string identity = manifest ? "manifest:" + manifest->path : "path:" + configured;
    if (seen.insert(identity).second) {
      bindings.push_back({configured, manifest});
    }
  }
  return bindings;
}

} // namespace pb::watcher::detail
