// SHA-256 as FIPS 180-4 §6.2 states it; tested against its published vectors (tests/unit/core).
#include "kcv/core/sha256.hpp"

#include <cstdio>
#include <cstring>
#include <memory>
#include <stdexcept>

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>
#endif

namespace kcv {
namespace {

constexpr uint32_t kK[64] = {
    0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5,
    0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174,
    0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
    0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967,
    0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85,
    0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
    0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
    0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2};

constexpr uint32_t rotr(uint32_t x, int n) { return (x >> n) | (x << (32 - n)); }

}  // namespace


namespace sha256_detail {

void blocks_portable(uint32_t hs[8], const unsigned char* p, std::size_t n) {
  for (; n > 0; --n, p += 64) {
    uint32_t w[64];
    for (int i = 0; i < 16; ++i)
      w[i] = uint32_t(p[4 * i]) << 24 | uint32_t(p[4 * i + 1]) << 16 | uint32_t(p[4 * i + 2]) << 8 | uint32_t(p[4 * i + 3]);
    for (int i = 16; i < 64; ++i) {
      const uint32_t s0 = rotr(w[i - 15], 7) ^ rotr(w[i - 15], 18) ^ (w[i - 15] >> 3);
      const uint32_t s1 = rotr(w[i - 2], 17) ^ rotr(w[i - 2], 19) ^ (w[i - 2] >> 10);
      w[i] = w[i - 16] + s0 + w[i - 7] + s1;
    }
    uint32_t a = hs[0], b = hs[1], c = hs[2], d = hs[3], e = hs[4], f = hs[5], g = hs[6], h = hs[7];
    for (int i = 0; i < 64; ++i) {
      const uint32_t t1 = h + (rotr(e, 6) ^ rotr(e, 11) ^ rotr(e, 25)) + ((e & f) ^ (~e & g)) + kK[i] + w[i];
      const uint32_t t2 = (rotr(a, 2) ^ rotr(a, 13) ^ rotr(a, 22)) + ((a & b) ^ (a & c) ^ (b & c));
      h = g; g = f; f = e; e = d + t1; d = c; c = b; b = a; a = t1 + t2;
    }
    hs[0] += a; hs[1] += b; hs[2] += c; hs[3] += d; hs[4] += e; hs[5] += f; hs[6] += g; hs[7] += h;
  }
}

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
bool hardware_available() {
  static const bool yes = __builtin_cpu_supports("sha") && __builtin_cpu_supports("sse4.1");
  return yes;
}

// SHA256RNDS2 does two rounds on the state split as (A,B,E,F) and (C,D,G,H), taking W+K of those
// two rounds in the low 64 bits of its third operand; SHA256MSG1/MSG2 form the schedule four words
// at a time (W[t] = σ1(W[t-2]) + W[t-7] + σ0(W[t-15]) + W[t-16]; the W[t-7] term added between them).
__attribute__((target("sha,sse4.1,ssse3"))) void blocks_hardware(uint32_t h[8], const unsigned char* p, std::size_t n) {
  const __m128i be = _mm_set_epi64x(0x0c0d0e0f08090a0bULL, 0x0405060700010203ULL);  // big-endian words
  __m128i t = _mm_loadu_si128(reinterpret_cast<const __m128i*>(h));                // D C B A
  __m128i st1 = _mm_loadu_si128(reinterpret_cast<const __m128i*>(h + 4));          // H G F E
  t = _mm_shuffle_epi32(t, 0xB1);                                                   // C D A B
  st1 = _mm_shuffle_epi32(st1, 0x1B);                                               // E F G H
  __m128i st0 = _mm_alignr_epi8(t, st1, 8);                                         // A B E F
  st1 = _mm_blend_epi16(st1, t, 0xF0);                                              // C D G H
  for (; n > 0; --n, p += 64) {
    const __m128i abef = st0, cdgh = st1;
    __m128i m[4];
    for (int i = 0; i < 4; ++i)
      m[i] = _mm_shuffle_epi8(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p + 16 * i)), be);
    for (int r = 0; r < 16; ++r) {  // rounds 4r .. 4r+3 on m[r % 4] = W[4r .. 4r+3]
      __m128i& w = m[r % 4];
      const __m128i wk = _mm_add_epi32(w, _mm_loadu_si128(reinterpret_cast<const __m128i*>(kK + 4 * r)));
      st1 = _mm_sha256rnds2_epu32(st1, st0, wk);
      st0 = _mm_sha256rnds2_epu32(st0, st1, _mm_shuffle_epi32(wk, 0x0E));
      if (r >= 1 && r <= 12) {
        // W[4r+12 .. 4r+15] = msg2(msg1(W[4r-4..]) + W[4r+5..4r+8], W[4r+8..4r+11]) into the slot
        // of W[4r-4 ..] (m[(r-1) % 4]), which rounds 4r-4 .. 4r-1 no longer need.
        __m128i& old = m[(r + 3) % 4];
        const __m128i next = m[(r + 1) % 4], last = m[(r + 2) % 4];  // W[4r+4..], W[4r+8..]
        old = _mm_sha256msg1_epu32(old, w);
        old = _mm_add_epi32(old, _mm_alignr_epi8(last, next, 4));
        old = _mm_sha256msg2_epu32(old, last);
      }
    }
    st0 = _mm_add_epi32(st0, abef);
    st1 = _mm_add_epi32(st1, cdgh);
  }
  t = _mm_shuffle_epi32(st0, 0x1B);                                   // F E B A
  st1 = _mm_shuffle_epi32(st1, 0xB1);                                 // D C H G
  st0 = _mm_blend_epi16(t, st1, 0xF0);                                // D C B A
  st1 = _mm_alignr_epi8(st1, t, 8);                                   // H G F E
  _mm_storeu_si128(reinterpret_cast<__m128i*>(h), st0);
  _mm_storeu_si128(reinterpret_cast<__m128i*>(h + 4), st1);
}
#else
bool hardware_available() { return false; }
void blocks_hardware(uint32_t h[8], const unsigned char* p, std::size_t n) { blocks_portable(h, p, n); }
#endif

}  // namespace sha256_detail

namespace {
void compress(uint32_t h[8], const unsigned char* p, std::size_t n) {
  if (sha256_detail::hardware_available()) sha256_detail::blocks_hardware(h, p, n);
  else sha256_detail::blocks_portable(h, p, n);
}
}  // namespace

Sha256::Sha256()
    : h_{0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a, 0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19} {}

void Sha256::update(const void* data, std::size_t n) {
  const auto* p = static_cast<const unsigned char*>(data);
  bytes_ += n;
  if (used_ > 0) {  // complete the buffered block first
    const std::size_t take = std::min(n, sizeof buf_ - used_);
    std::memcpy(buf_ + used_, p, take);
    used_ += take;
    p += take;
    n -= take;
    if (used_ < sizeof buf_) return;
    compress(h_, buf_, 1);
    used_ = 0;
  }
  if (const std::size_t whole = n / 64; whole > 0) {  // straight from the caller's bytes
    compress(h_, p, whole);
    p += 64 * whole;
    n -= 64 * whole;
  }
  std::memcpy(buf_, p, n);
  used_ = n;
}

std::string Sha256::hex() {
  const uint64_t bits = bytes_ * 8;
  const unsigned char one = 0x80, zero = 0;
  update(&one, 1);
  while (used_ != 56) update(&zero, 1);
  unsigned char len[8];
  for (int i = 0; i < 8; ++i) len[i] = static_cast<unsigned char>(bits >> (56 - 8 * i));
  update(len, 8);
  static const char* digits = "0123456789abcdef";
  std::string out;
  for (uint32_t v : h_)
    for (int shift = 28; shift >= 0; shift -= 4) out += digits[(v >> shift) & 0xf];
  return out;
}

std::string sha256_file(const std::string& path, const std::string& copy_to) {
  std::unique_ptr<FILE, int (*)(FILE*)> in(std::fopen(path.c_str(), "rb"), &std::fclose);
  if (!in) throw std::runtime_error("cannot read " + path);
  std::unique_ptr<FILE, int (*)(FILE*)> out(copy_to.empty() ? nullptr : std::fopen(copy_to.c_str(), "wb"), &std::fclose);
  if (!copy_to.empty() && !out) throw std::runtime_error("cannot write " + copy_to);
  Sha256 h;
  static thread_local unsigned char buf[1 << 16];
  for (std::size_t n; (n = std::fread(buf, 1, sizeof buf, in.get())) > 0;) {
    h.update(buf, n);
    if (out && std::fwrite(buf, 1, n, out.get()) != n) throw std::runtime_error("cannot write " + copy_to);
  }
  if (std::ferror(in.get())) throw std::runtime_error("cannot read " + path);
  if (out && std::fflush(out.get()) != 0) throw std::runtime_error("cannot write " + copy_to);
  return h.hex();
}

}  // namespace kcv
