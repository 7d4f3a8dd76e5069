// The sm100 backward's MMA operands and descriptors (include/glr/cuda/sm100/umma_desc.hpp), checked
// without a GPU: every descriptor field decoded from the bit positions of the PTX ISA's tables, and
// an emulated tcgen05.mma (kind::f16, K-major, no swizzle: element (m, k) of a K16 step at
// start + (m/8)·SBO + (k/8)·LBO + (m%8)·16 + (k%8)·2) over the tiles exactly as the kernel writes
// them (operand_offset, the plan's shared-memory offsets, operand_k16 per step), which must give
// DV = dO·vᵀ and A = q·kᵀ. What this cannot check is whether the hardware reads the tables the same
// way: that needs a Blackwell GPU (docs/blackwell.md).
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <random>
#include <set>
#include <vector>

#include "glr/cuda/sm100/tmem_plan.hpp"
#include "glr/cuda/sm100/umma_desc.hpp"

namespace {

namespace t = glr::cuda::sm100;

struct SmemDesc {
  uint32_t start, lbo, sbo, version, base_offset, lbo_mode, layout;
  uint32_t reserved;  // every bit the table leaves 0
};
SmemDesc decode(uint64_t d) {
  SmemDesc s{};
  s.start = uint32_t(d & 0x3FFF) << 4;
  s.lbo = uint32_t((d >> 16) & 0x3FFF) << 4;
  s.sbo = uint32_t((d >> 32) & 0x3FFF) << 4;
  s.version = uint32_t((d >> 46) & 0x3);
  s.base_offset = uint32_t((d >> 49) & 0x7);
  s.lbo_mode = uint32_t((d >> 52) & 0x1);
  s.layout = uint32_t((d >> 61) & 0x7);
  s.reserved = uint32_t((d >> 14) & 0x3) | uint32_t((d >> 30) & 0x3) << 2 | uint32_t((d >> 48) & 0x1) << 4 |
               uint32_t((d >> 53) & 0xFF) << 5;
  return s;
}

struct InstrDesc {
  uint32_t sparse_id, sparse, saturate, d_fmt, a_fmt, b_fmt, neg_a, neg_b, a_major, b_major, n, m, max_shift;
  uint32_t reserved;
};
InstrDesc decode_i(uint32_t d) {
  InstrDesc s{};
  s.sparse_id = d & 0x3;
  s.sparse = (d >> 2) & 1;
  s.saturate = (d >> 3) & 1;
  s.d_fmt = (d >> 4) & 0x3;
  s.a_fmt = (d >> 7) & 0x7;
  s.b_fmt = (d >> 10) & 0x7;
  s.neg_a = (d >> 13) & 1;
  s.neg_b = (d >> 14) & 1;
  s.a_major = (d >> 15) & 1;
  s.b_major = (d >> 16) & 1;
  s.n = ((d >> 17) & 0x3F) << 3;
  s.m = ((d >> 24) & 0x1F) << 4;
  s.max_shift = (d >> 30) & 0x3;
  s.reserved = ((d >> 6) & 1) | ((d >> 23) & 1) << 1 | ((d >> 29) & 1) << 2;
  return s;
}

float bf16_to_float(uint16_t b) {
  const uint32_t u = uint32_t(b) << 16;
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}
uint16_t float_to_bf16_exact(float f) {  // only for values bf16 holds exactly
  uint32_t u;
  std::memcpy(&u, &f, 4);
  EXPECT_EQ(u & 0xFFFF, 0u) << f;
  return uint16_t(u >> 16);
}

/// D[m][n] (+)= Σ_{k<16} A(m,k) B(n,k), both K-major without swizzle, bf16, from the descriptors.
/// Every byte read must lie in [lo, hi) of its own tile.
void emulate_mma(const std::vector<uint8_t>& smem, uint64_t ad, uint64_t bd, uint32_t id, bool acc,
                 std::vector<float>& D, uint32_t a_lo, uint32_t a_hi, uint32_t b_lo, uint32_t b_hi) {
  const InstrDesc I = decode_i(id);
  const SmemDesc A = decode(ad), B = decode(bd);
  ASSERT_EQ(A.layout, 0u);
  ASSERT_EQ(B.layout, 0u);
  ASSERT_EQ(I.a_major, 0u);
  ASSERT_EQ(I.b_major, 0u);
  auto at = [&](const SmemDesc& s, int row, int k, uint32_t lo, uint32_t hi) {
    const uint32_t addr = s.start + uint32_t(row / 8) * s.sbo + uint32_t(k / 8) * s.lbo + uint32_t(row % 8) * 16 +
                          uint32_t(k % 8) * 2;
    EXPECT_GE(addr, lo);
    EXPECT_LT(addr + 1, hi);
    uint16_t b;
    std::memcpy(&b, &smem[addr], 2);
    return bf16_to_float(b);
  };
  for (uint32_t m = 0; m < I.m; ++m)
    for (uint32_t n = 0; n < I.n; ++n) {
      float s = acc ? D[m * I.n + n] : 0.0f;
      for (int k = 0; k < 16; ++k) s += at(A, int(m), k, a_lo, a_hi) * at(B, int(n), k, b_lo, b_hi);
      D[m * I.n + n] = s;
    }
}

TEST(UmmaDesc, SharedMemoryDescriptorFields) {
  for (uint32_t addr : {0u, 16u, 0x1A400u, 0x38000u})
    for (int kw : {16, 32, 64}) {
      const SmemDesc d = decode(t::smem_desc(addr, t::operand_lbo(kw), t::operand_sbo(kw)));
      EXPECT_EQ(d.start, addr);
      EXPECT_EQ(d.lbo, 128u);
      EXPECT_EQ(d.sbo, uint32_t(kw / 8) * 128);
      EXPECT_EQ(d.version, 1u);
      EXPECT_EQ(d.base_offset, 0u);
      EXPECT_EQ(d.lbo_mode, 0u);
      EXPECT_EQ(d.layout, 0u);  // no swizzle
      EXPECT_EQ(d.reserved, 0u);
    }
}

TEST(UmmaDesc, InstructionDescriptorFields) {
  for (bool bf16 : {true, false})
    for (int n : {16, 32, 64}) {
      const InstrDesc d = decode_i(t::idesc_f16(bf16, t::kMmaM, n));
      EXPECT_EQ(d.d_fmt, 1u);  // f32 accumulate
      EXPECT_EQ(d.a_fmt, bf16 ? 1u : 0u);
      EXPECT_EQ(d.b_fmt, bf16 ? 1u : 0u);
      EXPECT_EQ(d.m, 128u);
      EXPECT_EQ(d.n, uint32_t(n));
      EXPECT_EQ(d.sparse_id | d.sparse | d.saturate | d.neg_a | d.neg_b | d.a_major | d.b_major | d.max_shift, 0u);
      EXPECT_EQ(d.reserved, 0u);
    }
}

TEST(UmmaDesc, OperandLayoutIsABijectionOntoTheTile) {
  for (int rows : {64, 128})
    for (int kw : {16, 32}) {
      std::set<int> seen;
      for (int r = 0; r < rows; ++r)
        for (int k = 0; k < kw; ++k) {
          const int o = t::operand_offset(r, k, kw);
          EXPECT_EQ(o % 2, 0);
          EXPECT_GE(o, 0);
          EXPECT_LT(o, rows * kw * 2);
          seen.insert(o);
        }
      EXPECT_EQ(int(seen.size()), rows * kw);
    }
}

TEST(UmmaDesc, TmemAddressPutsLaneHighColumnLow) {
  EXPECT_EQ(t::tmem_addr(0x00000040u, 32, 16), 0x00200050u);
  EXPECT_EQ(t::tmem_addr(0, 0, 0), 0u);
}

/// DV = dO · vᵀ and A = q · kᵀ as the kernel issues them, for every chunk and the plan's offsets.
TEST(UmmaDesc, EmulatedMmaOverTheKernelsTilesGivesTheProducts) {
  std::mt19937 rng(20);
  std::uniform_int_distribution<int> val(-8, 8);
  for (int chunk : {16, 32, 64}) {
    const t::Config cfg{chunk, 64, 32, 1, true, true};
    const t::SmemLayout L = t::smem_layout(cfg);
    SCOPED_TRACE("chunk " + std::to_string(chunk));
    ASSERT_EQ(L.dOb % 16, 0);
    ASSERT_EQ(L.vb % 16, 0);
    ASSERT_EQ(L.qb % 16, 0);
    ASSERT_EQ(L.kb % 16, 0);
    ASSERT_LT(L.bytes, 1 << 18);  // the descriptor's 18-bit shared address
    std::vector<uint8_t> smem(size_t(L.bytes), 0xFF);
    // Logical tiles: X[rows][32] (M operand, 128 rows, rows ≥ chunk zero) and Y[64][32].
    const int kw = 32;
    struct Pair {
      int xo, yo;
    };
    for (Pair p : {Pair{L.dOb, L.vb}, Pair{L.qb, L.kb}}) {
      std::vector<float> X(128 * kw, 0.0f), Y(64 * kw, 0.0f);
      for (int r = 0; r < 128; ++r)
        for (int k = 0; k < kw; ++k) X[r * kw + k] = r < chunk ? float(val(rng)) * 0.25f : 0.0f;
      for (int r = 0; r < 64; ++r)
        for (int k = 0; k < kw; ++k) Y[r * kw + k] = float(val(rng)) * 0.5f;
      for (int r = 0; r < 128; ++r)
        for (int k = 0; k < kw; ++k) {
          const uint16_t b = float_to_bf16_exact(X[r * kw + k]);
          std::memcpy(&smem[p.xo + t::operand_offset(r, k, kw)], &b, 2);
        }
      for (int r = 0; r < 64; ++r)
        for (int k = 0; k < kw; ++k) {
          const uint16_t b = float_to_bf16_exact(Y[r * kw + k]);
          std::memcpy(&smem[p.yo + t::operand_offset(r, k, kw)], &b, 2);
        }
      const uint32_t id = t::idesc_f16(true, t::kMmaM, chunk);
      std::vector<float> D(size_t(128 * chunk), -1.0f);
      for (int kk = 0; kk < kw / t::kMmaK; ++kk)
        emulate_mma(smem, t::smem_desc(t::operand_k16(uint32_t(p.xo), kk), t::operand_lbo(kw), t::operand_sbo(kw)),
                    t::smem_desc(t::operand_k16(uint32_t(p.yo), kk), t::operand_lbo(kw), t::operand_sbo(kw)), id,
                    kk > 0, D, uint32_t(p.xo), uint32_t(p.xo + 128 * kw * 2), uint32_t(p.yo),
                    uint32_t(p.yo + 64 * kw * 2));
      int wrong = 0;
      for (int i = 0; i < 128; ++i)
        for (int j = 0; j < chunk; ++j) {
          float r = 0.0f;
          for (int k = 0; k < kw; ++k) r += X[i * kw + k] * Y[j * kw + k];
          if (D[i * chunk + j] != r && ++wrong <= 5)
            ADD_FAILURE() << "D[" << i << "][" << j << "] = " << D[i * chunk + j] << ", want " << r;
        }
      EXPECT_EQ(wrong, 0);
    }
  }
}

/// The emulation is not vacuous: the classic mix-up (LBO and SBO swapped) gives wrong products.
TEST(UmmaDesc, SwappedStridesAreCaught) {
  const int kw = 32, rows = 128;
  std::vector<uint8_t> smem(size_t(rows * kw * 2 + 64 * kw * 2), 0);
  std::vector<float> X(rows * kw), Y(64 * kw);
  for (int r = 0; r < rows; ++r)
    for (int k = 0; k < kw; ++k) {
      X[r * kw + k] = float((r + 2 * k) % 7 - 3);
      const uint16_t b = float_to_bf16_exact(X[r * kw + k]);
      std::memcpy(&smem[t::operand_offset(r, k, kw)], &b, 2);
    }
  const int yo = rows * kw * 2;
  for (int r = 0; r < 64; ++r)
    for (int k = 0; k < kw; ++k) {
      Y[r * kw + k] = float((3 * r + k) % 5 - 2);
      const uint16_t b = float_to_bf16_exact(Y[r * kw + k]);
      std::memcpy(&smem[yo + t::operand_offset(r, k, kw)], &b, 2);
    }
  std::vector<float> D(size_t(128 * 64));
  // Swapped: LBO = the 8-row step, SBO = the K step. Reads stay in bounds only by luck, so
  // collect the products without the bounds checks failing the test: use the full buffer range.
  const uint64_t ad = t::smem_desc(0, t::operand_sbo(kw), t::operand_lbo(kw));
  const uint64_t bd = t::smem_desc(uint32_t(yo), t::operand_sbo(kw), t::operand_lbo(kw));
  emulate_mma(smem, ad, bd, t::idesc_f16(true, 128, 64), false, D, 0, uint32_t(smem.size()), 0,
              uint32_t(smem.size()));
  int wrong = 0;
  for (int i = 0; i < 128; ++i)
    for (int j = 0; j < 64; ++j) {
      float r = 0.0f;
      for (int k = 0; k < 16; ++k) r += X[i * kw + k] * Y[j * kw + k];
      wrong += D[i * 64 + j] != r;
    }
  EXPECT_GT(wrong, 128 * 64 / 2);
}

}  // namespace
