/// glr CUDA family, sm100 — how the backward's 16-bit MMA operands sit in shared memory and the two
/// descriptors a tcgen05.mma takes. C++17 and no CUDA headers, so the g++ test
/// (glr/tests/tmem/umma_desc_test.cpp) decodes them field by field from the PTX ISA's tables and
/// emulates the operand addressing.
///
/// NOTES (unverified without a Blackwell GPU): shared-memory descriptor — start, LBO, SBO each >> 4
/// in bits [0,14), [16,30), [32,46); version 1 in bits [46,48); base offset 0; LBO mode 0; layout
/// (swizzle) 0 = none in bits [61,64). Instruction descriptor, kind::f16, dense — D format f32 in
/// bits [4,6) = 1; A, B format in [7,10), [10,13): 0 f16, 1 bf16; A, B K-major (bits 15, 16 = 0);
/// N >> 3 in [17,23); M >> 4 in [24,29). Operands: the no-swizzle K-major canonical layout, core
/// matrices of 8 rows × 16 bytes stored as 128 contiguous bytes; LBO = distance between core
/// matrices adjacent along K, SBO = between core matrices adjacent along M/N. The tiles are laid
/// out as TMA writes them (tile_offset): SBO = 128 (a box's rows are contiguous), LBO = one box.
#pragma once

#include <cstdint>

#ifndef GLR_TMEM_HD
#if defined(__CUDACC__)
#define GLR_TMEM_HD __host__ __device__
#else
#define GLR_TMEM_HD
#endif
#endif

namespace glr::cuda::sm100 {

/// Byte offset of element (r, k) of a 16-bit operand tile with `rows` rows (kMmaM for the A
/// operand, kCM for the B operand) and 32 K elements, as TMA writes it: one box of 8 K elements
/// (16 bytes) × the chunk's rows per group of 8 K elements (row r at 16·r, row-major within the
/// box), group g at g · rows · 16. Every 8 rows × 16 bytes of a group is one core matrix.
GLR_TMEM_HD constexpr int tile_offset(int r, int k, int rows) { return (k / 8) * rows * 16 + r * 16 + (k % 8) * 2; }
/// LBO / SBO of such a tile: core matrices adjacent along K are one group (rows · 16 bytes) apart,
/// core matrices adjacent along M/N (8-row groups) 128 bytes.
GLR_TMEM_HD constexpr uint32_t tile_lbo(int rows) { return uint32_t(rows) * 16; }
GLR_TMEM_HD constexpr uint32_t tile_sbo() { return 128; }
/// Start of the K16 step `kk` of a tile (two groups of 8 K elements per step).
GLR_TMEM_HD constexpr uint32_t tile_k16(uint32_t base, int kk, int rows) { return base + uint32_t(kk) * 2 * tile_lbo(rows); }

/// tcgen05 shared-memory matrix descriptor (no swizzle, base offset 0, version 1).
GLR_TMEM_HD constexpr uint64_t smem_desc(uint32_t smem_addr, uint32_t lbo, uint32_t sbo) {
  return uint64_t((smem_addr & 0x3FFFFu) >> 4) | (uint64_t((lbo >> 4) & 0x3FFFu) << 16) |
         (uint64_t((sbo >> 4) & 0x3FFFu) << 32) | (uint64_t(1) << 46);
}

/// tcgen05 instruction descriptor, kind::f16, dense: D f32, A and B bf16 (or f16), both K-major.
GLR_TMEM_HD constexpr uint32_t idesc_f16(bool bf16, int M, int N) {
  const uint32_t ab = bf16 ? 1u : 0u;
  return (1u << 4) | (ab << 7) | (ab << 10) | (uint32_t(N >> 3) << 17) | (uint32_t(M >> 4) << 24);
}

/// TMEM address of (lane, column): lane in bits [16,32), column in [0,16).
GLR_TMEM_HD constexpr uint32_t tmem_addr(uint32_t base, int lane, int column) {
  return base + (uint32_t(lane) << 16) + uint32_t(column);
}

}  // namespace glr::cuda::sm100
