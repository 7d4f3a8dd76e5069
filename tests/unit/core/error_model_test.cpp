// Error model mechanics on synthetic references: classes first, overflow expectations, the
// alternative order, underflow, the bound formula, and the capped diagnostics.
#include <gtest/gtest.h>

#include <cfloat>
#include <cmath>

#include "kcv/error_model.hpp"

namespace kcv {
namespace {

constexpr double u32 = 0x1p-24;

RefTensor ref_of(const std::vector<double>& v, double mag = 0, double depth = 0, double amp = 0) {
  RefTensor r;
  r.resize(v.size());
  r.value = v;
  std::fill(r.mag.begin(), r.mag.end(), mag);
  std::fill(r.depth.begin(), r.depth.end(), depth);
  std::fill(r.amp.begin(), r.amp.end(), amp);
  return r;
}

HostTensor f32(const std::vector<double>& v) { return HostTensor::from_values(DType::f32, {int64_t(v.size())}, v); }

Comparison cmp(const HostTensor& got, const RefTensor& ref, const RefTensor* alt = nullptr, double c = 1) {
  return compare(got, ref, alt, DType::f32, c);
}

TEST(ErrorModel, Classify) {
  EXPECT_EQ(classify(1.0), ValueClass::finite);
  EXPECT_EQ(classify(-0.0), ValueClass::finite);
  EXPECT_EQ(classify(DBL_MAX), ValueClass::finite);
  EXPECT_EQ(classify(NAN), ValueClass::nan);
  EXPECT_EQ(classify(-NAN), ValueClass::nan);
  EXPECT_EQ(classify(INFINITY), ValueClass::pos_inf);
  EXPECT_EQ(classify(-INFINITY), ValueClass::neg_inf);
  EXPECT_STREQ(class_name(ValueClass::nan), "NaN");
  EXPECT_STREQ(class_name(ValueClass::pos_inf), "+Inf");
  EXPECT_STREQ(class_name(ValueClass::neg_inf), "-Inf");
  EXPECT_STREQ(class_name(ValueClass::finite), "finite");
}

TEST(ErrorModel, BoundFormula) {
  const RefTensor r = ref_of({3.0}, /*mag=*/10, /*depth=*/100, /*amp=*/7);
  // c·u_acc·(n·m + amp) + u_out·|r|, plus the (tiny) underflow terms.
  const double want = 2 * u32 * (100 * 10 + 7) + u32 * 3;
  EXPECT_NEAR(allowed_error(r, 0, DType::f32, DType::f32, 2), want, 1e-40);
  // bf16 output, f32 accumulate: the output rounding dominates.
  EXPECT_NEAR(allowed_error(r, 0, DType::bf16, DType::f32, 2), 2 * u32 * 1007 + 0x1p-8 * 3, 1e-30);
}

TEST(ErrorModel, ValuesWithinAndOutsideTheBound) {
  // bound = u·(1·4 + 0) + u·|1| = 5u at r = 1.
  const RefTensor r = ref_of({1.0, 1.0, 1.0}, 4, 1);
  const double bound = allowed_error(r, 0, DType::f32, DType::f32, 1);
  EXPECT_NEAR(bound, 5 * u32, 1e-20);
  // f32 values near 1 are spaced 2u above 1 and u below it.
  EXPECT_TRUE(cmp(f32({1.0, 1 + 2 * u32, 1 - 4 * u32}), r).ok());
  const Comparison bad = cmp(f32({1.0, 1 + 6 * u32, 1 - 5 * u32}), r);
  EXPECT_EQ(bad.bad, 1);
  EXPECT_EQ(bad.checked, 3);
  ASSERT_EQ(bad.first.size(), 1u);
  EXPECT_EQ(bad.first[0].index, 1);
  EXPECT_EQ(bad.first[0].what, "error > bound");
  EXPECT_DOUBLE_EQ(bad.first[0].expected, 1.0);
  EXPECT_NEAR(bad.worst_ratio, 6.0 / 5.0, 1e-6);
  EXPECT_EQ(bad.worst_index, 1);
  // The worst ratio is reported on a pass too.
  const Comparison good = cmp(f32({1.0, 1 + 2 * u32, 1.0}), r);
  EXPECT_NEAR(good.worst_ratio, 2.0 / 5.0, 1e-6);
  EXPECT_EQ(good.worst_index, 1);
}

TEST(ErrorModel, ClassesComparedFirst) {
  const RefTensor r = ref_of({1.0, NAN, INFINITY, -INFINITY, 0.0}, 1, 1);
  EXPECT_TRUE(cmp(f32({1.0, NAN, INFINITY, -INFINITY, 0.0}), r).ok());
  // NaN laundered into a number, a number where NaN is due, the wrong infinity.
  for (int i = 0; i < 5; ++i) {
    std::vector<double> g = {1.0, NAN, INFINITY, -INFINITY, 0.0};
    g[i] = i == 1 ? 0.0 : i == 2 ? -INFINITY : NAN;
    const Comparison c = cmp(f32(g), r);
    ASSERT_EQ(c.bad, 1) << i;
    EXPECT_EQ(c.first[0].index, i);
    EXPECT_NE(c.first[0].what.find("class"), std::string::npos) << c.first[0].what;
  }
  const Comparison c = cmp(f32({NAN, NAN, INFINITY, -INFINITY, 0.0}), r);
  EXPECT_EQ(c.first[0].what, "class NaN, expected finite");
  // classes_only ignores the value of finite elements, never their class.
  EXPECT_TRUE(compare(f32({5.0, NAN, INFINITY, -INFINITY, 7.0}), r, nullptr, DType::f32, 1, true).ok());
  EXPECT_FALSE(compare(f32({5.0, 1.0, INFINITY, -INFINITY, 7.0}), r, nullptr, DType::f32, 1, true).ok());
}

TEST(ErrorModel, OverflowIsExpectedAsInf) {
  // 1e39 is beyond fp32: expected +Inf, and the largest float is not close enough.
  const RefTensor far = ref_of({1e39, -1e39}, 1e39, 1);
  EXPECT_TRUE(cmp(f32({INFINITY, -INFINITY}), far).ok());
  EXPECT_FALSE(cmp(f32({FLT_MAX, -FLT_MAX}), far).ok());
  EXPECT_FALSE(cmp(f32({NAN, INFINITY}), far).ok());

  // Just beyond FLT_MAX + half an ulp (rounds to Inf) but within the bound of FLT_MAX: either.
  const double beyond = 0x1p128 - 0x1p102;
  ASSERT_EQ(round_to(DType::f32, beyond), INFINITY);
  const RefTensor edge = ref_of({beyond}, 0, 0);
  EXPECT_TRUE(cmp(f32({FLT_MAX}), edge).ok());
  EXPECT_TRUE(cmp(f32({INFINITY}), edge).ok());
  EXPECT_FALSE(cmp(f32({-INFINITY}), edge).ok());
  EXPECT_FALSE(cmp(f32({NAN}), edge).ok());
  // Just below FLT_MAX, within the bound: a legitimate kernel may overflow to Inf.
  const RefTensor below = ref_of({FLT_MAX * (1 - 0x1p-30)}, 0, 0);
  EXPECT_TRUE(cmp(f32({INFINITY}), below).ok());
  EXPECT_TRUE(cmp(f32({FLT_MAX}), below).ok());
  // Far below FLT_MAX: Inf is wrong.
  EXPECT_FALSE(cmp(f32({INFINITY}), ref_of({1e37}, 1e37, 1)).ok());
}

TEST(ErrorModel, OverflowOfEitherSignWhereTheBoundSpansBoth) {
  // An f16 output of a cancelling fp32 sum: r = -4.36e6 with an error bound wider than
  // |r| + 65504, so a legitimate kernel may land past +65504 and store +Inf.
  const double r = -4.36e6, mag = 4e13, depth = 1;  // bound = c·u·(4·4e13) ≈ 9.5e6
  const RefTensor wide = ref_of({r}, mag, depth * 4);
  const HostTensor pos_inf = HostTensor::from_values(DType::f16, {1}, {INFINITY});
  const HostTensor neg_inf = HostTensor::from_values(DType::f16, {1}, {-INFINITY});
  ASSERT_GT(allowed_error(wide, 0, DType::f16, DType::f32, 1), std::abs(r) + 65504);
  EXPECT_TRUE(compare(neg_inf, wide, nullptr, DType::f32, 1).ok());
  EXPECT_TRUE(compare(pos_inf, wide, nullptr, DType::f32, 1).ok());
  // A narrow bound keeps the sign: +Inf for a large negative r is wrong.
  const RefTensor narrow = ref_of({r}, 4.36e6, 1);
  EXPECT_TRUE(compare(neg_inf, narrow, nullptr, DType::f32, 1).ok());
  EXPECT_FALSE(compare(pos_inf, narrow, nullptr, DType::f32, 1).ok());
}

TEST(ErrorModel, IntermediateOverflowAdmitsNonFinite) {
  // 3e38 + 3e38 - 3e38: exact 3e38, but fp32 partial sums may overflow in some orders.
  const RefTensor r = ref_of({3e38}, 9e38, 3);
  EXPECT_TRUE(cmp(f32({3e38}), r).ok());
  EXPECT_TRUE(cmp(f32({INFINITY}), r).ok());
  EXPECT_TRUE(cmp(f32({NAN}), r).ok());
  EXPECT_FALSE(cmp(f32({1e38}), r).ok());  // finite values are still judged
  // A single operation (depth 1) that overflows is exactly +Inf: NaN is wrong.
  EXPECT_FALSE(cmp(f32({NAN}), ref_of({6e38}, 6e38, 1)).ok());
}

TEST(ErrorModel, AlternativeOrderDisagreementIsHonored) {
  // Element 0: orders disagree (finite vs NaN): both accepted. Element 1: both NaN: only NaN.
  // Element 2: +Inf vs NaN.
  const RefTensor ref = ref_of({2.0, NAN, INFINITY}, 2, 1);
  const RefTensor alt = ref_of({NAN, NAN, NAN}, 2, 1);
  EXPECT_TRUE(cmp(f32({2.0, NAN, INFINITY}), ref, &alt).ok());
  EXPECT_TRUE(cmp(f32({NAN, NAN, NAN}), ref, &alt).ok());
  EXPECT_FALSE(cmp(f32({2.0, 2.0, INFINITY}), ref, &alt).ok());
  EXPECT_FALSE(cmp(f32({INFINITY, NAN, INFINITY}), ref, &alt).ok());
  EXPECT_FALSE(cmp(f32({2.0, NAN, -INFINITY}), ref, &alt).ok());
  // Without alt the disagreement is not known: NaN for element 0 fails.
  EXPECT_FALSE(cmp(f32({NAN, NAN, INFINITY}), ref).ok());
  // A finite value accepted only through alt is judged against alt's value and bound.
  const RefTensor ref2 = ref_of({NAN}, 1, 1), alt2 = ref_of({5.0}, 1, 1);
  EXPECT_TRUE(cmp(f32({5.0}), ref2, &alt2).ok());
  EXPECT_FALSE(cmp(f32({6.0}), ref2, &alt2).ok());
  // Where both orders are finite, the value is judged against the first (the forward order):
  // another order's value is not a second chance.
  const RefTensor ref3 = ref_of({2.0}, 1, 1), alt3 = ref_of({5.0}, 1, 1);
  EXPECT_TRUE(cmp(f32({2.0}), ref3, &alt3).ok());
  EXPECT_FALSE(cmp(f32({5.0}), ref3, &alt3).ok());
  // At the top of the range the value is still judged: FLT_MAX itself, and far from it.
  const RefTensor top = ref_of({FLT_MAX}, 0, 0);
  EXPECT_TRUE(cmp(f32({FLT_MAX}), top, &top).ok());
  EXPECT_FALSE(cmp(f32({FLT_MAX / 2}), top, &top).ok());
}

TEST(ErrorModel, UnderflowIsNotARelativeError) {
  // An exact result far below fp32's subnormals stores as 0: every IEEE kernel returns 0.
  EXPECT_TRUE(cmp(f32({0.0}), ref_of({1e-50}, 0, 0)).ok());
  // A product of two subnormal-scale values underflows in fp32 (depth 4 products).
  EXPECT_TRUE(cmp(f32({0.0}), ref_of({4e-80}, 4e-80, 4)).ok());
  // But a representable subnormal result flushed to zero is wrong (FTZ).
  EXPECT_FALSE(cmp(f32({0.0}), ref_of({1e-40}, 1e-40, 1)).ok());
}

TEST(ErrorModel, ListingIsCappedAndDescribed) {
  std::vector<double> ref(12, 1.0), got(12, 1.0);
  for (int i = 2; i < 12; ++i) got[i] = 2.0;
  got[7] = 9.0;
  got[3] = NAN;
  const HostTensor g = HostTensor::from_values(DType::f32, {3, 4}, got);
  const Comparison c = compare(g, ref_of(ref, 1, 1), nullptr, DType::f32, 1, false, 3);
  EXPECT_EQ(c.bad, 10);
  EXPECT_EQ(c.checked, 12);
  ASSERT_EQ(c.first.size(), 3u);
  EXPECT_EQ(c.first[0].index, 2);
  EXPECT_EQ(c.first[1].index, 3);
  EXPECT_EQ(c.worst_index, 7);
  const std::string d = c.describe("y", g.shape);
  EXPECT_NE(d.find("out 'y'"), std::string::npos) << d;
  EXPECT_NE(d.find("10 of 12"), std::string::npos) << d;
  EXPECT_NE(d.find("[0,2]"), std::string::npos) << d;  // first mismatch, with coordinates
  EXPECT_NE(d.find("class NaN"), std::string::npos) << d;
  EXPECT_NE(d.find("[1,3]"), std::string::npos) << d;  // where the worst is
  EXPECT_LT(d.size(), 420u) << d;

  // Very many mismatches with long numbers: still capped.
  std::vector<double> big(1000, 0.1234567), off(1000, 0.7654321);
  const HostTensor gb = HostTensor::from_values(DType::f32, {10, 10, 10}, off);
  const Comparison cb = compare(gb, ref_of(big, 1, 1), nullptr, DType::f32, 1, false, 50);
  EXPECT_EQ(cb.bad, 1000);
  EXPECT_LT(cb.describe("a_rather_long_output_name", gb.shape).size(), 420u);

  const Comparison ok = compare(g, ref_of(got, 1, 1), nullptr, DType::f32, 1);
  EXPECT_TRUE(ok.ok());
  EXPECT_NE(ok.describe("y", g.shape).find("all 12"), std::string::npos);
}

// docs/tolerance-independence.md: beside its plain twin, an element the model rejects passes when
// it is no further from the model than the twin's worst element, or shares the twin's class there.
TEST(ErrorModel, PlainTwinAllowsNoMoreThanTheTwinsOwnWorst) {
  // mag 1, depth 1, c 1: bound = u32 (1 + 1) + u32·|r| ≈ 3·u32 at r = 1.
  const RefTensor ref = ref_of({1.0, 1.0, 1.0, 1.0}, 1, 1);
  const double bound = allowed_error(ref, 0, DType::f32, DType::f32, 1);
  const HostTensor twin = f32({1.0 + 4 * bound, 1.0, NAN, 1.0});  // worst 4 × the bound, a NaN
  const Comparison own = cmp(twin, ref);
  ASSERT_FALSE(own.ok());
  EXPECT_NEAR(own.worst_ratio, 4.0, 0.2);
  const PlainTwin plain{&twin, own.worst_ratio};

  // Within 4 × the bound anywhere (not only where the twin is off), and the twin's NaN: accepted.
  const HostTensor near = f32({1.0 + 2 * bound, 1.0 - 3 * bound, NAN, 1.0});
  EXPECT_FALSE(cmp(near, ref).ok());
  const Comparison with = compare(near, ref, nullptr, DType::f32, 1, false, 5, &plain);
  EXPECT_TRUE(with.ok()) << with.describe("y", near.shape);
  EXPECT_EQ(with.as_plain, 3);
  EXPECT_GT(with.as_plain_worst, 2.5);
  EXPECT_LT(with.worst_ratio, 1.0);  // the worst element is that of the strictly judged ones

  // 8 × the bound, a NaN where the twin is finite, +Inf where it is NaN: rejected.
  for (const std::vector<double>& bad : {std::vector<double>{1.0, 1.0 + 8 * bound, NAN, 1.0},
                                         std::vector<double>{1.0, 1.0, NAN, NAN},
                                         std::vector<double>{1.0, 1.0, INFINITY, 1.0}}) {
    const HostTensor g = f32(bad);
    const Comparison c = compare(g, ref, nullptr, DType::f32, 1, false, 5, &plain);
    EXPECT_EQ(c.bad, 1) << c.describe("y", g.shape);
  }

  // A twin within the model allows nothing more than the model does.
  const HostTensor exact = f32({1.0, 1.0, 1.0, 1.0});
  const PlainTwin strict{&exact, 1.0};
  EXPECT_EQ(compare(near, ref, nullptr, DType::f32, 1, false, 5, &strict).bad, 3);

  const HostTensor shorter = f32({1.0});
  const PlainTwin wrong{&shorter, 1.0};
  EXPECT_THROW(compare(near, ref, nullptr, DType::f32, 1, false, 5, &wrong), std::invalid_argument);
}

TEST(ErrorModel, IndexStringAndSizeChecks) {
  EXPECT_EQ(index_string(5, {2, 3}), "[1,2]");
  EXPECT_EQ(index_string(0, {4}), "[0]");
  EXPECT_EQ(index_string(23, {2, 3, 4}), "[1,2,3]");
  EXPECT_THROW(cmp(f32({1.0, 2.0}), ref_of({1.0})), std::invalid_argument);
  const RefTensor alt = ref_of({1.0});
  EXPECT_THROW(cmp(f32({1.0, 2.0}), ref_of({1.0, 2.0}), &alt), std::invalid_argument);
}

TEST(ErrorModel, ReadsThroughTheOutputLayout) {
  // A strided output (offset 1, pitch 3) is judged by logical index, not by storage position.
  const HostTensor g = HostTensor::from_values(DType::f32, {2, 2}, {1, 2, 3, 4}).relayout({3, 1}, 1, std::byte{0xFF});
  EXPECT_TRUE(cmp(g, ref_of({1, 2, 3, 4}, 1, 1)).ok());
  EXPECT_FALSE(cmp(g, ref_of({1, 2, 4, 3}, 1, 1)).ok());
}

}  // namespace
}  // namespace kcv
