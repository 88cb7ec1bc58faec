// SPDX-License-Identifier: MIT
#include <primebeaker/core/random.hpp>

#include <fmt/format.h>

#include <random>

namespace pb::random {

std::string hex_id(std::size_t bytes) {
  std::random_device device;
  std::string out;
  out.reserve(bytes * 2);
  for (std::size_t i = 0; i < bytes; ++i) {
    out += fmt::format("{:02x}", device() & 0xffU);
  }
  return out;
}

} // namespace pb::random
