// SPDX-License-Identifier: MIT
// SHA-2 digests, as Python's hashlib computes them.
#pragma once

#include <string>
#include <string_view>

namespace pb::sha2 {

std::string sha256(std::string_view data); // the raw 32-byte digest
std::string sha512(std::string_view data); // the raw 64-byte digest
std::string hex(std::string_view bytes);   // lowercase, two digits per byte
std::string sha256_hex(std::string_view data);

} // namespace pb::sha2
