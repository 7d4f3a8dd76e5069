// dtype: names, sizes, roundoffs, and the hand-written f16 / bf16 conversions (exhaustively).
#include <gtest/gtest.h>

#include <bit>
#include <cfloat>
#include <cmath>
#include <cstring>
#include <limits>
#include <random>

#include "kcv/dtype.hpp"

namespace kcv {
namespace {

const DType kAll[] = {DType::f64, DType::f32, DType::f16, DType::bf16, DType::i32, DType::i64, DType::u8};

TEST(DType, NamesSizesRoundoffs) {
  const char* names[] = {"f64", "f32", "f16", "bf16", "i32", "i64", "u8"};
  const std::size_t sizes[] = {8, 4, 2, 2, 4, 8, 1};
  for (int i = 0; i < 7; ++i) {
    EXPECT_EQ(dtype_name(kAll[i]), names[i]);
    EXPECT_EQ(dtype_size(kAll[i]), sizes[i]);
    EXPECT_EQ(parse_dtype(names[i]), kAll[i]);
    EXPECT_EQ(static_cast<int>(kAll[i]), i);  // ABI enum values
  }
  EXPECT_EQ(parse_dtype("bfloat16"), DType::bf16);
  EXPECT_EQ(parse_dtype("float32"), DType::f32);
  EXPECT_FALSE(parse_dtype("f8").has_value());
  EXPECT_FALSE(parse_dtype("").has_value());
  EXPECT_EQ(unit_roundoff(DType::f64), std::ldexp(1.0, -53));
  EXPECT_EQ(unit_roundoff(DType::f32), std::ldexp(1.0, -24));
  EXPECT_EQ(unit_roundoff(DType::f16), std::ldexp(1.0, -11));
  EXPECT_EQ(unit_roundoff(DType::bf16), std::ldexp(1.0, -8));
  EXPECT_EQ(unit_roundoff(DType::i32), 0.0);
  EXPECT_TRUE(is_floating(DType::bf16));
  EXPECT_FALSE(is_floating(DType::u8));
  EXPECT_EQ(max_finite(DType::f32), FLT_MAX);
  EXPECT_EQ(max_finite(DType::f16), 65504.0);
  EXPECT_EQ(max_finite(DType::bf16), bf16_bits_to_f32(0x7f7f));
  EXPECT_EQ(max_finite(DType::f16), f16_bits_to_f32(0x7bff));
}

// Every f16 bit pattern widens and narrows back to itself (NaNs: stay NaN, sign and payload kept,
// quieted).
TEST(DType, F16ExhaustiveRoundTrip) {
  for (uint32_t h = 0; h <= 0xffff; ++h) {
    const float f = f16_bits_to_f32(static_cast<uint16_t>(h));
    const bool nan = (h & 0x7c00) == 0x7c00 && (h & 0x3ff);
    ASSERT_EQ(std::isnan(f), nan) << std::hex << h;
    const uint16_t back = f32_to_f16_bits(f);
    if (nan) {
      ASSERT_EQ(back, h | 0x200) << std::hex << h;
    } else {
      ASSERT_EQ(back, h) << std::hex << h;
      uint16_t bits = static_cast<uint16_t>(h);
      ASSERT_EQ(load_element(DType::f16, &bits), static_cast<double>(f));
      ASSERT_EQ(round_to(DType::f16, f), static_cast<double>(f));
      uint16_t stored = 0;
      store_element(DType::f16, &stored, f);
      ASSERT_EQ(stored, h);
    }
  }
  EXPECT_EQ(f16_bits_to_f32(0x0001), std::ldexp(1.0f, -24));  // smallest subnormal
  EXPECT_EQ(f16_bits_to_f32(0x0400), std::ldexp(1.0f, -14));  // smallest normal
  EXPECT_EQ(f16_bits_to_f32(0x3c00), 1.0f);
  EXPECT_EQ(f16_bits_to_f32(0xc000), -2.0f);
  EXPECT_EQ(f16_bits_to_f32(0x7c00), INFINITY);
  EXPECT_EQ(f16_bits_to_f32(0xfc00), -INFINITY);
}

TEST(DType, BF16ExhaustiveRoundTrip) {
  for (uint32_t h = 0; h <= 0xffff; ++h) {
    const float f = bf16_bits_to_f32(static_cast<uint16_t>(h));
    const bool nan = (h & 0x7f80) == 0x7f80 && (h & 0x7f);
    ASSERT_EQ(std::isnan(f), nan) << std::hex << h;
    ASSERT_EQ(std::bit_cast<uint32_t>(f), h << 16);
    const uint16_t back = f32_to_bf16_bits(f);
    if (nan) {
      ASSERT_EQ(back, h | 0x40) << std::hex << h;
    } else {
      ASSERT_EQ(back, h) << std::hex << h;
      uint16_t bits = static_cast<uint16_t>(h);
      ASSERT_EQ(load_element(DType::bf16, &bits), static_cast<double>(f));
    }
  }
}

// Midpoints between neighbours round to the even one; a hair above / below goes to the nearer.
// The hair is 2^-30 of a gap: a double -> float -> f16 path would erase it and round wrongly.
void check_ties(DType t, uint16_t max_bits, float (*widen)(uint16_t)) {
  for (uint32_t h = 0; h < max_bits; ++h) {
    const double lo = widen(static_cast<uint16_t>(h)), hi = widen(static_cast<uint16_t>(h + 1));
    const double mid = (lo + hi) / 2, hair = (hi - lo) * 0x1p-30;
    const double even = (h & 1) ? hi : lo;
    for (double sign : {1.0, -1.0}) {
      ASSERT_EQ(round_to(t, sign * mid), sign * even) << std::hex << h;
      ASSERT_EQ(round_to(t, sign * (mid + hair)), sign * hi) << std::hex << h;
      ASSERT_EQ(round_to(t, sign * (mid - hair)), sign * lo) << std::hex << h;
    }
  }
}

TEST(DType, F16RoundsToNearestEvenOnceFromDouble) {
  check_ties(DType::f16, 0x7bff, f16_bits_to_f32);
  // Overflow: 65520 is the midpoint between 65504 and 2^16 (odd mantissa): rounds to Inf.
  EXPECT_EQ(round_to(DType::f16, 65519.99), 65504.0);
  EXPECT_EQ(round_to(DType::f16, 65520.0), INFINITY);
  EXPECT_EQ(round_to(DType::f16, -1e6), -INFINITY);
  // Underflow: half the smallest subnormal ties to 0; just above goes to 2^-24.
  EXPECT_EQ(round_to(DType::f16, 0x1p-25), 0.0);
  EXPECT_EQ(round_to(DType::f16, 0x1p-25 + 0x1p-60), 0x1p-24);
  EXPECT_EQ(round_to(DType::f16, 3 * 0x1p-25), 2 * 0x1p-24);  // tie between 1 and 2 quanta: even
  EXPECT_EQ(round_to(DType::f16, 1e-300), 0.0);
  EXPECT_TRUE(std::signbit(round_to(DType::f16, -1e-300)));
  EXPECT_EQ(round_to(DType::f16, 4.9406564584124654e-324), 0.0);  // double subnormal
  EXPECT_TRUE(std::isnan(round_to(DType::f16, NAN)));
  // The subnormal-to-normal carry: just under 2^-14 rounds up into the smallest normal.
  EXPECT_EQ(f32_to_f16_bits(std::ldexp(1.0f, -14) - std::ldexp(1.0f, -30)), 0x0400);
}

TEST(DType, BF16RoundsToNearestEvenOnceFromDouble) {
  check_ties(DType::bf16, 0x7f7f, bf16_bits_to_f32);
  EXPECT_EQ(round_to(DType::bf16, 0x1.ffp127), INFINITY);   // midpoint above max: odd -> Inf
  EXPECT_EQ(round_to(DType::bf16, 0x1.fefp127), 0x1.fep127);
  EXPECT_EQ(round_to(DType::bf16, 0x1p-134), 0.0);           // half the smallest subnormal
  EXPECT_EQ(round_to(DType::bf16, 0x1.8p-134), 0x1p-133);
}

// Cross-check against the classic bit trick (float -> bf16, RNE) on many float patterns.
TEST(DType, BF16MatchesBitTrick) {
  std::mt19937 rng(7);
  for (int n = 0; n < 2'000'000; ++n) {
    const uint32_t u = rng();
    const float f = std::bit_cast<float>(u);
    if (std::isnan(f)) continue;
    const uint32_t trick = (u + 0x7fffu + ((u >> 16) & 1u)) >> 16;
    ASSERT_EQ(f32_to_bf16_bits(f), trick) << std::hex << u;
  }
}

#ifdef __FLT16_MANT_DIG__
// Cross-check against the compiler's _Float16 (libgcc converts double -> half in one rounding).
TEST(DType, F16MatchesCompilerHalf) {
  std::mt19937_64 rng(11);
  for (int n = 0; n < 1'000'000; ++n) {
    // Doubles whose exponents straddle f16's range (subnormals, overflow), random mantissas.
    const int e = static_cast<int>(rng() % 50) - 30;
    const double v = std::ldexp(1.0 + static_cast<double>(rng() >> 11) * 0x1p-53, e) * ((rng() & 1) ? -1 : 1);
    const _Float16 h = static_cast<_Float16>(v);
    ASSERT_EQ(round_to(DType::f16, v), static_cast<double>(h)) << v;
    const float f = static_cast<float>(v);
    ASSERT_EQ(f32_to_f16_bits(f), std::bit_cast<uint16_t>(static_cast<_Float16>(f))) << f;
  }
}
#endif

TEST(DType, F32AndF64) {
  EXPECT_EQ(round_to(DType::f32, 1 + 0x1p-24), 1.0);  // tie: even
  EXPECT_EQ(round_to(DType::f32, 1 + 0x1p-24 + 0x1p-50), 1 + 0x1p-23);
  EXPECT_EQ(round_to(DType::f32, 1e39), INFINITY);
  EXPECT_EQ(round_to(DType::f32, 0x1p-149), 0x1p-149);
  EXPECT_EQ(round_to(DType::f64, 0.1), 0.1);
  // Misaligned loads and stores (the layout gate offsets buffers by one element).
  alignas(8) unsigned char buf[16] = {};
  store_element(DType::f32, buf + 1, 1.5);
  EXPECT_EQ(load_element(DType::f32, buf + 1), 1.5);
  store_element(DType::f64, buf + 3, -0.1);
  EXPECT_EQ(load_element(DType::f64, buf + 3), -0.1);
  store_element(DType::f32, buf, 0.1);
  EXPECT_EQ(load_element(DType::f32, buf), static_cast<double>(0.1f));
}

TEST(DType, IntegersTruncateAndSaturate) {
  EXPECT_EQ(round_to(DType::i32, 2.9), 2.0);
  EXPECT_EQ(round_to(DType::i32, -2.9), -2.0);
  EXPECT_EQ(round_to(DType::i32, 1e20), 2147483647.0);
  EXPECT_EQ(round_to(DType::i32, -1e20), -2147483648.0);
  EXPECT_EQ(round_to(DType::i32, NAN), 0.0);
  EXPECT_EQ(round_to(DType::u8, 300), 255.0);
  EXPECT_EQ(round_to(DType::u8, -5), 0.0);
  EXPECT_EQ(round_to(DType::i64, 1e30), 9223372036854775807.0);
  int64_t i = 0;
  store_element(DType::i64, &i, -12345.7);
  EXPECT_EQ(i, -12345);
  EXPECT_EQ(load_element(DType::i64, &i), -12345.0);
  uint8_t b = 0;
  store_element(DType::u8, &b, 200.5);
  EXPECT_EQ(b, 200);
}

}  // namespace
}  // namespace kcv
