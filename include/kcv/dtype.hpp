/// Element types of the ABI, their sizes, unit roundoffs, and exact conversions to and from double.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>

#include "kcv/abi.h"

namespace kcv {

enum class DType : int32_t {
  f64 = KCV_F64, f32 = KCV_F32, f16 = KCV_F16, bf16 = KCV_BF16,
  i32 = KCV_I32, i64 = KCV_I64, u8 = KCV_U8,
};

std::size_t dtype_size(DType t);
std::string_view dtype_name(DType t);
std::optional<DType> parse_dtype(std::string_view name);
bool is_floating(DType t);

/// Unit roundoff (half an ulp at 1): 2^-53 f64, 2^-24 f32, 2^-11 f16, 2^-8 bf16; 0 for integers.
double unit_roundoff(DType t);
/// Largest finite value of a floating dtype.
double max_finite(DType t);

/// Reads one element at p as a double (exact for every dtype but i64 beyond 2^53).
double load_element(DType t, const void* p);
/// Stores v at p, rounding to nearest-even (floating) or truncating toward zero (integers).
void store_element(DType t, void* p, double v);
/// v rounded to t and widened back: what a device that stores v as t would read.
double round_to(DType t, double v);

uint16_t f32_to_f16_bits(float f);
float f16_bits_to_f32(uint16_t h);
uint16_t f32_to_bf16_bits(float f);
float bf16_bits_to_f32(uint16_t h);

}  // namespace kcv
