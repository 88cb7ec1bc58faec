// SPDX-License-Identifier: MIT
// SHA-2 against the FIPS 180-4 examples, and fed in pieces that straddle block boundaries the
// way staging's 1 MiB reads and the fingerprint's small updates do.
#include <primebeaker/core/sha2.hpp>

#include <gtest/gtest.h>

#include <string>

namespace pb {
namespace {

TEST(Sha2, MatchesTheStandardExamples) {
  EXPECT_EQ(sha2::sha256_hex("abc"),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  EXPECT_EQ(sha2::sha256_hex(""),
            "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  EXPECT_EQ(sha2::sha256_hex("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq"),
            "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
  EXPECT_EQ(sha2::hex(sha2::sha512("abc")).substr(0, 32), "ddaf35a193617abacc417349ae204131");
}

TEST(Sha2, PiecesOfEverySizeGiveTheWholeDigest) {
  std::string message;
  for (int i = 0; i < 1000; ++i) {
    message.push_back(static_cast<char>('a' + i * 7 % 26));
  }
  const std::string whole = sha2::sha256_hex(message);
  for (size_t piece : {1, 3, 63, 64, 65, 127, 128, 200, 999}) {
    sha2::Sha256 hasher;
    for (size_t at = 0; at < message.size(); at += piece) {
      hasher.update(std::string_view(message).substr(at, piece));
    }
    EXPECT_EQ(sha2::hex(hasher.finish()), whole) << "pieces of " << piece;
  }
}

} // namespace
} // namespace pb
