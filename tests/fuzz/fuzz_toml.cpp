// SPDX-License-Identifier: MIT
// libFuzzer target for the lossless parser: for any input it accepts, printing the tree gives
// the input back byte for byte, the tokens tile it, and toml++ agrees that it is valid and means
// the same. Inputs it rejects must be rejected with pb::Error exit 3 (and by toml++ too).
#include <primebeaker/core/error.hpp>
#include <primebeaker/toml/reference.hpp>
#include <primebeaker/toml/syntax.hpp>
#include <primebeaker/toml/value.hpp>

#include <cstdint>
#include <cstdlib>
#include <string>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t *data, std::size_t size) {
  const std::string text(reinterpret_cast<const char *>(data), size);
  bool ours = false;
  pb::toml::Value ours_root;
  try {
    const auto doc = pb::toml::Document::parse(text, "fuzz");
    if (doc.print() != text) {
      std::abort(); // parse -> print must be the identity
    }
    const auto &tree = doc.syntax();
    std::uint32_t at = 0;
    for (std::size_t i = 0; i < tree.token_count(); ++i) {
      const auto token = tree.token(i);
      if (token.begin != at || token.end <= token.begin) {
        std::abort();
      }
      at = token.end;
    }
    if (at != text.size()) {
      std::abort();
    }
    ours = true;
    ours_root = doc.root();
  } catch (const pb::Error &e) {
    if (e.code() != 3) {
      std::abort();
    }
  }
  bool theirs = false;
  pb::toml::Value theirs_root;
  try {
    theirs_root = pb::toml::reference_parse(text, "fuzz");
    theirs = true;
  } catch (const pb::Error &) {
  }
  if (ours && theirs && !semantically_equal(ours_root, theirs_root)) {
    std::abort(); // both accept: same meaning
  }
  if (ours != theirs && std::getenv("PB_FUZZ_STRICT") != nullptr) {
    std::abort(); // disagreement on validity (opt-in: toml++ has known leniencies)
  }
  return 0;
}
