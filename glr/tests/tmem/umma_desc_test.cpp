// The sm100 backward's MMA operands and descriptors (include/glr/cuda/sm100/umma_desc.hpp), checked
// without a GPU: every descriptor field decoded from the bit positions of the PTX ISA's tables; an
// emulated TMA tile load (box {8, 1, chunk} of a [rows, H, D] tensor, written row-major into shared
// memory, out-of-bounds elements zero) exactly as the kernel's producer issues it into the ring's
// slots; and an emulated tcgen05.mma (kind::f16, K-major, no swizzle: element (m, k) of a K16 step
// at start + (m/8)·SBO + (k/8)·LBO + (m%8)·16 + (k%8)·2) over those tiles (the plan's shared-memory
// offsets, tile_k16 per step), which must give DV = dO·vᵀ and A = q·kᵀ. What this cannot check is
// whether the hardware reads the tables the same way: that needs a Blackwell GPU (docs/blackwell.md).
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <random>
#include <set>
#include <vector>

#include "glr/cuda/sm100/pipeline.hpp"
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
    for (int rows : {t::kCM, t::kMmaM}) {
      const SmemDesc d = decode(t::smem_desc(addr, t::tile_lbo(rows), t::tile_sbo()));
      EXPECT_EQ(d.start, addr);
      EXPECT_EQ(d.lbo, uint32_t(rows) * 16);  // K direction: one TMA box of `rows` rows × 16 bytes
      EXPECT_EQ(d.sbo, 128u);                 // M/N direction: 8 rows × 16 bytes
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
  for (int rows : {t::kCM, t::kMmaM}) {
    std::set<int> seen;
    for (int r = 0; r < rows; ++r)
      for (int k = 0; k < t::kBK; ++k) {
        const int o = t::tile_offset(r, k, rows);
        EXPECT_EQ(o % 2, 0);
        EXPECT_GE(o, 0);
        EXPECT_LT(o, rows * t::kBK * 2);
        seen.insert(o);
      }
    EXPECT_EQ(int(seen.size()), rows * t::kBK);
  }
}

TEST(UmmaDesc, TmemAddressPutsLaneHighColumnLow) {
  EXPECT_EQ(t::tmem_addr(0x00000040u, 32, 16), 0x00200050u);
  EXPECT_EQ(t::tmem_addr(0, 0, 0), 0u);
}

/// A [rows, H, D] bf16 tensor in global memory, and TMA's tile mode over it: box {8, 1, C} at
/// (x, h, r0) writes element (x + c, h, r0 + z) to dst + (z · 8 + c) · 2, zero when out of bounds.
/// Addressed through the host's tensor-map arguments (tma_spec: dims, byte strides), so a wrong
/// stride there gives wrong products here.
struct Global {
  int64_t rows, H, D;
  std::vector<uint16_t> data;  // [rows][H][D], contiguous
  uint16_t at(int64_t r, int64_t h, int64_t d) const {
    const t::TmaSpec sp = t::tma_spec(D, H, rows, 64, 2);
    if (r < 0 || uint64_t(r) >= sp.dims[2] || h < 0 || uint64_t(h) >= sp.dims[1] || d < 0 || uint64_t(d) >= sp.dims[0])
      return 0;
    return data[size_t((uint64_t(r) * sp.strides[1] + uint64_t(h) * sp.strides[0]) / 2 + uint64_t(d))];
  }
};
uint32_t tma_box(std::vector<uint8_t>& smem, uint32_t dst, const Global& g, int x, int h, int r0, int chunk) {
  EXPECT_EQ(dst % 128, 0u) << "TMA tile destination alignment";
  for (int z = 0; z < chunk; ++z)
    for (int c = 0; c < t::kBoxCols; ++c) {
      const uint16_t v = g.at(r0 + z, h, x + c);
      std::memcpy(&smem[dst + uint32_t(z * t::kBoxCols + c) * 2], &v, 2);
    }
  return uint32_t(chunk * t::kBoxCols * 2);  // the box's bytes, out-of-bounds ones included
}

/// The producer's fill of one item into ring slot `slot` (glr_bwd.cuh fill_next): per group g of
/// 8 columns, a box of the A-operand tensor at slot + g·tile_lbo(kMmaM) and one of the B-operand
/// tensor at slot + kOperandABytes + g·tile_lbo(kCM). Returns the bytes the boxes wrote.
uint32_t fill_item(std::vector<uint8_t>& smem, const t::SmemLayout& L, int slot, const Global& ga, const Global& gb,
                   int col0, int h, int r0, int chunk) {
  const uint32_t base = uint32_t(L.ring + slot * t::kSlotBytes);
  uint32_t bytes = 0;
  for (int g = 0; g < t::kBK / t::kBoxCols; ++g) {
    bytes += tma_box(smem, base + uint32_t(g) * t::tile_lbo(t::kMmaM), ga, col0 + g * t::kBoxCols, h, r0, chunk);
    bytes += tma_box(smem, base + uint32_t(t::kOperandABytes) + uint32_t(g) * t::tile_lbo(t::kCM), gb,
                     col0 + g * t::kBoxCols, h, r0, chunk);
  }
  return bytes;
}

/// DV = dO · vᵀ and A = q · kᵀ as the kernel loads and issues them: TMA boxes into every ring slot,
/// then the MMAs' descriptors over the slot, for every chunk; with tiles at the tensor's edges (a
/// V tile past V, rows past the end) whose out-of-bounds elements must come in as zeros.
TEST(UmmaDesc, EmulatedMmaOverTheKernelsTilesGivesTheProducts) {
  std::mt19937 rng(20);
  std::uniform_int_distribution<int> val(-8, 8);
  for (int chunk : {16, 32, 64})
    for (int pipe = t::kPipeStagesMin; pipe <= t::kPipeStagesMax; ++pipe) {
      const t::Config cfg{chunk, 64, 32, 1, true, true, pipe};
      const t::SmemLayout L = t::smem_layout(cfg);
      SCOPED_TRACE("chunk " + std::to_string(chunk) + " pipe " + std::to_string(pipe));
      ASSERT_EQ(L.ring % 1024, 0);
      ASSERT_LE(L.ring + pipe * t::kSlotBytes, L.full);
      ASSERT_LT(L.bytes, 1 << 18);  // the descriptor's 18-bit shared address
      std::vector<uint8_t> smem(size_t(L.bytes), 0xFF);
      // The kernel zeroes the ring once; TMA never writes the A operand's rows ≥ chunk.
      std::fill(smem.begin() + L.ring, smem.begin() + L.ring + pipe * t::kSlotBytes, uint8_t(0));
      // Tensors [rows, H, D]: D = 40 so the second 32-column tile is 8 in, 24 out of bounds;
      // rows = 3·chunk − 5 so the last chunk runs 5 rows past the end.
      const int64_t rows = 3 * chunk - 5, H = 3, D = 40;
      auto make = [&] {
        Global g{rows, H, D, std::vector<uint16_t>(size_t(rows * H * D))};
        for (auto& x : g.data) x = float_to_bf16_exact(float(val(rng)) * 0.25f);
        return g;
      };
      const Global ga = make(), gb = make();
      struct Item {
        int col0, h, r0;
      };
      const Item items[] = {{0, 1, 0}, {32, 2, chunk}, {32, 0, 2 * chunk}, {0, 2, 2 * chunk}, {32, 1, 1}};
      for (int n = 0; n < 5; ++n) {
        const Item it = items[n];
        const int slot = t::pipe_step(n, pipe).slot;
        SCOPED_TRACE("item " + std::to_string(n) + " slot " + std::to_string(slot));
        EXPECT_EQ(fill_item(smem, L, slot, ga, gb, it.col0, it.h, it.r0, chunk), t::pipe_tx_bytes(chunk));
        const uint32_t xo = uint32_t(L.ring + slot * t::kSlotBytes), yo = xo + uint32_t(t::kOperandABytes);
        // What the threads unpack (tile_offset) is the tensor's element, or 0 out of bounds.
        for (int r = 0; r < t::kMmaM; ++r)
          for (int k = 0; k < t::kBK; ++k) {
            uint16_t x;
            std::memcpy(&x, &smem[xo + uint32_t(t::tile_offset(r, k, t::kMmaM))], 2);
            ASSERT_EQ(x, r < chunk ? ga.at(it.r0 + r, it.h, it.col0 + k) : uint16_t(0)) << r << "," << k;
            if (r < chunk) {
              std::memcpy(&x, &smem[yo + uint32_t(t::tile_offset(r, k, t::kCM))], 2);
              ASSERT_EQ(x, gb.at(it.r0 + r, it.h, it.col0 + k)) << r << "," << k;
            }
          }
        const uint32_t id = t::idesc_f16(true, t::kMmaM, chunk);
        std::vector<float> D(size_t(128 * chunk), -1.0f);
        for (int kk = 0; kk < t::kBK / t::kMmaK; ++kk)
          emulate_mma(smem, t::smem_desc(t::tile_k16(xo, kk, t::kMmaM), t::tile_lbo(t::kMmaM), t::tile_sbo()),
                      t::smem_desc(t::tile_k16(yo, kk, t::kCM), t::tile_lbo(t::kCM), t::tile_sbo()), id, kk > 0, D,
                      xo, xo + uint32_t(t::kOperandABytes), yo, yo + uint32_t(t::kOperandBBytes));
        int wrong = 0;
        for (int i = 0; i < 128; ++i)
          for (int j = 0; j < chunk; ++j) {
            float r = 0.0f;
            if (i < chunk)
              for (int k = 0; k < t::kBK; ++k)
                r += bf16_to_float(ga.at(it.r0 + i, it.h, it.col0 + k)) * bf16_to_float(gb.at(it.r0 + j, it.h, it.col0 + k));
            if (D[i * chunk + j] != r && ++wrong <= 5)
              ADD_FAILURE() << "D[" << i << "][" << j << "] = " << D[i * chunk + j] << ", want " << r;
          }
        EXPECT_EQ(wrong, 0);
      }
    }
}

/// The emulation is not vacuous: the classic mix-up (LBO and SBO swapped) gives wrong products.
TEST(UmmaDesc, SwappedStridesAreCaught) {
  const int kw = t::kBK, rows = t::kMmaM;
  std::vector<uint8_t> smem(size_t(t::kSlotBytes), 0);
  std::vector<float> X(rows * kw), Y(64 * kw);
  for (int r = 0; r < rows; ++r)
    for (int k = 0; k < kw; ++k) {
      X[r * kw + k] = float((r + 2 * k) % 7 - 3);
      const uint16_t b = float_to_bf16_exact(X[r * kw + k]);
      std::memcpy(&smem[t::tile_offset(r, k, rows)], &b, 2);
    }
  const int yo = t::kOperandABytes;
  for (int r = 0; r < 64; ++r)
    for (int k = 0; k < kw; ++k) {
      Y[r * kw + k] = float((3 * r + k) % 5 - 2);
      const uint16_t b = float_to_bf16_exact(Y[r * kw + k]);
      std::memcpy(&smem[yo + t::tile_offset(r, k, t::kCM)], &b, 2);
    }
  std::vector<float> D(size_t(128 * 64));
  // Swapped: LBO = the 8-row step, SBO = the K step. Reads stay in bounds only by luck, so
  // collect the products without the bounds checks failing the test: use the full buffer range.
  const uint64_t ad = t::smem_desc(0, t::tile_sbo(), t::tile_lbo(rows));
  const uint64_t bd = t::smem_desc(uint32_t(yo), t::tile_sbo(), t::tile_lbo(t::kCM));
  std::vector<uint8_t> big(smem);
  big.resize(size_t(1) << 17, 0);  // the swapped strides reach past the slot
  emulate_mma(big, ad, bd, t::idesc_f16(true, 128, 64), false, D, 0, uint32_t(big.size()), 0, uint32_t(big.size()));
  int wrong = 0;
  for (int i = 0; i < 128; ++i)
    for (int j = 0; j < 64; ++j) {
      float r = 0.0f;
      for (int k = 0; k < 16; ++k) r += X[i * kw + k] * Y[j * kw + k];
      wrong += D[i * 64 + j] != r;
    }
  EXPECT_GT(wrong, 128 * 64 / 2);
}

/// The TMA boxes are not trusted blindly either: a box written with the B tile's group stride
/// into the A tile (the mix-up of tile_lbo(kCM) and tile_lbo(kMmaM)) gives wrong products.
TEST(UmmaDesc, WrongBoxStrideIsCaught) {
  const int chunk = 64;
  const t::SmemLayout L = t::smem_layout(t::Config{chunk, 64, 32, 1, true, true, 2});
  std::vector<uint8_t> smem(size_t(L.bytes), 0);
  Global g{64, 1, 32, std::vector<uint16_t>(64 * 32)};
  for (size_t i = 0; i < g.data.size(); ++i) g.data[i] = float_to_bf16_exact(float(int(i % 13) - 6));
  const uint32_t xo = uint32_t(L.ring), yo = xo + uint32_t(t::kOperandABytes);
  for (int gr = 0; gr < t::kBK / t::kBoxCols; ++gr) {
    tma_box(smem, xo + uint32_t(gr) * t::tile_lbo(t::kCM), g, gr * t::kBoxCols, 0, 0, chunk);  // wrong stride
    tma_box(smem, yo + uint32_t(gr) * t::tile_lbo(t::kCM), g, gr * t::kBoxCols, 0, 0, chunk);
  }
  std::vector<float> D(size_t(128 * chunk));
  const uint32_t id = t::idesc_f16(true, t::kMmaM, chunk);
  for (int kk = 0; kk < 2; ++kk)
    emulate_mma(smem, t::smem_desc(t::tile_k16(xo, kk, t::kMmaM), t::tile_lbo(t::kMmaM), t::tile_sbo()),
                t::smem_desc(t::tile_k16(yo, kk, t::kCM), t::tile_lbo(t::kCM), t::tile_sbo()), id, kk > 0, D, 0,
                uint32_t(smem.size()), 0, uint32_t(smem.size()));
  int wrong = 0;
  for (int i = 0; i < chunk; ++i)
    for (int j = 0; j < chunk; ++j) {
      float r = 0.0f;
      for (int k = 0; k < 32; ++k) r += bf16_to_float(g.at(i, 0, k)) * bf16_to_float(g.at(j, 0, k));
      wrong += D[i * chunk + j] != r;
    }
  EXPECT_GT(wrong, chunk * chunk / 2);
}

}  // namespace
