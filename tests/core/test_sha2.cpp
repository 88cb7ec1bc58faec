// SPDX-License-Identifier: MIT
// SHA-2 against the FIPS 180-4 examples, and fed in pieces that straddle block boundaries the
// way staging's 1 MiB reads and the fingerprint's small updates do; libcrypto's path and our own
// code on the same inputs, on both sides of the size that picks between them.
#include <primebeaker/core/sha2.hpp>

#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

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

// Forces our own code while alive.
class BuiltinOnly {
public:
  BuiltinOnly() { sha2::force_builtin(true); }
  ~BuiltinOnly() { sha2::force_builtin(false); }
  BuiltinOnly(const BuiltinOnly &) = delete;
  BuiltinOnly &operator=(const BuiltinOnly &) = delete;
};

struct Digests {
  std::vector<std::string> all;
  bool operator==(const Digests &) const = default;
};

// Every way of hashing `message`: one-shot SHA-256 and SHA-512, and SHA-256 fed in pieces of
// several sizes (staging's 1 MiB reads among them).
Digests digests_of(const std::string &message) {
  Digests out;
  out.all.push_back(sha2::hex(sha2::sha256(message)));
  out.all.push_back(sha2::hex(sha2::sha512(message)));
  for (size_t piece : {size_t{1} << 20, size_t{65535}, size_t{4096}, size_t{1000}}) {
    sha2::Sha256 hasher;
    for (size_t at = 0; at < message.size(); at += piece) {
      hasher.update(std::string_view(message).substr(at, piece));
    }
    out.all.push_back(sha2::hex(hasher.finish()));
  }
  return out;
}

TEST(Sha2, LibcryptoAndOurCodeGiveTheSameDigests) {
  // libcrypto.so.3 is on every machine that has libcurl4 (through libssl3), which primebeaker
  // loads for its HTTP clients: this test runs both paths, never one alone.
  ASSERT_EQ(sha2::large_input_implementation(), sha2::Implementation::libcrypto);
  {
    BuiltinOnly builtin;
    EXPECT_EQ(sha2::large_input_implementation(), sha2::Implementation::builtin);
  }
  std::string random;
  std::uint32_t state = 12345;
  for (size_t i = 0; i < (size_t{3} << 20) + 17; ++i) {
    state = state * 1103515245u + 12345u;
    random.push_back(static_cast<char>(state >> 24));
  }
  const size_t threshold = sha2::k_libcrypto_threshold;
  for (size_t size : {size_t{0},
                      size_t{1},
                      size_t{55},
                      size_t{56},
                      size_t{64},
                      threshold - 1,
                      threshold,
                      threshold + 1,
                      size_t{200001},
                      random.size()}) {
    const std::string message = random.substr(0, size);
    const Digests fast = digests_of(message);
    BuiltinOnly builtin;
    EXPECT_EQ(fast, digests_of(message)) << size << " bytes";
  }
  // FIPS 180-4's long example (a million 'a'), through both.
  const std::string million(1000000, 'a');
  for (const bool forced : {false, true}) {
    sha2::force_builtin(forced);
    const Digests both = digests_of(million);
    EXPECT_EQ(both.all[0], "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
    EXPECT_EQ(both.all[1],
              "e718483d0ce769644e2e42c7bc15b4638e1f98b13b2044285632a803afa973eb"
              "de0ff244877ea60a4cb0432ce577c31beb009c5c2c49aa2e4eadb217ad8cc09b");
    for (size_t i = 2; i < both.all.size(); ++i) {
      EXPECT_EQ(both.all[i], both.all[0]) << "pieces, way " << i << (forced ? ", builtin" : "");
    }
  }
  sha2::force_builtin(false);
}

} // namespace
} // namespace pb
