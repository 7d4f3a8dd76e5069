/// Element types: sizes, names, unit roundoffs, and exact conversions to and from double.
///
/// f16 and bf16 conversions are written by hand (no compiler half types), with IEEE
/// round-to-nearest-even, gradual underflow (subnormals), overflow to Inf and quiet NaNs.
#include "kcv/dtype.hpp"

#include <bit>
#include <cfloat>
#include <cmath>
#include <cstring>
#include <limits>
#include <stdexcept>
#include <string>

namespace kcv {

namespace {

/// Rounds a double to a binary format with `mant` stored mantissa bits and `expo` exponent bits
/// (IEEE layout: sign, exponent, mantissa), round-to-nearest-even, and returns its bit pattern.
// NOTES: rounding straight from the double (not via float) rounds once: double -> float -> f16
// would round twice and can land on the wrong neighbour at ties (e.g. 1 + 2^-11 + 2^-40).
// Valid for narrow formats whose exponent range sits inside double's (f32, f16, bf16).
uint32_t double_to_narrow_bits(double v, int mant, int expo) {
  const uint64_t u = std::bit_cast<uint64_t>(v);
  const uint32_t sign = static_cast<uint32_t>(u >> 63) << (mant + expo);
  const uint32_t exp_all_ones = ((1u << expo) - 1u) << mant;  // Inf pattern without sign
  const int dexp = static_cast<int>((u >> 52) & 0x7ff);
  const uint64_t frac = u & ((uint64_t{1} << 52) - 1);

  if (dexp == 0x7ff) {
    if (frac == 0) return sign | exp_all_ones;  // ±Inf
    // NaN: quiet it and keep the top payload bits.
    const uint32_t payload = static_cast<uint32_t>(frac >> (52 - mant));
    return sign | exp_all_ones | (1u << (mant - 1)) | payload;
  }
  if (dexp == 0 && frac == 0) return sign;  // ±0

  const int bias = (1 << (expo - 1)) - 1;
  const int emin = 1 - bias;  // exponent of the smallest normal
  // Significand as an integer m with value m * 2^(e - 52).
  int e = dexp == 0 ? -1022 : dexp - 1023;
  const uint64_t m = dexp == 0 ? frac : (frac | (uint64_t{1} << 52));
  if (e > bias) return sign | exp_all_ones;  // certainly beyond range (even before rounding)

  // Number of low bits of m to drop so that the kept bits are the target's significand
  // (normals: mant+1 bits; subnormals: the quantum is fixed at 2^(emin - mant)).
  int shift = 52 - mant;
  const bool subnormal = e < emin;
  if (subnormal) shift += emin - e;
  if (shift > 63) return sign;  // far below half the smallest subnormal: rounds to zero

  uint64_t q = m >> shift;
  const uint64_t rem = m & ((uint64_t{1} << shift) - 1);
  const uint64_t half = uint64_t{1} << (shift - 1);
  if (rem > half || (rem == half && (q & 1))) ++q;

  uint32_t bits;
  if (subnormal) {
    bits = static_cast<uint32_t>(q);  // q == 2^mant rounds up into the smallest normal: correct
  } else {
    // q carries the implicit bit (2^mant), which adds one to the exponent field: start one lower.
    // A carry out of the significand (q == 2^(mant+1)) bumps the exponent, possibly to Inf.
    bits = (static_cast<uint32_t>(e + bias - 1) << mant) + static_cast<uint32_t>(q);
  }
  if (bits >= exp_all_ones) bits = exp_all_ones;  // overflow after rounding -> Inf
  return sign | bits;
}

/// Widens a narrow-format bit pattern to double (exact).
double narrow_bits_to_double(uint32_t bits, int mant, int expo) {
  const bool neg = (bits >> (mant + expo)) & 1u;
  const uint32_t e = (bits >> mant) & ((1u << expo) - 1u);
  const uint32_t f = bits & ((1u << mant) - 1u);
  const int bias = (1 << (expo - 1)) - 1;
  double mag;
  if (e == (1u << expo) - 1u) {
    if (f == 0) {
      mag = std::numeric_limits<double>::infinity();
    } else {
      // Keep the payload: place it at the top of a double NaN's fraction, quiet.
      const uint64_t d = (uint64_t{0x7ff} << 52) | (uint64_t{1} << 51) |
                         (static_cast<uint64_t>(f) << (52 - mant));
      mag = std::bit_cast<double>(d);
    }
  } else if (e == 0) {
    mag = std::ldexp(static_cast<double>(f), 1 - bias - mant);
  } else {
    mag = std::ldexp(static_cast<double>(f | (1u << mant)), static_cast<int>(e) - bias - mant);
  }
  return neg ? -mag : mag;
}

constexpr int kF16Mant = 10, kF16Exp = 5;
constexpr int kBF16Mant = 7, kBF16Exp = 8;

uint16_t double_to_f16_bits(double v) {
  return static_cast<uint16_t>(double_to_narrow_bits(v, kF16Mant, kF16Exp));
}
uint16_t double_to_bf16_bits(double v) {
  return static_cast<uint16_t>(double_to_narrow_bits(v, kBF16Mant, kBF16Exp));
}

/// Truncation toward zero with saturation; NaN -> 0 (what a checked conversion would do,
/// instead of the undefined behaviour of an out-of-range cast).
template <typename I>
I to_integer(double v) {
  if (std::isnan(v)) return 0;
  const double t = std::trunc(v);
  constexpr double lo = static_cast<double>(std::numeric_limits<I>::min());
  // 2^63 for i64 (exactly representable; the largest i64 is not).
  constexpr double hi_excl = static_cast<double>(std::numeric_limits<I>::max()) + 1.0;
  if (t <= lo) return std::numeric_limits<I>::min();
  if (t >= hi_excl) return std::numeric_limits<I>::max();
  return static_cast<I>(t);
}

[[noreturn]] void bad_dtype(DType t) {
  throw std::invalid_argument("kcv: unknown dtype " + std::to_string(static_cast<int>(t)));
}

}  // namespace

std::size_t dtype_size(DType t) {
  switch (t) {
    case DType::f64: return 8;
    case DType::f32: return 4;
    case DType::f16: return 2;
    case DType::bf16: return 2;
    case DType::i32: return 4;
    case DType::i64: return 8;
    case DType::u8: return 1;
  }
  bad_dtype(t);
}

std::string_view dtype_name(DType t) {
  switch (t) {
    case DType::f64: return "f64";
    case DType::f32: return "f32";
    case DType::f16: return "f16";
    case DType::bf16: return "bf16";
    case DType::i32: return "i32";
    case DType::i64: return "i64";
    case DType::u8: return "u8";
  }
  bad_dtype(t);
}

std::optional<DType> parse_dtype(std::string_view name) {
  // Canonical names first, then the spellings of numpy / torch users (TOML contracts, adapters).
  struct Alias { std::string_view name; DType t; };
  static constexpr Alias kAliases[] = {
      {"f64", DType::f64},   {"f32", DType::f32},     {"f16", DType::f16},
      {"bf16", DType::bf16}, {"i32", DType::i32},     {"i64", DType::i64},
      {"u8", DType::u8},     {"float64", DType::f64}, {"double", DType::f64},
      {"float32", DType::f32}, {"float", DType::f32}, {"float16", DType::f16},
      {"half", DType::f16},  {"bfloat16", DType::bf16}, {"int32", DType::i32},
      {"int64", DType::i64}, {"uint8", DType::u8},
  };
  for (const auto& a : kAliases)
    if (a.name == name) return a.t;
  return std::nullopt;
}

bool is_floating(DType t) {
  return t == DType::f64 || t == DType::f32 || t == DType::f16 || t == DType::bf16;
}

double unit_roundoff(DType t) {
  switch (t) {
    case DType::f64: return 0x1p-53;
    case DType::f32: return 0x1p-24;
    case DType::f16: return 0x1p-11;
    case DType::bf16: return 0x1p-8;
    case DType::i32:
    case DType::i64:
    case DType::u8: return 0.0;
  }
  bad_dtype(t);
}

double max_finite(DType t) {
  switch (t) {
    case DType::f64: return DBL_MAX;
    case DType::f32: return FLT_MAX;
    case DType::f16: return 65504.0;
    case DType::bf16: return 0x1.fep127;  // (2 - 2^-7) * 2^127
    // Integers: the largest representable value (useful for clamping).
    case DType::i32: return static_cast<double>(std::numeric_limits<int32_t>::max());
    case DType::i64: return static_cast<double>(std::numeric_limits<int64_t>::max());
    case DType::u8: return 255.0;
  }
  bad_dtype(t);
}

double load_element(DType t, const void* p) {
  // memcpy: p may be misaligned (layout gate offsets by one element).
  switch (t) {
    case DType::f64: { double v; std::memcpy(&v, p, 8); return v; }
    case DType::f32: { float v; std::memcpy(&v, p, 4); return v; }
    case DType::f16: { uint16_t h; std::memcpy(&h, p, 2); return narrow_bits_to_double(h, kF16Mant, kF16Exp); }
    case DType::bf16: { uint16_t h; std::memcpy(&h, p, 2); return narrow_bits_to_double(h, kBF16Mant, kBF16Exp); }
    case DType::i32: { int32_t v; std::memcpy(&v, p, 4); return v; }
    case DType::i64: { int64_t v; std::memcpy(&v, p, 8); return static_cast<double>(v); }
    case DType::u8: { uint8_t v; std::memcpy(&v, p, 1); return v; }
  }
  bad_dtype(t);
}

void store_element(DType t, void* p, double v) {
  switch (t) {
    case DType::f64: std::memcpy(p, &v, 8); return;
    case DType::f32: { const float f = static_cast<float>(v); std::memcpy(p, &f, 4); return; }
    case DType::f16: { const uint16_t h = double_to_f16_bits(v); std::memcpy(p, &h, 2); return; }
    case DType::bf16: { const uint16_t h = double_to_bf16_bits(v); std::memcpy(p, &h, 2); return; }
    case DType::i32: { const int32_t i = to_integer<int32_t>(v); std::memcpy(p, &i, 4); return; }
    case DType::i64: { const int64_t i = to_integer<int64_t>(v); std::memcpy(p, &i, 8); return; }
    case DType::u8: { const uint8_t i = to_integer<uint8_t>(v); std::memcpy(p, &i, 1); return; }
  }
  bad_dtype(t);
}

double round_to(DType t, double v) {
  switch (t) {
    case DType::f64: return v;
    // NOTES: static_cast<float> rounds to nearest-even (the default FP environment), with
    // overflow to Inf and gradual underflow.
    case DType::f32: return static_cast<double>(static_cast<float>(v));
    case DType::f16: return narrow_bits_to_double(double_to_f16_bits(v), kF16Mant, kF16Exp);
    case DType::bf16: return narrow_bits_to_double(double_to_bf16_bits(v), kBF16Mant, kBF16Exp);
    case DType::i32: return to_integer<int32_t>(v);
    case DType::i64: return static_cast<double>(to_integer<int64_t>(v));
    case DType::u8: return to_integer<uint8_t>(v);
  }
  bad_dtype(t);
}

// float -> double is exact, so these round exactly once.
uint16_t f32_to_f16_bits(float f) { return double_to_f16_bits(f); }
float f16_bits_to_f32(uint16_t h) {
  return static_cast<float>(narrow_bits_to_double(h, kF16Mant, kF16Exp));  // exact
}
uint16_t f32_to_bf16_bits(float f) { return double_to_bf16_bits(f); }
float bf16_bits_to_f32(uint16_t h) {
  // bf16 is the top half of an f32: widening is a shift (NaN payloads kept bit for bit).
  return std::bit_cast<float>(static_cast<uint32_t>(h) << 16);
}

}  // namespace kcv
