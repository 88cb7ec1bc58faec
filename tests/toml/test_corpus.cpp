// SPDX-License-Identifier: MIT
// Real-world files: every TOML under ../shared/corpus/prime-rl and primebeaker-examples parses,
// prints back byte for byte, and means what toml++ says it means.
#include "test_support.hpp"

#include <primebeaker/toml/reference.hpp>
#include <primebeaker/toml/value.hpp>

#include <gtest/gtest.h>

namespace {

std::vector<std::filesystem::path> corpus_files() {
  std::vector<std::filesystem::path> out;
  for (const char *folder : {"prime-rl", "primebeaker-examples"}) {
    for (const auto &entry : std::filesystem::recursive_directory_iterator(pb::test::shared_dir() /
                                                                           "corpus" / folder)) {
      if (entry.path().extension() == ".toml") {
        out.push_back(entry.path());
      }
    }
  }
  std::sort(out.begin(), out.end());
  return out;
}

TEST(Corpus, RealWorldFilesRoundTrip) {
  const auto files = corpus_files();
  ASSERT_GE(files.size(), 20U);
  for (const auto &path : files) {
    SCOPED_TRACE(path.string());
    const std::string text = pb::test::read_file(path);
    const auto doc = pb::toml::Document::parse(text, path.string());
    EXPECT_EQ(doc.print(), text);
    EXPECT_TRUE(semantically_equal(doc.root(), pb::toml::reference_parse(text, path.string())));
  }
}

} // namespace
