/// glr — bf16 and f16 storage for the CPU candidates: widening to float (exact) and narrowing from
/// float with IEEE round-to-nearest-even, gradual underflow, overflow to ±Inf and quiet NaNs (the
/// payload's top bits kept). Header-only, no dependencies: candidate files compile against it alone.
/// glr/tests/unit/half_test.cpp checks it bit for bit against kcv's conversions (kcv/dtype.hpp).
#pragma once

#include <cstdint>
#include <cstring>

namespace glr {

namespace detail {
inline uint32_t float_bits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}
inline float bits_float(uint32_t u) {
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}
}  // namespace detail

/// bf16 is the top half of an f32: widening is a shift (NaN payloads kept bit for bit).
inline float bf16_to_float(uint16_t h) { return detail::bits_float(uint32_t(h) << 16); }

/// float → bf16, round to nearest even. The carry of the rounding runs into the exponent, which
/// is exactly right for the binade step and for overflow (0x7f7f_8000 and up round to Inf).
inline uint16_t float_to_bf16(float f) {
  const uint32_t u = detail::float_bits(f);
  if ((u & 0x7fffffffu) > 0x7f800000u) return uint16_t((u >> 16) | 0x0040u);  // NaN: quiet it
  return uint16_t((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
}

/// f16 → float (exact: every f16 value, subnormals included, is a normal f32).
inline float f16_to_float(uint16_t h) {
  const uint32_t sign = uint32_t(h & 0x8000u) << 16;
  const uint32_t e = (h >> 10) & 0x1fu, m = h & 0x3ffu;
  if (e == 0x1f) return detail::bits_float(sign | 0x7f800000u | (m << 13));  // Inf, NaN (payload kept)
  if (e == 0) {
    // Subnormal m · 2^-24: m has at most 10 bits, so the float product is exact.
    const float mag = float(m) * 0x1p-24f;
    return sign ? -mag : mag;
  }
  return detail::bits_float(sign | ((e + 112u) << 23) | (m << 13));
}

/// float → f16, round to nearest even, gradual underflow, overflow to ±Inf.
inline uint16_t float_to_f16(float f) {
  const uint32_t u = detail::float_bits(f);
  const uint16_t sign = uint16_t((u >> 16) & 0x8000u);
  const uint32_t x = u & 0x7fffffffu;
  if (x > 0x7f800000u) return uint16_t(sign | 0x7e00u | ((x >> 13) & 0x3ffu));  // NaN: quiet it
  if (x >= 0x477ff000u) return uint16_t(sign | 0x7c00u);  // ≥ 65520 (the tie above 65504): Inf
  if (x >= 0x38800000u) {
    // Normal (≥ 2^-14): drop 13 mantissa bits with RNE; a carry bumps the exponent, never to Inf.
    const uint32_t r = x + 0xfffu + ((x >> 13) & 1u);
    return uint16_t(sign | ((r - (112u << 23)) >> 13));
  }
  if (x <= 0x33000000u) return sign;  // ≤ 2^-25 (half the smallest subnormal, a tie to 0): ±0
  // Subnormal result: quantum 2^-24. value = m · 2^(e − 150), so q = m · 2^(e − 126).
  const uint32_t e = x >> 23, m = (x & 0x7fffffu) | 0x800000u;
  const uint32_t shift = 126u - e;  // 14 .. 24
  uint32_t q = m >> shift;
  const uint32_t rem = m & ((1u << shift) - 1u), half = 1u << (shift - 1u);
  if (rem > half || (rem == half && (q & 1u))) ++q;  // q = 0x400 is the smallest normal: right
  return uint16_t(sign | q);
}

}  // namespace glr
