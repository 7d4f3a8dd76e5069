// HostTensor: spans, strides, offsets, relayout with gaps, bitwise comparisons.
#include <gtest/gtest.h>

#include <cmath>
#include <cstddef>
#include <cstring>
#include <stdexcept>

#include "kcv/tensor.hpp"

namespace kcv {
namespace {

TEST(Tensor, ShapesAndStrides) {
  EXPECT_EQ(numel({2, 3, 4}), 24);
  EXPECT_EQ(numel({}), 1);
  EXPECT_EQ(numel({5, 0, 3}), 0);
  EXPECT_EQ(contiguous_strides({2, 3, 4}), (std::vector<int64_t>{12, 4, 1}));
  EXPECT_EQ(contiguous_strides({7}), (std::vector<int64_t>{1}));
  EXPECT_EQ(shape_string({128, 512}), "[128,512]");
  EXPECT_EQ(shape_string({}), "[]");
}

TEST(Tensor, ZerosAndFromValues) {
  HostTensor z = HostTensor::zeros(DType::f16, {3, 5});
  EXPECT_EQ(z.span_elements(), 15);
  EXPECT_EQ(z.span_bytes(), 30u);
  EXPECT_EQ(z.storage.size(), 30u);
  EXPECT_TRUE(z.is_contiguous());
  for (double v : z.values()) EXPECT_EQ(v, 0.0);

  HostTensor t = HostTensor::from_values(DType::f16, {2, 2}, {0.1, 1.0, -2.5, 70000.0});
  EXPECT_EQ(t.get(0), round_to(DType::f16, 0.1));
  EXPECT_NE(t.get(0), 0.1);  // really rounded to f16
  EXPECT_EQ(t.get(2), -2.5);
  EXPECT_EQ(t.get(3), INFINITY);  // beyond f16's range
  EXPECT_THROW(HostTensor::from_values(DType::f32, {2, 2}, {1, 2, 3}), std::invalid_argument);
  EXPECT_THROW(HostTensor::zeros(DType::f32, {-1}), std::invalid_argument);
}

TEST(Tensor, SpanOfStridedOffsetLayouts) {
  HostTensor t;
  t.dtype = DType::f32;
  t.shape = {3, 4};
  t.stride = {10, 2};
  t.offset = 5;
  EXPECT_EQ(t.span_elements(), 5 + 2 * 10 + 3 * 2 + 1);
  EXPECT_FALSE(t.is_contiguous());
  EXPECT_EQ(t.storage_index(0), 5);
  EXPECT_EQ(t.storage_index(7), 5 + 1 * 10 + 3 * 2);  // [1,3]
  t.shape = {3, 0};
  EXPECT_EQ(t.span_elements(), 0);
  HostTensor scalar = HostTensor::zeros(DType::f64, {});
  EXPECT_EQ(scalar.span_elements(), 1);
  EXPECT_EQ(scalar.numel(), 1);
}

// storage_index takes i itself for a row-major tensor (no division per dimension): the same index
// as the per-dimension formula for every layout, row-major or not, and the same refusals.
TEST(Tensor, StorageIndexAgreesWithTheStrideFormulaForEveryLayout) {
  auto by_formula = [](const HostTensor& t, int64_t i) {
    int64_t s = t.offset;
    for (std::size_t d = t.shape.size(); d-- > 0;) {
      s += (i % t.shape[d]) * t.stride[d];
      i /= t.shape[d];
    }
    return s;
  };
  struct Layout {
    Shape shape;
    std::vector<int64_t> stride;
    int64_t offset;
  };
  const Layout layouts[] = {
      {{3, 4}, {4, 1}, 0},         // row-major
      {{3, 4}, {4, 1}, 2},         // row-major strides at an offset: not row-major
      {{3, 4}, {1, 3}, 0},         // transposed
      {{3, 4}, {10, 2}, 0},        // gaps
      {{3, 1, 4}, {4, 99, 1}, 0},  // a size-1 dimension's stride is never used: row-major
      {{1, 5}, {7, 1}, 0},         // the same, leading
      {{2, 3}, {0, 1}, 0},         // broadcast rows (stride 0): not row-major
      {{6}, {2}, 1},               // every other element
      {{}, {}, 0},                 // a scalar
      {{2, 3, 4}, {12, 4, 1}, 0},  // row-major, three dimensions
      {{2, 3, 4}, {12, 1, 3}, 0},  // the last two transposed
  };
  for (const Layout& l : layouts) {
    HostTensor t;
    t.shape = l.shape;
    t.stride = l.stride;
    t.offset = l.offset;
    for (int64_t i = 0; i < t.numel(); ++i)
      EXPECT_EQ(t.storage_index(i), by_formula(t, i)) << shape_string(l.shape) << " offset " << l.offset << " i " << i;
    EXPECT_THROW(t.storage_index(t.numel()), std::out_of_range);
    EXPECT_THROW(t.storage_index(-1), std::out_of_range);
  }
}

TEST(Tensor, RelayoutKeepsValuesAndFillsGaps) {
  std::vector<double> v;
  for (int i = 0; i < 4 * 3; ++i) v.push_back(i * 0.5 - 2);
  const HostTensor a = HostTensor::from_values(DType::f32, {4, 3}, v);

  // Column-major with a row pitch of 5 (gaps), base offset 1 (misaligned by one element).
  const HostTensor b = a.relayout({1, 5}, 1, std::byte{0xAB});
  EXPECT_EQ(b.span_elements(), 1 + 3 * 1 + 2 * 5 + 1);
  EXPECT_EQ(b.storage.size(), b.span_bytes());
  EXPECT_EQ(b.values(), a.values());
  EXPECT_TRUE(b.same_bits(a));
  EXPECT_EQ(b.first_bit_difference(a), -1);
  EXPECT_FALSE(b.is_contiguous());
  // Gap bytes: element slots no logical index maps to.
  std::vector<bool> used(b.span_elements(), false);
  for (int64_t i = 0; i < b.numel(); ++i) used[b.storage_index(i)] = true;
  int gaps = 0;
  for (int64_t s = 0; s < b.span_elements(); ++s) {
    if (used[s]) continue;
    ++gaps;
    for (int k = 0; k < 4; ++k) EXPECT_EQ(b.storage[s * 4 + k], std::byte{0xAB});
  }
  EXPECT_EQ(gaps, b.span_elements() - b.numel());
  EXPECT_GT(gaps, 0);

  // Back to contiguous: identical storage.
  const HostTensor c = b.relayout(contiguous_strides(b.shape), 0, std::byte{0});
  EXPECT_TRUE(c.is_contiguous());
  EXPECT_EQ(c.storage, a.storage);

  // A layout that aliases two elements cannot hold them: refused.
  EXPECT_THROW(a.relayout({0, 1}, 0, std::byte{0}), std::invalid_argument);
  EXPECT_THROW(a.relayout({1}, 0, std::byte{0}), std::invalid_argument);
}

TEST(Tensor, GetSetThroughLayout) {
  HostTensor a = HostTensor::zeros(DType::bf16, {2, 3}).relayout({4, 1}, 3, std::byte{0xFF});
  a.set(4, 1.00390625);  // 1 + 2^-8: a tie in bf16 -> even (1.0)
  EXPECT_EQ(a.get(4), 1.0);
  a.set(5, 3.0);
  EXPECT_EQ(a.get(5), 3.0);
  EXPECT_EQ(a.storage_index(5), 3 + 4 + 2);
  EXPECT_THROW(a.get(6), std::out_of_range);
  EXPECT_THROW(a.set(-1, 0), std::out_of_range);

  HostTensor b = HostTensor::zeros(DType::bf16, {2, 3});
  EXPECT_EQ(b.first_bit_difference(a), 4);
  b.set(4, 1.0);
  b.set(5, 3.0);
  EXPECT_TRUE(b.same_bits(a));
  // -0 and +0 are equal values but different bits.
  b.set(0, -0.0);
  EXPECT_EQ(b.first_bit_difference(a), 0);
  // Another dtype or shape is never the same bits.
  EXPECT_FALSE(HostTensor::zeros(DType::f32, {2, 3}).same_bits(HostTensor::zeros(DType::f32, {3, 2})));
  EXPECT_FALSE(HostTensor::zeros(DType::f32, {2}).same_bits(HostTensor::zeros(DType::i32, {2})));
}

TEST(Tensor, ValuesAreEveryElementsGetForEveryDtypeAndLayout) {
  // values() has its own loops for contiguous f32 and f64: each must give what get(i) gives, bit
  // for bit (NaN, -0, subnormals, the largest finite), on 111 elements and through a layout.
  const double specials[] = {std::nan(""), -0.0, 0x1p-140, 0x1p-1030, 3.4028234663852886e38, -1e300, 1.5};
  for (DType t : {DType::f32, DType::f64, DType::f16, DType::bf16, DType::i32, DType::i64, DType::u8}) {
    HostTensor a = HostTensor::zeros(t, {3, 37});
    for (int64_t i = 0; i < a.numel(); ++i) a.set(i, is_floating(t) ? specials[i % 7] * (1 + i) : double(i % 100));
    for (const HostTensor& x : {a, a.relayout({40, 1}, 2, std::byte{0x7F})}) {
      const std::vector<double> v = x.values();
      ASSERT_EQ(v.size(), 111u);
      for (int64_t i = 0; i < x.numel(); ++i) {
        const double g = x.get(i);
        EXPECT_EQ(std::memcmp(&v[static_cast<std::size_t>(i)], &g, sizeof(double)), 0)
            << dtype_name(t) << " element " << i << ": " << v[static_cast<std::size_t>(i)] << " vs " << g;
      }
      EXPECT_NE(v[6], 0.0);  // not vacuous: the values are there
    }
  }
}

}  // namespace
}  // namespace kcv
