// SPDX-License-Identifier: MIT
// CPython's Modules/_randommodule.c and Lib/random.py, ported (docs/environments.md).
#include <primebeaker/core/libm.hpp>
#include <primebeaker/environments/python.hpp>
#include <primebeaker/environments/random.hpp>

#include <algorithm>
#include <cmath>
#include <set>

namespace pb::environments::py {

void Random::init_genrand(std::uint32_t seed) {
  m_state[0] = seed;
  for (int i = 1; i < 624; ++i) {
    m_state[i] =
        1812433253U * (m_state[i - 1] ^ (m_state[i - 1] >> 30)) + static_cast<std::uint32_t>(i);
  }
  m_index = 624;
}

void Random::init_by_array(const std::vector<std::uint32_t> &key) {
  init_genrand(19650218U);
  size_t i = 1;
  size_t j = 0;
  const size_t n = 624;
  const size_t length = key.size();
  for (size_t k = std::max(n, length); k > 0; --k) {
    m_state[i] = (m_state[i] ^ ((m_state[i - 1] ^ (m_state[i - 1] >> 30)) * 1664525U)) + key[j] +
                 static_cast<std::uint32_t>(j);
    ++i;
    ++j;
    if (i >= n) {
      m_state[0] = m_state[n - 1];
      i = 1;
    }
    if (j >= length) {
      j = 0;
    }
  }
  for (size_t k = n - 1; k > 0; --k) {
    m_state[i] = (m_state[i] ^ ((m_state[i - 1] ^ (m_state[i - 1] >> 30)) * 1566083941U)) -
                 static_cast<std::uint32_t>(i);
    ++i;
    if (i >= n) {
      m_state[0] = m_state[n - 1];
      i = 1;
    }
  }
  m_state[0] = 0x80000000U;
  m_index = 624;
}

Random Random::from_big_endian(std::string_view bytes) {
  std::vector<std::uint32_t> key;
  // Least significant 32-bit word first.
  for (size_t end = bytes.size(); end > 0;) {
    const size_t start = end >= 4 ? end - 4 : 0;
    std::uint32_t word = 0;
    for (size_t k = start; k < end; ++k) {
      word = (word << 8) | static_cast<unsigned char>(bytes[k]);
    }
    key.push_back(word);
    end = start;
  }
  while (key.size() > 1 && key.back() == 0) {
    key.pop_back();
  }
  if (key.empty()) {
    key.push_back(0);
  }
  Random r;
  r.init_by_array(key);
  return r;
}

Random Random::from_int(std::uint64_t n) {
  std::string bytes;
  for (int b = 7; b >= 0; --b) {
    bytes.push_back(static_cast<char>((n >> (8 * b)) & 0xFF));
  }
  return from_big_endian(bytes);
}

Random Random::from_string(std::string_view utf8) {
  std::string bytes(utf8);
  bytes += sha512(utf8);
  return from_big_endian(bytes);
}

std::uint32_t Random::genrand_uint32() {
  static constexpr std::uint32_t mag01[2] = {0x0U, 0x9908b0dfU};
  constexpr int n = 624;
  constexpr int m = 397;
  if (m_index >= n) {
    int kk = 0;
    for (; kk < n - m; ++kk) {
      const std::uint32_t y = (m_state[kk] & 0x80000000U) | (m_state[kk + 1] & 0x7fffffffU);
      m_state[kk] = m_state[kk + m] ^ (y >> 1) ^ mag01[y & 1U];
    }
    for (; kk < n - 1; ++kk) {
      const std::uint32_t y = (m_state[kk] & 0x80000000U) | (m_state[kk + 1] & 0x7fffffffU);
      m_state[kk] = m_state[kk + (m - n)] ^ (y >> 1) ^ mag01[y & 1U];
    }
    const std::uint32_t y = (m_state[n - 1] & 0x80000000U) | (m_state[0] & 0x7fffffffU);
    m_state[n - 1] = m_state[m - 1] ^ (y >> 1) ^ mag01[y & 1U];
    m_index = 0;
  }
  std::uint32_t y = m_state[m_index++];
  y ^= (y >> 11);
  y ^= (y << 7) & 0x9d2c5680U;
  y ^= (y << 15) & 0xefc60000U;
  y ^= (y >> 18);
  return y;
}

double Random::random() {
  const std::uint32_t a = genrand_uint32() >> 5;
  const std::uint32_t b = genrand_uint32() >> 6;
  return (a * 67108864.0 + b) * (1.0 / 9007199254740992.0);
}

std::vector<std::uint32_t> Random::getrandbits_words(unsigned k) {
  std::vector<std::uint32_t> words;
  if (k == 0) {
    return words;
  }
  if (k <= 32) {
    words.push_back(genrand_uint32() >> (32 - k));
    return words;
  }
  for (unsigned left = k; left > 0;) {
    std::uint32_t r = genrand_uint32();
    if (left < 32) {
      r >>= (32 - left);
    }
    words.push_back(r);
    left = left >= 32 ? left - 32 : 0;
  }
  return words;
}

std::uint64_t Random::getrandbits(unsigned k) {
  const auto words = getrandbits_words(k);
  std::uint64_t v = 0;
  for (size_t w = words.size(); w-- > 0;) {
    v = (v << 32) | words[w];
  }
  return v;
}

std::uint64_t Random::randbelow(std::uint64_t n) {
  unsigned k = 0;
  for (std::uint64_t x = n; x != 0; x >>= 1) {
    ++k;
  }
  std::uint64_t r = getrandbits(k);
  while (r >= n) {
    r = getrandbits(k);
  }
  return r;
}

std::int64_t Random::randrange(std::int64_t start, std::int64_t stop) {
  return start + static_cast<std::int64_t>(randbelow(static_cast<std::uint64_t>(stop - start)));
}

std::vector<std::uint64_t> Random::sample(std::uint64_t n, std::uint64_t k) {
  std::vector<std::uint64_t> result;
  if (k > n) {
    return result;
  }
  std::uint64_t setsize = 21;
  if (k > 5) {
    setsize += static_cast<std::uint64_t>(
        libm::pow(4.0, std::ceil(libm::log(static_cast<double>(k * 3)) / libm::log(4.0))));
  }
  if (n <= setsize) {
    std::vector<std::uint64_t> pool(n);
    for (std::uint64_t i = 0; i < n; ++i) {
      pool[i] = i;
    }
    for (std::uint64_t i = 0; i < k; ++i) {
      const std::uint64_t j = randbelow(n - i);
      result.push_back(pool[j]);
      pool[j] = pool[n - i - 1];
    }
    return result;
  }
  std::set<std::uint64_t> selected;
  for (std::uint64_t i = 0; i < k; ++i) {
    std::uint64_t j = randbelow(n);
    while (selected.count(j) != 0) {
      j = randbelow(n);
    }
    selected.insert(j);
    result.push_back(j);
  }
  return result;
}

std::vector<std::uint64_t>
rubrichub_select(std::int64_t seed, std::string_view record_id, std::uint64_t n, std::uint64_t k) {
  std::vector<std::uint64_t> picked;
  if (n <= k) {
    for (std::uint64_t i = 0; i < n; ++i) {
      picked.push_back(i);
    }
    return picked;
  }
  const std::string key = std::to_string(seed) + "\\0" + std::string(record_id);
  Random rng = Random::from_big_endian(sha256(key));
  picked = rng.sample(n, k);
  std::sort(picked.begin(), picked.end());
  return picked;
}

bool shadow_sampled(std::int64_t seed,
                    std::string_view policy_version,
                    std::string_view trajectory_id,
                    std::string_view record_id,
                    double rate) {
  const std::string key = std::to_string(seed) + ":" + std::string(policy_version) + ":" +
                          std::string(trajectory_id) + ":" + std::string(record_id);
  const std::string digest = sha256(key);
  std::uint64_t v = 0;
  for (int b = 0; b < 8; ++b) {
    v = (v << 8) | static_cast<unsigned char>(digest[static_cast<size_t>(b)]);
  }
  return static_cast<double>(v) / 18446744073709551616.0 < rate;
}

} // namespace pb::environments::py
