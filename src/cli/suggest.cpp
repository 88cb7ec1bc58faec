// SPDX-License-Identifier: MIT
// "did you mean": the closest command name by edit distance.
#include <primebeaker/cli/dispatch.hpp>

#include <algorithm>

namespace pb::cli {

namespace {

// Optimal string alignment distance: insertions, deletions, substitutions and transpositions of
// neighbours ("sumbit" is one edit from "submit").
std::size_t edit_distance(std::string_view a, std::string_view b) {
  const std::size_t n = a.size();
  const std::size_t m = b.size();
  std::vector<std::size_t> d((n + 1) * (m + 1));
  auto at = [m, &d](std::size_t i, std::size_t j) -> std::size_t & { return d[i * (m + 1) + j]; };
  for (std::size_t i = 0; i <= n; ++i) {
    at(i, 0) = i;
  }
  for (std::size_t j = 0; j <= m; ++j) {
    at(0, j) = j;
  }
  for (std::size_t i = 1; i <= n; ++i) {
    for (std::size_t j = 1; j <= m; ++j) {
      const std::size_t cost = a[i - 1] == b[j - 1] ? 0 : 1;
      at(i, j) = std::min({at(i - 1, j) + 1, at(i, j - 1) + 1, at(i - 1, j - 1) + cost});
      if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1]) {
        at(i, j) = std::min(at(i, j), at(i - 2, j - 2) + 1);
      }
    }
  }
  return at(n, m);
}

} // namespace

std::optional<std::string> closest_name(std::string_view typed,
                                        const std::vector<std::string> &candidates) {
  // Up to one edit in three characters, at least one, at most three.
  const std::size_t allowed = std::clamp<std::size_t>(typed.size() / 3, 1, 3);
  std::optional<std::string> best;
  std::size_t best_distance = allowed + 1;
  for (const auto &candidate : candidates) {
    std::size_t distance = edit_distance(typed, candidate);
    if (typed.size() >= 2 && candidate.starts_with(typed)) {
      distance = std::min<std::size_t>(distance, 1);
    }
    if (distance < best_distance) {
      best_distance = distance;
      best = candidate;
    }
  }
  return best;
}

} // namespace pb::cli
