// SPDX-License-Identifier: MIT
// Random identifiers (launch ids, rendezvous attempts and nonces, W&B run ids).
#pragma once

#include <cstddef>
#include <string>

namespace pb::random {

// 2 x `bytes` lowercase hex characters from the system's random device.
std::string hex_id(std::size_t bytes = 16);

} // namespace pb::random
