// SPDX-License-Identifier: MIT
// SHA-256 and SHA-512 (FIPS 180-4): the registry's sidecar names, template snapshot names and
// the environments' CPython-compatible seeding need them on small inputs, staging on the whole
// stage (tens of MB at every submit). Our own code hashes small inputs and is the fallback; large
// ones go through the system's libcrypto when it is there (sha2.hpp).
#include <primebeaker/core/dynamic_library.hpp>
#include <primebeaker/core/env.hpp>
#include <primebeaker/core/error.hpp>
#include <primebeaker/core/sha2.hpp>

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <iterator>
#include <optional>

namespace pb::sha2 {

namespace {

// SHA-2 parameters: rounds, block size and the rotation amounts of the four sigma functions.
template <typename Word> struct Sha2;
template <> struct Sha2<std::uint32_t> {
  static constexpr int rounds = 64;
  static constexpr size_t block = 64;
  static constexpr int s0[3] = {7, 18, 3}, s1[3] = {17, 19, 10};
  static constexpr int S0[3] = {2, 13, 22}, S1[3] = {6, 11, 25};
};
template <> struct Sha2<std::uint64_t> {
  static constexpr int rounds = 80;
  static constexpr size_t block = 128;
  static constexpr int s0[3] = {1, 8, 7}, s1[3] = {19, 61, 6};
  static constexpr int S0[3] = {28, 34, 39}, S1[3] = {14, 18, 41};
};

// Folds one block of the padded message into the state `h`.
template <typename Word> void compress(Word (&h)[8], const unsigned char *block, const Word *k) {
  using P = Sha2<Word>;
  constexpr int bits = static_cast<int>(8 * sizeof(Word));
  auto rotr = [](Word x, int n) { return static_cast<Word>((x >> n) | (x << (bits - n))); };
  Word w[P::rounds];
  for (int t = 0; t < 16; ++t) {
    w[t] = 0;
    for (size_t b = 0; b < sizeof(Word); ++b) {
      w[t] = static_cast<Word>((w[t] << 8) | block[sizeof(Word) * t + b]);
    }
  }
  for (int t = 16; t < P::rounds; ++t) {
    const Word x = w[t - 15];
    const Word y = w[t - 2];
    const Word s0 = rotr(x, P::s0[0]) ^ rotr(x, P::s0[1]) ^ (x >> P::s0[2]);
    const Word s1 = rotr(y, P::s1[0]) ^ rotr(y, P::s1[1]) ^ (y >> P::s1[2]);
    w[t] = static_cast<Word>(w[t - 16] + s0 + w[t - 7] + s1);
  }
  // The eight working variables as named locals, rotated by assignment: a copy of an array per
  // round was a third of the time of hashing a stage (docs/staging.md).
  Word a = h[0], b = h[1], c = h[2], d = h[3], e = h[4], f = h[5], g = h[6], hh = h[7];
  for (int t = 0; t < P::rounds; ++t) {
    const Word t1 =
        static_cast<Word>(hh + (rotr(e, P::S1[0]) ^ rotr(e, P::S1[1]) ^ rotr(e, P::S1[2])) +
                          ((e & f) ^ (~e & g)) + k[t] + w[t]);
    const Word t2 = static_cast<Word>((rotr(a, P::S0[0]) ^ rotr(a, P::S0[1]) ^ rotr(a, P::S0[2])) +
                                      ((a & b) ^ (a & c) ^ (b & c)));
    hh = g;
    g = f;
    f = e;
    e = static_cast<Word>(d + t1);
    d = c;
    c = b;
    b = a;
    a = static_cast<Word>(t1 + t2);
  }
  const Word v[8] = {a, b, c, d, e, f, g, hh};
  for (int i = 0; i < 8; ++i) {
    h[i] = static_cast<Word>(h[i] + v[i]);
  }
}

// A SHA-2 computation fed in pieces: whole blocks are compressed as they fill, so the input is
// never held.
template <typename Word> class Hasher {
public:
  Hasher(const Word (&init)[8], const Word *k) : m_k(k) {
    std::copy(std::begin(init), std::end(init), m_h);
  }

  void update(std::string_view data) {
    m_length += data.size();
    const auto *next = reinterpret_cast<const unsigned char *>(data.data());
    size_t left = data.size();
    if (m_used > 0) {
      const size_t take = std::min(left, P::block - m_used);
      std::copy(next, next + take, m_block + m_used);
      m_used += take;
      next += take;
      left -= take;
      if (m_used < P::block) {
        return;
      }
      compress(m_h, m_block, m_k);
      m_used = 0;
    }
    // Whole blocks straight from the input, without copying them into m_block first.
    for (; left >= P::block; next += P::block, left -= P::block) {
      compress(m_h, next, m_k);
    }
    std::copy(next, next + left, m_block);
    m_used = left;
  }

  std::string finish() {
    // Padding: 0x80, zeros, then the message length in bits as a big-endian 2-word integer.
    const std::uint64_t bits = static_cast<std::uint64_t>(m_length) * 8;
    const size_t length_bytes = 2 * sizeof(Word);
    m_block[m_used++] = 0x80;
    if (m_used > P::block - length_bytes) {
      std::fill(m_block + m_used, m_block + P::block, 0);
      compress(m_h, m_block, m_k);
      m_used = 0;
    }
    std::fill(m_block + m_used, m_block + P::block, 0);
    for (size_t b = 0; b < 8; ++b) {
      m_block[P::block - 1 - b] = static_cast<unsigned char>(bits >> (8 * b));
    }
    compress(m_h, m_block, m_k);
    std::string out;
    for (Word word : m_h) {
      for (int b = static_cast<int>(sizeof(Word)) - 1; b >= 0; --b) {
        out.push_back(static_cast<char>((word >> (8 * b)) & 0xFF));
      }
    }
    return out;
  }

private:
  using P = Sha2<Word>;
  const Word *m_k;
  Word m_h[8];
  unsigned char m_block[P::block];
  size_t m_used = 0;
  std::uint64_t m_length = 0;
};

const std::uint32_t sha256_k[64] = {
    0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5,
    0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174,
    0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
    0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967,
    0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85,
    0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
    0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
    0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2};
const std::uint32_t sha256_init[8] = {
    0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a, 0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19};
const std::uint64_t sha512_k[80] = {
    0x428a2f98d728ae22ULL, 0x7137449123ef65cdULL, 0xb5c0fbcfec4d3b2fULL, 0xe9b5dba58189dbbcULL,
    0x3956c25bf348b538ULL, 0x59f111f1b605d019ULL, 0x923f82a4af194f9bULL, 0xab1c5ed5da6d8118ULL,
    0xd807aa98a3030242ULL, 0x12835b0145706fbeULL, 0x243185be4ee4b28cULL, 0x550c7dc3d5ffb4e2ULL,
    0x72be5d74f27b896fULL, 0x80deb1fe3b1696b1ULL, 0x9bdc06a725c71235ULL, 0xc19bf174cf692694ULL,
    0xe49b69c19ef14ad2ULL, 0xefbe4786384f25e3ULL, 0x0fc19dc68b8cd5b5ULL, 0x240ca1cc77ac9c65ULL,
    0x2de92c6f592b0275ULL, 0x4a7484aa6ea6e483ULL, 0x5cb0a9dcbd41fbd4ULL, 0x76f988da831153b5ULL,
    0x983e5152ee66dfabULL, 0xa831c66d2db43210ULL, 0xb00327c898fb213fULL, 0xbf597fc7beef0ee4ULL,
    0xc6e00bf33da88fc2ULL, 0xd5a79147930aa725ULL, 0x06ca6351e003826fULL, 0x142929670a0e6e70ULL,
    0x27b70a8546d22ffcULL, 0x2e1b21385c26c926ULL, 0x4d2c6dfc5ac42aedULL, 0x53380d139d95b3dfULL,
    0x650a73548baf63deULL, 0x766a0abb3c77b2a8ULL, 0x81c2c92e47edaee6ULL, 0x92722c851482353bULL,
    0xa2bfe8a14cf10364ULL, 0xa81a664bbc423001ULL, 0xc24b8b70d0f89791ULL, 0xc76c51a30654be30ULL,
    0xd192e819d6ef5218ULL, 0xd69906245565a910ULL, 0xf40e35855771202aULL, 0x106aa07032bbd1b8ULL,
    0x19a4c116b8d2d0c8ULL, 0x1e376c085141ab53ULL, 0x2748774cdf8eeb99ULL, 0x34b0bcb5e19b48a8ULL,
    0x391c0cb3c5c95a63ULL, 0x4ed8aa4ae3418acbULL, 0x5b9cca4f7763e373ULL, 0x682e6ff3d6b2b8a3ULL,
    0x748f82ee5defb2fcULL, 0x78a5636f43172f60ULL, 0x84c87814a1f0ab72ULL, 0x8cc702081a6439ecULL,
    0x90befffa23631e28ULL, 0xa4506cebde82bde9ULL, 0xbef9a3f7b2c67915ULL, 0xc67178f2e372532bULL,
    0xca273eceea26619cULL, 0xd186b8c721c0c207ULL, 0xeada7dd6cde0eb1eULL, 0xf57d4f7fee6ed178ULL,
    0x06f067aa72176fbaULL, 0x0a637dc5a2c898a6ULL, 0x113f9804bef90daeULL, 0x1b710b35131c471bULL,
    0x28db77f523047d84ULL, 0x32caab7b40c72493ULL, 0x3c9ebe0a15c9bebcULL, 0x431d67c49c100d4cULL,
    0x4cc5d4becb3e42b6ULL, 0x597f299cfc657e2aULL, 0x5fcb6fab3ad6faecULL, 0x6c44198c4a475817ULL};
const std::uint64_t sha512_init[8] = {0x6a09e667f3bcc908ULL,
                                      0xbb67ae8584caa73bULL,
                                      0x3c6ef372fe94f82bULL,
                                      0xa54ff53a5f1d36f1ULL,
                                      0x510e527fade682d1ULL,
                                      0x9b05688c2b3e6c1fULL,
                                      0x1f83d9abfb41bd6bULL,
                                      0x5be0cd19137e2179ULL};

// ---- libcrypto.so.3 (OpenSSL 3), through its EVP digest API, declared here so that building
// needs no OpenSSL headers.
struct EvpMdCtx;
struct EvpMd;

struct LibCrypto {
  EvpMdCtx *(*md_ctx_new)() = nullptr;
  void (*md_ctx_free)(EvpMdCtx *) = nullptr;
  int (*digest_init_ex)(EvpMdCtx *, const EvpMd *, void *engine) = nullptr;
  int (*digest_update)(EvpMdCtx *, const void *, size_t) = nullptr;
  int (*digest_final_ex)(EvpMdCtx *, unsigned char *, unsigned int *) = nullptr;
  const EvpMd *(*sha256)() = nullptr;
  const EvpMd *(*sha512)() = nullptr;
};

template <typename Word> const EvpMd *evp_md(const LibCrypto &api) {
  return sizeof(Word) == 4 ? api.sha256() : api.sha512();
}

// One EVP digest in progress. ok() is false when libcrypto could not start it (no provider for
// the algorithm under the machine's openssl.cnf, say): the caller then uses our code.
class EvpDigest {
public:
  EvpDigest(const LibCrypto &api, const EvpMd *md) : m_api(api), m_ctx(api.md_ctx_new()) {
    m_ok = m_ctx != nullptr && md != nullptr && api.digest_init_ex(m_ctx, md, nullptr) == 1;
  }
  ~EvpDigest() {
    if (m_ctx != nullptr) {
      m_api.md_ctx_free(m_ctx);
    }
  }
  EvpDigest(const EvpDigest &) = delete;
  EvpDigest &operator=(const EvpDigest &) = delete;
  bool ok() const { return m_ok; }

  void update(std::string_view data) {
    if (m_api.digest_update(m_ctx, data.data(), data.size()) != 1) {
      throw failure("libcrypto failed to hash data (SHA-2)");
    }
  }

  std::string finish() {
    unsigned char digest[64];
    unsigned int size = 0;
    if (m_api.digest_final_ex(m_ctx, digest, &size) != 1 || size > sizeof digest) {
      throw failure("libcrypto failed to finish a SHA-2 digest");
    }
    return std::string(reinterpret_cast<const char *>(digest), size);
  }

private:
  const LibCrypto &m_api;
  EvpMdCtx *m_ctx;
  bool m_ok = false;
};

// -1: not yet read from PRIMEBEAKER_SHA2; 0: libcrypto allowed; 1: builtin forced.
std::atomic<int> g_force_builtin{-1};

bool builtin_forced() {
  int forced = g_force_builtin.load(std::memory_order_relaxed);
  if (forced < 0) {
    forced = env::get("PRIMEBEAKER_SHA2").value_or("") == "builtin" ? 1 : 0;
    int unset = -1;
    g_force_builtin.compare_exchange_strong(unset, forced);
    forced = g_force_builtin.load(std::memory_order_relaxed);
  }
  return forced == 1;
}

// libcrypto.so.3 loaded on first use and checked on a known digest, or nullptr (absent, lacking a
// function, or not computing SHA-256 under this machine's configuration): our code then.
const LibCrypto *libcrypto() {
  if (builtin_forced()) {
    return nullptr;
  }
  static const std::optional<LibCrypto> loaded = []() -> std::optional<LibCrypto> {
    try {
      void *handle = dl::open("libcrypto.so.3", "");
      const std::string lacking = "libcrypto.so.3 lacks ";
      LibCrypto api;
      dl::bind(handle, api.md_ctx_new, "EVP_MD_CTX_new", lacking);
      dl::bind(handle, api.md_ctx_free, "EVP_MD_CTX_free", lacking);
      dl::bind(handle, api.digest_init_ex, "EVP_DigestInit_ex", lacking);
      dl::bind(handle, api.digest_update, "EVP_DigestUpdate", lacking);
      dl::bind(handle, api.digest_final_ex, "EVP_DigestFinal_ex", lacking);
      dl::bind(handle, api.sha256, "EVP_sha256", lacking);
      dl::bind(handle, api.sha512, "EVP_sha512", lacking);
      EvpDigest probe(api, api.sha256());
      if (!probe.ok()) {
        return std::nullopt;
      }
      probe.update("abc");
      // FIPS 180-4's example, as tests/core/test_sha2.cpp checks our code on it.
      const std::string expected("\xba\x78\x16\xbf\x8f\x01\xcf\xea\x41\x41\x40\xde\x5d\xae\x22\x23"
                                 "\xb0\x03\x61\xa3\x96\x17\x7a\x9c\xb4\x10\xff\x61\xf2\x00\x15\xad",
                                 32);
      if (probe.finish() != expected) {
        return std::nullopt;
      }
      return api;
    } catch (const Error &) {
      return std::nullopt;
    }
  }();
  return loaded ? &*loaded : nullptr;
}

const std::uint32_t (&init_of(std::uint32_t))[8] {
  return sha256_init;
}
const std::uint64_t (&init_of(std::uint64_t))[8] {
  return sha512_init;
}
const std::uint32_t *k_of(std::uint32_t) {
  return sha256_k;
}
const std::uint64_t *k_of(std::uint64_t) {
  return sha512_k;
}

// A digest of the whole input at once: libcrypto for a large one when it can.
template <typename Word> std::string digest(std::string_view data) {
  if (data.size() >= k_libcrypto_threshold) {
    if (const LibCrypto *api = libcrypto()) {
      EvpDigest evp(*api, evp_md<Word>(*api));
      if (evp.ok()) {
        evp.update(data);
        return evp.finish();
      }
    }
  }
  Hasher<Word> ours(init_of(Word{}), k_of(Word{}));
  ours.update(data);
  return ours.finish();
}

} // namespace

Implementation large_input_implementation() {
  if (const LibCrypto *api = libcrypto()) {
    if (EvpDigest(*api, api->sha256()).ok() && EvpDigest(*api, api->sha512()).ok()) {
      return Implementation::libcrypto;
    }
  }
  return Implementation::builtin;
}

void force_builtin(bool builtin) {
  g_force_builtin.store(builtin ? 1 : 0);
}

std::string sha256(std::string_view data) {
  return digest<std::uint32_t>(data);
}

std::string sha512(std::string_view data) {
  return digest<std::uint64_t>(data);
}

// Fed in pieces: the input is held (at most k_libcrypto_threshold bytes) until it is large
// enough to be worth libcrypto, then goes to whichever hasher was chosen.
struct Sha256::State {
  Hasher<std::uint32_t> ours{sha256_init, sha256_k};
  std::optional<EvpDigest> evp;
  bool chosen = false;
  std::string pending;

  void update(std::string_view data) {
    if (evp) {
      evp->update(data);
    } else if (chosen) {
      ours.update(data);
    } else if (pending.size() + data.size() < k_libcrypto_threshold) {
      pending.append(data);
    } else {
      chosen = true;
      if (const LibCrypto *api = libcrypto()) {
        evp.emplace(*api, api->sha256());
        if (!evp->ok()) {
          evp.reset();
        }
      }
      update(pending);
      update(data);
      pending = std::string();
    }
  }

  std::string finish() {
    if (evp) {
      return evp->finish();
    }
    ours.update(pending);
    return ours.finish();
  }
};

Sha256::Sha256() : m_state(std::make_unique<State>()) {}
Sha256::~Sha256() = default;

void Sha256::update(std::string_view data) {
  m_state->update(data);
}

std::string Sha256::finish() {
  std::string digest = m_state->finish();
  m_state = std::make_unique<State>();
  return digest;
}

std::string hex(std::string_view bytes) {
  static const char digits[] = "0123456789abcdef";
  std::string out;
  out.reserve(bytes.size() * 2);
  for (unsigned char b : bytes) {
    out.push_back(digits[b >> 4]);
    out.push_back(digits[b & 15]);
  }
  return out;
}

std::string sha256_hex(std::string_view data) {
  return hex(sha256(data));
}

} // namespace pb::sha2
