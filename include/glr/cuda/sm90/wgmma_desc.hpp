/// glr CUDA family, sm90 — how 16-bit wgmma operands sit in shared memory, the 64-bit matrix
/// descriptor a `wgmma.mma_async` reads them through, and which thread holds which element of the
/// register operands (A in registers, the fp32 accumulator D). C++17 and no CUDA headers, so the g++
/// test (glr/tests/wgmma/wgmma_desc_test.cpp) decodes the descriptors field by field and emulates
/// the tensor core's shared-memory addressing over every element of the tiles; the device half is
/// wgmma.cuh beside this.
///
/// NOTES (unverified without a Hopper GPU): PTX ISA, "Asynchronous Warpgroup Level Matrix Multiply-
/// Accumulate" → "Shared Memory Matrix Layout" → "Matrix Descriptor Format" (9.7.15.5.1.2.2 in the
/// 9.0 ISA): matrix-descriptor-encode(x) = (x & 0x3FFFF) >> 4; start address in bits [0,14), leading
/// dimension byte offset (LBO) in [16,30), stride dimension byte offset (SBO) in [32,46), base offset
/// in [49,52), swizzle mode in [62,64): 0 none (interleave), 1 128-byte, 2 64-byte, 3 32-byte; every
/// other bit 0 (unlike tcgen05's descriptor there is no version field). "Canonical Layouts", K-major,
/// T = 8 elements of 16 bits = 16 bytes, in CuTe notation (row, k) → element offset:
///   no swizzle   ((8,m),(T,2k)) : ((1T,SBO),(1,LBO))   Swizzle<0,4,3>
///   128B swizzle ((8,m),(T,2k)) : ((8T,SBO),(1,T))     Swizzle<3,4,3>, LBO unused ("assumed 1")
/// i.e. rows of a core matrix 16 bytes apart (no swizzle) or 128 bytes apart (128B), 8-row groups
/// SBO apart, and the two 8-element halves of a K16 step LBO apart (no swizzle) or adjacent (128B).
/// For N-major B operands (imm-trans-b = 1), MN-major 128B: (n, k) → ((T,8,m),(8,k)) :
/// ((1,T,LBO),(8T,SBO)), Swizzle<3,4,3>: n contiguous in 128-byte lines, 64-wide n blocks LBO apart,
/// k lines 128 bytes apart, 8-k groups SBO apart.
/// Swizzle<3,4,3> XORs byte-address bits [4,7) with bits [7,10); base offset 0 means the swizzle's
/// repeating pattern (8 rows × 128 bytes) starts at a 1024-byte boundary, so every 128B tile below
/// starts 1024-byte aligned. Cross-checked against CUTLASS cute/arch/mma_sm90_desc.hpp (GmmaDescriptor)
/// and cute/atom/mma_traits_sm90_gmma.hpp (make_gmma_desc<Major::K> and <Major::MN>, CLayout_64xN, ALayout_64x16).
#pragma once

#include <cstdint>

#ifndef GLR_WGMMA_HD
#if defined(__CUDACC__)
#define GLR_WGMMA_HD __host__ __device__
#else
#define GLR_WGMMA_HD
#endif
#endif

namespace glr::cuda::sm90 {

/// The descriptor's swizzle mode, bits [62,64).
enum class Swizzle : uint32_t { none = 0, b128 = 1, b64 = 2, b32 = 3 };

/// wgmma shared-memory matrix descriptor. `smem_addr`, `lbo`, `sbo` in bytes (multiples of 16; the
/// address a shared-window address, as __cvta_generic_to_shared gives it); `base_offset` 0 for tiles
/// whose swizzle pattern starts on its boundary (all tiles here).
GLR_WGMMA_HD constexpr uint64_t wgmma_desc(uint32_t smem_addr, uint32_t lbo, uint32_t sbo, Swizzle swizzle,
                                           uint32_t base_offset = 0) {
  return uint64_t((smem_addr & 0x3FFFFu) >> 4) | (uint64_t((lbo & 0x3FFFFu) >> 4) << 16) |
         (uint64_t((sbo & 0x3FFFFu) >> 4) << 32) | (uint64_t(base_offset & 0x7u) << 49) |
         (uint64_t(swizzle) << 62);
}

// ---- 128-byte swizzle, K-major, 16-bit elements: 64 K elements (128 bytes) per row ----
// A tile of `rows` rows (a multiple of 8) and K a multiple of 64 is K/64 column blocks, each
// `rows` × 128 bytes, row r of a block at 128·r, its 16-byte chunk c (K elements 8c..8c+7 of the
// block) at chunk c ^ (r % 8). This is what TMA writes with CU_TENSOR_MAP_SWIZZLE_128B and a box of
// 64 elements × rows, and what CUTLASS calls Layout_K_SW128_Atom tiled down the rows.

/// Bytes of one 8-row × 128-byte swizzle atom; 128B tiles start on a multiple of this.
inline constexpr uint32_t kSw128Atom = 1024;

/// Swizzle<3,4,3> on a byte address (or an offset from a 1024-aligned base).
GLR_WGMMA_HD constexpr uint32_t sw128(uint32_t addr) { return addr ^ (((addr >> 7) & 7u) << 4); }

/// Byte offset of element (r, k) in a 128B-swizzled K-major tile of `rows` rows.
GLR_WGMMA_HD constexpr uint32_t sw128_offset(int r, int k, int rows) {
  return uint32_t(k / 64) * uint32_t(rows) * 128u + uint32_t(r / 8) * kSw128Atom + uint32_t(r % 8) * 128u +
         ((uint32_t(k % 64 / 8) ^ uint32_t(r % 8)) << 4) + uint32_t(k % 8) * 2u;
}
/// SBO: 8-row groups are one atom apart. LBO is unused by the 128B K-major mode; 16 encodes 1, the
/// value the ISA says is assumed.
GLR_WGMMA_HD constexpr uint32_t sw128_sbo() { return kSw128Atom; }
GLR_WGMMA_HD constexpr uint32_t sw128_lbo() { return 16; }
/// Start address of K16 step `kk` of such a tile at `base` (1024-aligned): the step's 32 bytes within
/// the 128-byte row, un-swizzled (the tensor core applies the XOR to the address it forms), in the
/// column block kk/4.
GLR_WGMMA_HD constexpr uint32_t sw128_k16(uint32_t base, int kk, int rows) {
  return base + uint32_t(kk / 4) * uint32_t(rows) * 128u + uint32_t(kk % 4) * 32u;
}
GLR_WGMMA_HD constexpr uint64_t sw128_desc(uint32_t base, int kk, int rows) {
  return wgmma_desc(sw128_k16(base, kk, rows), sw128_lbo(), sw128_sbo(), Swizzle::b128);
}

// ---- 128-byte swizzle, MN-major (N-major B, imm-trans-b = 1), 16-bit elements ----
// For a B operand stored [K][N] with N contiguous (fwd_out's S_c and v tiles): the ISA's MN-major
// 128B canonical layout ((T,8,m),(8,k)) : ((1,T,LBO),(8T,SBO)), Swizzle<3,4,3> — 64 N elements
// (128 bytes) per k row, 8 k rows per 1024-byte atom. Element (k, n) sits where sw128_offset puts
// row k, column n of a `krows`-row tile (N/64 column blocks of krows × 128 bytes): the same bytes,
// read with the roles of the two dimensions swapped. SBO: 8-k groups, one atom apart; LBO: 64-wide
// N blocks, one column block (krows·128 bytes) apart (unused when N = 64).

/// Byte offset of element (k, n) of an N-major 128B-swizzled tile with `krows` k rows.
GLR_WGMMA_HD constexpr uint32_t mn_sw128_offset(int k, int n, int krows) { return sw128_offset(k, n, krows); }
GLR_WGMMA_HD constexpr uint32_t mn_sw128_sbo() { return kSw128Atom; }
GLR_WGMMA_HD constexpr uint32_t mn_sw128_lbo(int krows) { return uint32_t(krows) * 128u; }
/// Start of K16 step `kk`: two 8-k groups per step, so whole atoms (base offset stays 0).
GLR_WGMMA_HD constexpr uint32_t mn_sw128_k16(uint32_t base, int kk) { return base + uint32_t(kk) * 2u * kSw128Atom; }
GLR_WGMMA_HD constexpr uint64_t mn_sw128_desc(uint32_t base, int kk, int krows) {
  return wgmma_desc(mn_sw128_k16(base, kk), mn_sw128_lbo(krows), mn_sw128_sbo(), Swizzle::b128);
}

// ---- no swizzle (interleave), K-major, 16-bit elements: core matrices of 8 rows × 16 bytes ----
// A tile of `rows` rows and any K that is a multiple of 8: group g of 8 K elements at g·rows·16,
// row r of it at 16·r (so each 8 rows × 16 bytes is one core matrix of 128 contiguous bytes). The
// same layout as sm100's tile_offset (umma_desc.hpp); TMA writes it with boxes of 8 elements × rows.

/// Byte offset of element (r, k) in a no-swizzle K-major tile of `rows` rows.
GLR_WGMMA_HD constexpr uint32_t core_offset(int r, int k, int rows) {
  return uint32_t(k / 8) * uint32_t(rows) * 16u + uint32_t(r) * 16u + uint32_t(k % 8) * 2u;
}
/// LBO: core matrices adjacent along K are one group (rows·16 bytes) apart; SBO: core matrices
/// adjacent along M/N (8-row groups) 128 bytes apart.
GLR_WGMMA_HD constexpr uint32_t core_lbo(int rows) { return uint32_t(rows) * 16u; }
GLR_WGMMA_HD constexpr uint32_t core_sbo() { return 128; }
/// Start address of K16 step `kk` (two groups of 8 K elements per step).
GLR_WGMMA_HD constexpr uint32_t core_k16(uint32_t base, int kk, int rows) {
  return base + uint32_t(kk) * 2u * core_lbo(rows);
}
GLR_WGMMA_HD constexpr uint64_t core_desc(uint32_t base, int kk, int rows) {
  return wgmma_desc(core_k16(base, kk, rows), core_lbo(rows), core_sbo(), Swizzle::none);
}

// ---- register fragments of wgmma.mma_async.m64nNk16 (PTX ISA "Register Fragments", "Matrix
// Fragments for wgmma.mma_async.m64nNk16", figures "register fragment layout for matrix A" and "for
// accumulator matrix D"). `t` is the thread's index in its warpgroup (0..127): warp t/32 owns rows
// 16·(t/32) .. +15, and within it the mma.sync m16n8k16 pattern, lane/4 the row and lane%4 the
// column pair. ----

/// Accumulator D (fp32, 64 × N): register i in [0, N/2) of thread t holds (acc_row, acc_col).
/// Per 8 columns j = i/4: d[4j] = (g, 8j+2q), d[4j+1] = (g, 8j+2q+1), d[4j+2] = (g+8, 8j+2q),
/// d[4j+3] = (g+8, 8j+2q+1), with g = 16·warp + lane/4 and q = lane%4.
GLR_WGMMA_HD constexpr int acc_row(int t, int i) { return 16 * (t / 32) + (t % 32) / 4 + 8 * ((i >> 1) & 1); }
GLR_WGMMA_HD constexpr int acc_col(int t, int i) { return 8 * (i >> 2) + 2 * (t % 4) + (i & 1); }

/// A in registers (16-bit, 64 × 16 per K16 step): element e in [0, 8) of thread t, packed two per
/// 32-bit register (register e/2, element e%2 in the low half when 0), holds (a_row, a_col):
/// a0,a1 = (g, 2q..2q+1), a2,a3 = (g+8, 2q..), a4,a5 = (g, 2q+8..), a6,a7 = (g+8, 2q+8..).
GLR_WGMMA_HD constexpr int a_row(int t, int e) { return 16 * (t / 32) + (t % 32) / 4 + 8 * ((e >> 1) & 1); }
GLR_WGMMA_HD constexpr int a_col(int t, int e) { return 2 * (t % 4) + (e & 1) + 8 * (e >> 2); }

}  // namespace glr::cuda::sm90
