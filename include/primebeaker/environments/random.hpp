// SPDX-License-Identifier: MIT
// An exact port of CPython's `random.Random` (Mersenne Twister MT19937) for the parts the
// environments use, so RubricHub rubric sampling picks the same criteria as Python PrimeBeaker
// (docs/environments.md "RubricHub sampling").
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace pb::environments::py {

class Random {
public:
  // random.Random(n) for a non-negative integer given as big-endian bytes (CPython uses |n|:
  // 32-bit words, least significant first, through init_by_array; 0 is the key [0]).
  static Random from_big_endian(std::string_view bytes);
  static Random from_int(std::uint64_t n);
  // random.Random(s) for a str (version 2): n = int.from_bytes(s + sha512(s)), big-endian.
  static Random from_string(std::string_view utf8);

  std::uint32_t genrand_uint32();
  double random();                                          // random.random()
  std::vector<std::uint32_t> getrandbits_words(unsigned k); // little-endian 32-bit words
  std::uint64_t getrandbits(unsigned k);                    // k <= 64
  std::uint64_t randbelow(std::uint64_t n);                 // _randbelow_with_getrandbits, n >= 1
  std::int64_t randrange(std::int64_t start, std::int64_t stop); // step 1
  template <typename T> const T &choice(const std::vector<T> &items) {
    return items[randbelow(items.size())];
  }
  template <typename T> void shuffle(std::vector<T> &items) {
    for (size_t i = items.size(); i-- > 1;) {
      const size_t j = randbelow(i + 1);
      std::swap(items[i], items[j]);
    }
  }
  // random.sample(range(n), k): the pool algorithm for small n, the set algorithm otherwise.
  std::vector<std::uint64_t> sample(std::uint64_t n, std::uint64_t k);

private:
  void init_genrand(std::uint32_t seed);
  void init_by_array(const std::vector<std::uint32_t> &key);
  std::array<std::uint32_t, 624> m_state{};
  int m_index = 625;
};

// RubricHub selection: all indexes when n <= k; otherwise sorted sample(range(n), k) seeded with
// int(sha256("<seed>\\0<record_id>")) (a literal backslash and zero, as Python PrimeBeaker writes).
std::vector<std::uint64_t>
rubrichub_select(std::int64_t seed, std::string_view record_id, std::uint64_t n, std::uint64_t k);

// Shadow-judge sampling: the first 8 bytes of sha256("<seed>:<policy>:<trajectory>:<record>")
// as a big-endian integer over 2^64, below `rate`.
bool shadow_sampled(std::int64_t seed,
                    std::string_view policy_version,
                    std::string_view trajectory_id,
                    std::string_view record_id,
                    double rate);

} // namespace pb::environments::py
