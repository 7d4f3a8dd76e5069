// glr/half.hpp (the candidates' bf16/f16 storage) against kcv's conversions (kcv/dtype.hpp), bit for
// bit: every 16-bit pattern widened, and narrowing at every f16/bf16 value's neighbours and midpoints
// (ties both ways, overflow threshold, subnormal boundary), plus random floats.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>

#include "glr/half.hpp"
#include "kcv/dtype.hpp"

namespace glr::test {
namespace {

uint32_t bits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}
float from_bits(uint32_t u) {
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

TEST(GlrHalf, WideningIsExactForEveryPattern) {
  for (uint32_t h = 0; h < 0x10000u; ++h) {
    ASSERT_EQ(bits(bf16_to_float(uint16_t(h))), bits(kcv::bf16_bits_to_f32(uint16_t(h)))) << std::hex << h;
    const float a = f16_to_float(uint16_t(h)), b = kcv::f16_bits_to_f32(uint16_t(h));
    if (std::isnan(b)) ASSERT_TRUE(std::isnan(a)) << std::hex << h;
    else ASSERT_EQ(bits(a), bits(b)) << std::hex << h;
  }
}

/// Narrowing of f agrees with kcv's (NaNs: both NaN, same sign).
void expect_same_narrowing(float f) {
  const uint16_t b = float_to_bf16(f), kb = kcv::f32_to_bf16_bits(f);
  const uint16_t h = float_to_f16(f), kh = kcv::f32_to_f16_bits(f);
  if (std::isnan(f)) {
    ASSERT_TRUE(std::isnan(bf16_to_float(b)) && std::isnan(f16_to_float(h))) << f;
    ASSERT_EQ(b & 0x8000, kb & 0x8000);
    ASSERT_EQ(h & 0x8000, kh & 0x8000);
    return;
  }
  ASSERT_EQ(b, kb) << std::hexfloat << f;
  ASSERT_EQ(h, kh) << std::hexfloat << f;
}

TEST(GlrHalf, NarrowingRoundsToNearestEvenLikeKcv) {
  for (uint32_t p = 0; p < 0x10000u; ++p) {
    // Each 16-bit value, its float neighbours, the midpoints to the next value and theirs.
    for (const float v : {bf16_to_float(uint16_t(p)), f16_to_float(uint16_t(p))}) {
      if (!std::isfinite(v)) continue;
      const float next = std::nextafter(v, v < 0 ? -INFINITY : INFINITY);
      const float nv = std::isfinite(next) ? next : v;
      for (const float w : {v, std::nextafter(v, 0.0f), nv}) expect_same_narrowing(w);
      // Midpoint to the next 16-bit value of each format (exact in float for both formats).
      const uint32_t vb = bits(v);
      for (const uint32_t step : {0x10000u, 0x2000u}) {
        const float up = from_bits(vb + step), mid = v + (up - v) * 0.5f;
        if (!std::isfinite(up) || !std::isfinite(mid)) continue;
        for (const float w : {mid, std::nextafter(mid, 0.0f), std::nextafter(mid, INFINITY),
                              std::nextafter(mid, -INFINITY)})
          expect_same_narrowing(w);
      }
    }
  }
  for (const float f : {0.0f, -0.0f, 65504.0f, 65519.99f, 65520.0f, -65520.0f, 0x1p-24f, 0x1p-25f,
                        0x1.000002p-25f, 0x1p-26f, 0x1p-14f, 0x1.ffcp-15f, 0x1p-149f, 3.4e38f, -3.4e38f,
                        INFINITY, -INFINITY, NAN, -NAN})
    expect_same_narrowing(f);
  std::mt19937 rng(1);
  for (int i = 0; i < 2'000'000; ++i) expect_same_narrowing(from_bits(uint32_t(rng())));
}

}  // namespace
}  // namespace glr::test
