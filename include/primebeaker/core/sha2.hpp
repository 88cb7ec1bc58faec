// SPDX-License-Identifier: MIT
// SHA-2 digests, as Python's hashlib computes them.
#pragma once

#include <memory>
#include <string>
#include <string_view>

namespace pb::sha2 {

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
