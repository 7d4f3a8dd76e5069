// The sm90 wgmma operand layouts and descriptors (include/glr/cuda/sm90/wgmma_desc.hpp), checked
// without a GPU: every descriptor field decoded from the bit positions of the PTX ISA's "Matrix
// Descriptor Format"; the tensor core's shared-memory addressing emulated from the ISA's "Canonical
// Layouts" table (K-major, element (r, k) of a K16 step at start + (r%8)·pitch + (r/8)·SBO +
// (k%8)·2 + (k/8)·(LBO without swizzle, 16 with), then Swizzle<B,4,3> on the byte address), which
// must find every element of 64×K and N×K tiles exactly where the layout functions put it (and, for
// N-major B operands, the MN-major table: n at (n%8)·2 + (n/8 % W)·16 + (n/8W)·LBO, k at (k%8)·16W +
// (k/8)·SBO, W 16-byte units per swizzled line); the
// register fragment maps a bijection onto their tiles; and negative controls (a wrong SBO, LBO, K16
// advance or swizzle mode) that the same check must reject. What this cannot check is whether the
// hardware reads the tables the same way: glr_cuda_tests' GlrCudaSm90Wgmma.* does, on an H200.
#include <gtest/gtest.h>

#include <cstdint>
#include <sstream>
#include <string>
#include <vector>

#include "glr/cuda/sm90/wgmma_desc.hpp"

namespace {

namespace w = glr::cuda::sm90;

struct Desc {
  uint32_t start, lbo, sbo, base_offset, swizzle;
  uint64_t reserved;  // every bit the table leaves undefined: [14,16), [30,32), [46,49), [52,62)
};
Desc decode(uint64_t d) {
  Desc s{};
  s.start = uint32_t(d & 0x3FFF) << 4;
  s.lbo = uint32_t((d >> 16) & 0x3FFF) << 4;
  s.sbo = uint32_t((d >> 32) & 0x3FFF) << 4;
  s.base_offset = uint32_t((d >> 49) & 0x7);
  s.swizzle = uint32_t((d >> 62) & 0x3);
  s.reserved = d & ((uint64_t(0x3) << 14) | (uint64_t(0x3) << 30) | (uint64_t(0x7) << 46) | (uint64_t(0x3FF) << 52));
  return s;
}

/// The byte address the tensor core reads element (r, k), k in [0, 16), of a K-major 16-bit operand
/// at (PTX ISA, "Canonical Layouts", K-major rows; base offset 0 only).
uint32_t hw_addr(const Desc& d, int r, int k) {
  // Swizzle<B,4,3>: B = 3, 2, 1 for the 128-, 64-, 32-byte modes (1, 2, 3), 0 without.
  const uint32_t b = d.swizzle == 1 ? 3 : d.swizzle == 2 ? 2 : d.swizzle == 3 ? 1 : 0;
  const uint32_t row_pitch = 16u << b;                  // 1T, 2T, 4T, 8T (T = 16 bytes)
  const uint32_t k_half = d.swizzle == 0 ? d.lbo : 16;  // the 8x2 tile's second column
  const uint32_t addr = d.start + uint32_t(r % 8) * row_pitch + uint32_t(r / 8) * d.sbo + uint32_t(k % 8) * 2 +
                        uint32_t(k / 8) * k_half;
  return addr ^ (((addr >> 7) & ((1u << b) - 1)) << 4);
}

/// Descriptor of K16 step kk of a tile at `base`; the tests swap in wrong ones.
using DescFn = uint64_t (*)(uint32_t base, int kk, int rows);

/// For every element (r, k) of a rows × K tile at `base`: the address the emulated tensor core reads
/// it from in step k/16 must be where `offset` stores it. Returns the mismatches (first 5 in `why`).
int misplaced(DescFn desc, uint32_t (*offset)(int, int, int), uint32_t base, int rows, int K, std::string* why) {
  std::ostringstream os;
  int bad = 0;
  for (int r = 0; r < rows; ++r)
    for (int k = 0; k < K; ++k) {
      const Desc d = decode(desc(base, k / 16, rows));
      const uint32_t read = hw_addr(d, r, k % 16);
      const uint32_t stored = base + offset(r, k, rows);
      if (read != stored && bad++ < 5)
        os << "(r " << r << ", k " << k << "): read at " << read << ", stored at " << stored << "; ";
    }
  if (why) *why = os.str();
  return bad;
}

/// The byte address the tensor core reads element (k, n), k in [0, 16), of an MN-major (N-major,
/// imm-trans-b = 1) 16-bit B operand at (PTX ISA, "Canonical Layouts", MN-major rows; base offset 0).
uint32_t hw_addr_mn(const Desc& d, int k, int n) {
  const uint32_t b = d.swizzle == 1 ? 3 : d.swizzle == 2 ? 2 : d.swizzle == 3 ? 1 : 0;
  uint32_t addr;
  if (b == 0) {  // ((T,1,m),(8,k)) : ((1,T,SBO),(1T,LBO))
    addr = d.start + uint32_t(n % 8) * 2 + uint32_t(n / 8) * d.sbo + uint32_t(k % 8) * 16 + uint32_t(k / 8) * d.lbo;
  } else {  // ((T,W,m),(8,k)) : ((1,T,LBO),(W·T,SBO)), W = 2^b 16-byte units per line
    const uint32_t W = 1u << b;
    addr = d.start + uint32_t(n % 8) * 2 + uint32_t(n / 8 % W) * 16 + uint32_t(n / (8 * int(W))) * d.lbo +
           uint32_t(k % 8) * 16 * W + uint32_t(k / 8) * d.sbo;
  }
  return addr ^ (((addr >> 7) & ((1u << b) - 1)) << 4);
}

/// The N-major counterpart of misplaced(): every element (k, n) of a K × N tile at `base`.
int misplaced_mn(DescFn desc, uint32_t (*offset)(int, int, int), uint32_t base, int K, int N, std::string* why) {
  std::ostringstream os;
  int bad = 0;
  for (int k = 0; k < K; ++k)
    for (int n = 0; n < N; ++n) {
      const uint32_t read = hw_addr_mn(decode(desc(base, k / 16, K)), k % 16, n);
      const uint32_t stored = base + offset(k, n, K);
      if (read != stored && bad++ < 5)
        os << "(k " << k << ", n " << n << "): read at " << read << ", stored at " << stored << "; ";
    }
  if (why) *why = os.str();
  return bad;
}

/// Every element of the tile at a distinct 2-byte slot of [0, rows·K·2).
void expect_bijection(uint32_t (*offset)(int, int, int), int rows, int K) {
  std::vector<int> seen(size_t(rows) * K, 0);
  for (int r = 0; r < rows; ++r)
    for (int k = 0; k < K; ++k) {
      const uint32_t o = offset(r, k, rows);
      ASSERT_EQ(o % 2, 0u);
      ASSERT_LT(o / 2, seen.size()) << "r " << r << " k " << k;
      ++seen[o / 2];
    }
  for (size_t i = 0; i < seen.size(); ++i) ASSERT_EQ(seen[i], 1) << "slot " << i;
}

TEST(WgmmaDesc, FieldsAtTheirBits) {
  const uint64_t d = w::wgmma_desc(0x2A40, 0x120, 0x3F0, w::Swizzle::b64, 5);
  const Desc s = decode(d);
  EXPECT_EQ(s.start, 0x2A40u);
  EXPECT_EQ(s.lbo, 0x120u);
  EXPECT_EQ(s.sbo, 0x3F0u);
  EXPECT_EQ(s.base_offset, 5u);
  EXPECT_EQ(s.swizzle, 2u);
  EXPECT_EQ(s.reserved, 0u);
  // Each field alone, at its documented position.
  EXPECT_EQ(w::wgmma_desc(16, 0, 0, w::Swizzle::none), uint64_t(1));
  EXPECT_EQ(w::wgmma_desc(0, 16, 0, w::Swizzle::none), uint64_t(1) << 16);
  EXPECT_EQ(w::wgmma_desc(0, 0, 16, w::Swizzle::none), uint64_t(1) << 32);
  EXPECT_EQ(w::wgmma_desc(0, 0, 0, w::Swizzle::none, 1), uint64_t(1) << 49);
  EXPECT_EQ(w::wgmma_desc(0, 0, 0, w::Swizzle::b128), uint64_t(1) << 62);
  EXPECT_EQ(w::wgmma_desc(0, 0, 0, w::Swizzle::b64), uint64_t(2) << 62);
  EXPECT_EQ(w::wgmma_desc(0, 0, 0, w::Swizzle::b32), uint64_t(3) << 62);
  // matrix-descriptor-encode(x) = (x & 0x3FFFF) >> 4: the largest start fills 14 bits, nothing spills.
  EXPECT_EQ(w::wgmma_desc(0x3FFF0, 0, 0, w::Swizzle::none), uint64_t(0x3FFF));
  EXPECT_EQ(w::wgmma_desc(0x40010, 0, 0, w::Swizzle::none), uint64_t(1));
  // The ISA's worked example (K-major, no swizzle, tf32): LBO 64·4 encodes 16, SBO 32·4 encodes 8.
  const Desc ex = decode(w::wgmma_desc(0, 64 * 4, 32 * 4, w::Swizzle::none));
  EXPECT_EQ((w::wgmma_desc(0, 64 * 4, 32 * 4, w::Swizzle::none) >> 16) & 0x3FFF, 16u);
  EXPECT_EQ((w::wgmma_desc(0, 64 * 4, 32 * 4, w::Swizzle::none) >> 32) & 0x3FFF, 8u);
  EXPECT_EQ(ex.lbo, 256u);
}

TEST(WgmmaDesc, LayoutDescriptors) {
  // 128B: SBO one 1024-byte atom, LBO encoded 1 ("assumed 1"), mode 1, base offset 0.
  const Desc a = decode(w::sw128_desc(0x2400, 0, 64));
  EXPECT_EQ(a.start, 0x2400u);
  EXPECT_EQ(a.sbo, 1024u);
  EXPECT_EQ((w::sw128_desc(0x2400, 0, 64) >> 16) & 0x3FFF, 1u);
  EXPECT_EQ(a.swizzle, 1u);
  EXPECT_EQ(a.base_offset, 0u);
  EXPECT_EQ(a.reserved, 0u);
  // K16 steps advance 32 bytes inside the row, then a column block of rows·128 bytes.
  EXPECT_EQ(decode(w::sw128_desc(0x2400, 3, 64)).start, 0x2400u + 96);
  EXPECT_EQ(decode(w::sw128_desc(0x2400, 4, 64)).start, 0x2400u + 64 * 128);
  EXPECT_EQ(decode(w::sw128_desc(0x2400, 5, 128)).start, 0x2400u + 128 * 128 + 32);
  // No swizzle: LBO one 8-column group (rows·16), SBO 128, mode 0.
  const Desc c = decode(w::core_desc(0x1000, 1, 128));
  EXPECT_EQ(c.start, 0x1000u + 2 * 128 * 16);
  EXPECT_EQ(c.lbo, 128u * 16);
  EXPECT_EQ(c.sbo, 128u);
  EXPECT_EQ(c.swizzle, 0u);
  EXPECT_EQ(c.reserved, 0u);
}

TEST(WgmmaDesc, Sw128IsTheSwizzleAtom) {
  // Row r of an atom holds its 16-byte chunk c at chunk c ^ r: the XOR of address bits [4,7) with
  // bits [7,10) applied to the unswizzled offset.
  for (int r = 0; r < 8; ++r)
    for (int k = 0; k < 64; ++k)
      EXPECT_EQ(w::sw128_offset(r, k, 8), w::sw128(uint32_t(r) * 128 + uint32_t(k) * 2)) << r << " " << k;
  for (int rows : {64, 128}) {
    expect_bijection(w::sw128_offset, rows, 64);
    expect_bijection(w::sw128_offset, rows, 128);
  }
}

TEST(WgmmaDesc, CoreLayoutIsABijection) {
  for (int rows : {64, 128})
    for (int K : {16, 64, 128}) expect_bijection(w::core_offset, rows, K);
}

// The positive check: A tiles (64 rows) and B tiles (N = 64, 128 rows), K = 64 and 128, at a base
// that is 1024-aligned but not 0 (and, for the no-swizzle layout, only 128-aligned).
TEST(WgmmaDesc, TensorCoreReadsWhereTheLayoutStores) {
  std::string why;
  for (int rows : {64, 128})
    for (int K : {64, 128}) {
      EXPECT_EQ(misplaced(w::sw128_desc, w::sw128_offset, 0x2400, rows, K, &why), 0)
          << "sw128 rows " << rows << " K " << K << ": " << why;
      EXPECT_EQ(misplaced(w::core_desc, w::core_offset, 0x2400, rows, K, &why), 0)
          << "core rows " << rows << " K " << K << ": " << why;
      EXPECT_EQ(misplaced(w::core_desc, w::core_offset, 0x2480, rows, K, &why), 0)
          << "core rows " << rows << " K " << K << " at 0x2480: " << why;
    }
}

// Negative controls: each wrong descriptor must be caught on some element of every tile.
uint64_t sw128_sbo_512(uint32_t base, int kk, int rows) {
  return w::wgmma_desc(w::sw128_k16(base, kk, rows), w::sw128_lbo(), 512, w::Swizzle::b128);
}
uint64_t sw128_unswizzled(uint32_t base, int kk, int rows) {
  return w::wgmma_desc(w::sw128_k16(base, kk, rows), w::sw128_lbo(), w::sw128_sbo(), w::Swizzle::none);
}
uint64_t sw128_as_64b(uint32_t base, int kk, int rows) {
  return w::wgmma_desc(w::sw128_k16(base, kk, rows), w::sw128_lbo(), w::sw128_sbo(), w::Swizzle::b64);
}
uint64_t sw128_step_64(uint32_t base, int kk, int rows) {  // K16 advance of 64 bytes, not 32
  return w::wgmma_desc(base + uint32_t(kk / 4) * uint32_t(rows) * 128u + uint32_t(kk % 4) * 64u, w::sw128_lbo(),
                       w::sw128_sbo(), w::Swizzle::b128);
}
uint64_t core_lbo_sbo_swapped(uint32_t base, int kk, int rows) {
  return w::wgmma_desc(w::core_k16(base, kk, rows), w::core_sbo(), w::core_lbo(rows), w::Swizzle::none);
}
uint64_t core_as_sw128(uint32_t base, int kk, int rows) {
  return w::wgmma_desc(w::core_k16(base, kk, rows), w::core_lbo(rows), w::core_sbo(), w::Swizzle::b128);
}

TEST(WgmmaDesc, WrongDescriptorsAreCaught) {
  for (int rows : {64, 128})
    for (int K : {64, 128}) {
      EXPECT_GT(misplaced(sw128_sbo_512, w::sw128_offset, 0x2400, rows, K, nullptr), 0) << rows << " " << K;
      EXPECT_GT(misplaced(sw128_unswizzled, w::sw128_offset, 0x2400, rows, K, nullptr), 0) << rows << " " << K;
      EXPECT_GT(misplaced(sw128_as_64b, w::sw128_offset, 0x2400, rows, K, nullptr), 0) << rows << " " << K;
      EXPECT_GT(misplaced(sw128_step_64, w::sw128_offset, 0x2400, rows, K, nullptr), 0) << rows << " " << K;
      EXPECT_GT(misplaced(core_lbo_sbo_swapped, w::core_offset, 0x2400, rows, K, nullptr), 0) << rows << " " << K;
      EXPECT_GT(misplaced(core_as_sw128, w::core_offset, 0x2400, rows, K, nullptr), 0) << rows << " " << K;
    }
  // A 128B tile placed off its 1024-byte boundary (base offset 0 then lies): caught too.
  EXPECT_GT(misplaced(w::sw128_desc, w::sw128_offset, 0x2480, 64, 64, nullptr), 0);
}

// N-major B (fwd_out's S_c [K][V] and v [C][V]): N = 64 and 128 (two 64-wide blocks, LBO apart).
TEST(WgmmaDesc, NMajorReadsWhereTheLayoutStores) {
  const Desc d = decode(w::mn_sw128_desc(0x2400, 1, 64));
  EXPECT_EQ(d.start, 0x2400u + 2048);
  EXPECT_EQ(d.lbo, 64u * 128);
  EXPECT_EQ(d.sbo, 1024u);
  EXPECT_EQ(d.swizzle, 1u);
  EXPECT_EQ(d.reserved, 0u);
  std::string why;
  for (int K : {64, 128})
    for (int N : {64, 128}) {
      expect_bijection(w::mn_sw128_offset, K, N);
      EXPECT_EQ(misplaced_mn(w::mn_sw128_desc, w::mn_sw128_offset, 0x2400, K, N, &why), 0)
          << "K " << K << " N " << N << ": " << why;
    }
}

uint64_t mn_lbo_wrong(uint32_t base, int kk, int krows) {  // the 64-wide N blocks 1024 apart
  return w::wgmma_desc(w::mn_sw128_k16(base, kk), 1024, w::mn_sw128_sbo(), w::Swizzle::b128);
}
uint64_t mn_sbo_wrong(uint32_t base, int kk, int krows) {
  return w::wgmma_desc(w::mn_sw128_k16(base, kk), w::mn_sw128_lbo(krows), 2048, w::Swizzle::b128);
}
uint64_t mn_step_wrong(uint32_t base, int kk, int krows) {  // a K16 step of one atom, not two
  return w::wgmma_desc(base + uint32_t(kk) * 1024u, w::mn_sw128_lbo(krows), w::mn_sw128_sbo(), w::Swizzle::b128);
}

TEST(WgmmaDesc, WrongNMajorDescriptorsAreCaught) {
  for (int K : {64, 128}) {
    EXPECT_GT(misplaced_mn(mn_lbo_wrong, w::mn_sw128_offset, 0x2400, K, 128, nullptr), 0) << K;
    for (int N : {64, 128}) {
      EXPECT_GT(misplaced_mn(mn_sbo_wrong, w::mn_sw128_offset, 0x2400, K, N, nullptr), 0) << K << " " << N;
      EXPECT_GT(misplaced_mn(mn_step_wrong, w::mn_sw128_offset, 0x2400, K, N, nullptr), 0) << K << " " << N;
    }
  }
  // The trans-b flag matters: the N-major tile read as K-major (the tensor core's K-major table with
  // the N-major descriptor) is caught; so is a K-major tile read as N-major.
  int as_k = 0, as_mn = 0;
  for (int k = 0; k < 64; ++k)
    for (int n = 0; n < 64; ++n) {
      as_k += hw_addr(decode(w::mn_sw128_desc(0x2400, k / 16, 64)), n, k % 16) != 0x2400 + w::mn_sw128_offset(k, n, 64);
      as_mn += hw_addr_mn(decode(w::sw128_desc(0x2400, k / 16, 64)), k % 16, n) != 0x2400 + w::sw128_offset(n, k, 64);
    }
  EXPECT_GT(as_k, 0);
  EXPECT_GT(as_mn, 0);
}

TEST(WgmmaFragments, AccumulatorCoversTheTileOnce) {
  for (int N : {64, 128}) {
    std::vector<int> seen(size_t(64) * N, 0);
    for (int t = 0; t < 128; ++t)
      for (int i = 0; i < N / 2; ++i) {
        const int r = w::acc_row(t, i), c = w::acc_col(t, i);
        ASSERT_TRUE(r >= 0 && r < 64 && c >= 0 && c < N) << t << " " << i;
        ++seen[size_t(r) * N + c];
      }
    for (size_t e = 0; e < seen.size(); ++e) ASSERT_EQ(seen[e], 1) << "N " << N << " element " << e;
  }
  // Spot values from the ISA's figure: thread 0 holds (0,0),(0,1),(8,0),(8,1),(0,8)...; thread 37
  // (warp 1, lane 5) holds (17, 2) first; consecutive register pairs are adjacent columns.
  EXPECT_EQ(w::acc_row(0, 2), 8);
  EXPECT_EQ(w::acc_col(0, 4), 8);
  EXPECT_EQ(w::acc_row(37, 0), 17);
  EXPECT_EQ(w::acc_col(37, 0), 2);
  EXPECT_EQ(w::acc_col(127, 63), 127);
  EXPECT_EQ(w::acc_row(127, 63), 63);
}

TEST(WgmmaFragments, ARegistersCoverTheTileOnce) {
  std::vector<int> seen(64 * 16, 0);
  for (int t = 0; t < 128; ++t)
    for (int e = 0; e < 8; ++e) {
      const int r = w::a_row(t, e), c = w::a_col(t, e);
      ASSERT_TRUE(r >= 0 && r < 64 && c >= 0 && c < 16) << t << " " << e;
      ++seen[size_t(r) * 16 + c];
    }
  for (size_t e = 0; e < seen.size(); ++e) ASSERT_EQ(seen[e], 1) << "element " << e;
  EXPECT_EQ(w::a_row(5, 2), 9);  // a2 of lane 5: row g+8 = 9, column 2q = 2
  EXPECT_EQ(w::a_col(5, 2), 2);
  EXPECT_EQ(w::a_col(5, 5), 11);  // a5: column 2q+8+1
}

}  // namespace
