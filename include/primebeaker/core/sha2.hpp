// SPDX-License-Identifier: MIT
// SHA-2 digests, as Python's hashlib computes them. An input of k_libcrypto_threshold bytes or
// more is hashed by the system's libcrypto.so.3 (EVP, about 7x faster than our code), loaded on
// first use like libcurl (core/dynamic_library.hpp); smaller inputs, and every input when
// libcrypto is absent, unusable or switched off, by our own code. Both give the same digest
// (docs/staging.md "Cost": staging hashes the whole stage at every submit).
#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <string_view>

namespace pb::sha2 {

// Below this many bytes, libcrypto's load and per-digest set-up cost more than they save.
inline constexpr std::size_t k_libcrypto_threshold = 64 * 1024;

enum class Implementation { builtin, libcrypto };

// What an input of k_libcrypto_threshold bytes or more is hashed with now: libcrypto when it
// loads (this call loads it) and works and builtin is not forced, else builtin.
Implementation large_input_implementation();

// Forces our own code for every input (true), or lets large inputs use libcrypto (false). The
// default is false unless PRIMEBEAKER_SHA2=builtin is set. Process-wide: tests and benchmarks.
void force_builtin(bool builtin);

std::string sha256(std::string_view data); // the raw 32-byte digest
std::string sha512(std::string_view data); // the raw 64-byte digest
std::string hex(std::string_view bytes);   // lowercase, two digits per byte
std::string sha256_hex(std::string_view data);

// SHA-256 fed in pieces (the same digest as sha256() of their concatenation), for data that is
// produced piece by piece and never held whole.
class Sha256 {
public:
  Sha256();
  ~Sha256();
  Sha256(const Sha256 &) = delete;
  Sha256 &operator=(const Sha256 &) = delete;
  void update(std::string_view data);
  // The raw 32-byte digest; the hasher starts over afterwards.
  std::string finish();

private:
  struct State;
  std::unique_ptr<State> m_state;
};

} // namespace pb::sha2
