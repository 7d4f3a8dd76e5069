// kcv::Terms (docs/nonfinite-classes.md): the kinds of terms of an expansion and the classes they
// allow; checked rule by rule, then against fp32 evaluations of small random expansions in every
// summation order and in factored forms (every class an order gives must be allowed), and in
// compare(), where the classes replace the second order.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <random>

#include "kcv/error_model.hpp"
#include "kcv/terms.hpp"

namespace kcv {
namespace {

constexpr double kTiny = 0x1p-126;
const double inf = INFINITY, nan = NAN;

uint8_t classes_of(std::initializer_list<Terms> terms) {
  Terms s;
  for (const Terms& t : terms) s += t;
  return s.classes(kTiny);
}
Terms f(double x) { return Terms::factor(x); }

uint8_t class_bit(double x) { return static_cast<uint8_t>(1u << static_cast<unsigned>(classify(x))); }

TEST(Terms, FactorsAndProducts) {
  EXPECT_EQ(f(2).kinds, Terms::pos);
  EXPECT_EQ(f(-2).kinds, Terms::neg);
  EXPECT_EQ(f(0).kinds, Terms::zero);
  EXPECT_EQ(f(inf).kinds, Terms::pos_inf);
  EXPECT_EQ(f(-inf).kinds, Terms::neg_inf);
  EXPECT_EQ(f(nan).kinds, Terms::nan);
  EXPECT_EQ(Terms::exp_factor(-inf).kinds, Terms::zero);
  EXPECT_EQ(Terms::exp_factor(inf).kinds, Terms::pos_inf);
  EXPECT_EQ(Terms::exp_factor(-3).kinds, Terms::pos);
  EXPECT_EQ((f(-2) * f(inf)).kinds, Terms::neg_inf);
  EXPECT_EQ((f(-inf) * f(-inf)).kinds, Terms::pos_inf);
  EXPECT_EQ((f(0) * f(inf)).kinds, Terms::zero_inf);
  EXPECT_EQ((f(0) * f(inf) * f(5)).kinds, Terms::zero_inf);
  EXPECT_EQ((f(nan) * f(0)).kinds, Terms::nan);
  EXPECT_EQ((-(f(2) + f(-inf))).kinds, Terms::neg | Terms::pos_inf);
  // (a + b)·(c + d) holds the four products a·c, a·d, b·c, b·d.
  EXPECT_EQ(((f(1) + f(inf)) * (f(-1) + f(2))).kinds, Terms::pos | Terms::neg | Terms::pos_inf | Terms::neg_inf);
  EXPECT_TRUE((Terms{} * f(inf)).empty());
  // Smallest partial products: 0.5·1e-20 among the finite factors of the infinite term.
  EXPECT_DOUBLE_EQ((f(0.5) * f(1e-20) * f(inf) * f(3)).lo_inf, 0.5e-20);
}

TEST(Terms, ClassRules) {
  EXPECT_EQ(classes_of({f(1), f(-2)}), kClassFinite);
  EXPECT_EQ(Terms{}.classes(kTiny), kClassFinite);  // the empty sum is 0
  EXPECT_EQ(classes_of({f(1), f(2) * f(inf)}), kClassPosInf);
  // Two infinities of one sign: that infinity in every order.
  EXPECT_EQ(classes_of({f(2) * f(inf), f(3) * f(inf), f(-1)}), kClassPosInf);
  // Of both signs: NaN or either infinity.
  EXPECT_EQ(classes_of({f(2) * f(inf), f(-3) * f(inf)}), kClassNonFinite);
  // 0·Inf: NaN; beside a +Inf term that shares the infinity, (0 + c)·Inf is +Inf.
  EXPECT_EQ(classes_of({f(0) * f(inf), f(1)}), kClassNaN);
  EXPECT_EQ(classes_of({f(0) * f(inf), f(2) * f(inf)}), kClassNaN | kClassPosInf);
  // A NaN factor anywhere: NaN only.
  EXPECT_EQ(classes_of({f(nan) * f(0), f(2) * f(inf), f(-2) * f(inf)}), kClassNaN);
  // A maybe-NaN factor: NaN beside the class of the rest.
  EXPECT_EQ((f(1) + f(2).maybe_nan()).classes(kTiny), kClassFinite | kClassNaN);
  EXPECT_EQ((f(-inf) + f(2).maybe_nan()).classes(kTiny), kClassNegInf | kClassNaN);
  EXPECT_EQ(f(2).maybe_nan(false).classes(kTiny), kClassFinite);
  // An infinite term whose finite factors may be flushed to zero: 0·Inf in that order.
  EXPECT_EQ((f(1e-30) * f(1e-10) * f(inf)).classes(kTiny), kClassPosInf | kClassNaN);
  EXPECT_EQ((f(1e-30) * f(1e-10) * f(inf)).classes(0x1p-149 / 4), kClassPosInf);
  EXPECT_EQ((f(1e-30) * f(1e3) * f(inf)).classes(kTiny), kClassPosInf);
}

// NOTES: random expansions of 1–4 terms of 1–3 factors drawn from finite values, zeros and the
// three non-finite values, each term times a common factor, evaluated in fp32 in every permutation of a left-to-right sum, in a
// balanced tree, and factored (a common factor pulled out of the sum); the class of every
// evaluation must be allowed. Factors small enough to underflow make the flush rule matter.
TEST(Terms, EveryEvaluationOrderLandsInTheAllowedClasses) {
  std::mt19937_64 rng(2100);
  // NOTES: finite products stay within fp32's range (overflow of finite terms is the error model's
  // magnitude rule, not this one); 3e-20 underflows in products of three.
  const double pool[] = {1.5, -2.0, 0.75, -0.5, 3e-20, -3e-20, 0.0, inf, -inf, nan};
  auto draw = [&] { return pool[rng() % std::size(pool)]; };
  int checked = 0, nonfinite = 0;
  for (int trial = 0; trial < 20000; ++trial) {
    const int nt = 1 + int(rng() % 4);
    std::vector<std::vector<double>> terms(nt);
    for (auto& t : terms) {
      t.resize(1 + rng() % 3);
      for (double& x : t) x = draw();
    }
    // A common factor, pulled out of every term in the factored evaluation.
    const double common = (rng() % 2) ? draw() : 1.0;
    Terms expansion;
    for (const auto& t : terms) {
      Terms p = f(common);
      for (double x : t) p = p * f(x);
      expansion += p;
    }
    const uint8_t allowed = expansion.classes(kTiny);
    auto product = [&](const std::vector<double>& t, bool with_common) {
      float p = with_common ? float(common) : 1.0f;
      for (double x : t) p *= float(x);
      return p;
    };
    std::vector<int> order(nt);
    std::iota(order.begin(), order.end(), 0);
    do {
      float s = 0;
      for (int j : order) s += product(terms[j], true);
      ASSERT_TRUE(allowed & class_bit(s)) << "trial " << trial << ": sum " << s << " allowed " << int(allowed);
      float inner = 0;
      for (int j : order) inner += product(terms[j], false);
      const float factored = float(common) * inner;
      ASSERT_TRUE(allowed & class_bit(factored)) << "trial " << trial << ": factored " << factored;
      ++checked;
      nonfinite += !std::isfinite(s);
    } while (std::next_permutation(order.begin(), order.end()));
    if (nt == 4) {  // (t0 + t1) + (t2 + t3)
      const float s = (product(terms[0], true) + product(terms[1], true)) +
                      (product(terms[2], true) + product(terms[3], true));
      ASSERT_TRUE(allowed & class_bit(s)) << "trial " << trial << ": tree " << s;
    }
  }
  EXPECT_GT(checked, 100000);
  EXPECT_GT(nonfinite, 10000);  // not vacuous: many evaluations are not finite
}

// Mixed signs do give both infinities and NaN in some order: the rule is not wider than that.
TEST(Terms, MixedSignsReachEveryNonFiniteClass) {
  // a·Inf − b·Inf: NaN summed, (a − b)·Inf factored, of the sign of a − b.
  const float a = 2, b = 3, I = INFINITY;
  EXPECT_TRUE(std::isnan(a * I - b * I));
  EXPECT_EQ((a - b) * I, -INFINITY);
  EXPECT_EQ((b - a) * I, INFINITY);
  EXPECT_EQ(classes_of({f(a) * f(inf), f(-b) * f(inf)}), kClassNonFinite);
}

RefTensor classified(const std::vector<double>& v, std::vector<uint8_t> classes) {
  RefTensor r;
  r.resize(v.size());
  r.value = v;
  r.classes = std::move(classes);
  return r;
}

TEST(Terms, CompareJudgesClassesFromTheExpansionNotTheOtherOrder) {
  const HostTensor got = HostTensor::from_values(DType::f32, {4}, {NAN, -INFINITY, 1.0, NAN});
  // The reference's own values: +Inf, +Inf, 1, 1.
  const RefTensor ref = classified({INFINITY, INFINITY, 1.0, 1.0},
                                   {kClassNonFinite, kClassPosInf, kClassFinite, kClassFinite | kClassNaN});
  // A second order that would accept everything is ignored where the reference classifies.
  const RefTensor alt = classified({NAN, -INFINITY, 1.0, NAN}, {});
  const Comparison c = compare(got, ref, &alt, DType::f32, 1, true);
  EXPECT_EQ(c.bad, 1) << c.describe("o", {4});
  ASSERT_EQ(c.first.size(), 1u);
  EXPECT_EQ(c.first[0].index, 1);  // -Inf where only +Inf is allowed
  EXPECT_NE(c.first[0].what.find("expected +Inf"), std::string::npos) << c.first[0].what;
  // Finite where only infinities are allowed.
  const Comparison d = compare(HostTensor::from_values(DType::f32, {1}, {5.0}), classified({INFINITY}, {kClassNonFinite}),
                               nullptr, DType::f32, 1, true);
  EXPECT_EQ(d.bad, 1);
  // kClassFinite keeps the overflow rules: a reference beyond the output range is ±Inf.
  const Comparison e = compare(HostTensor::from_values(DType::f16, {1}, {INFINITY}), classified({1e6}, {kClassFinite}),
                               nullptr, DType::f32, 1, true);
  EXPECT_TRUE(e.ok()) << e.describe("o", {1});
  // And values are still judged where finite is allowed.
  const Comparison g = compare(HostTensor::from_values(DType::f32, {1}, {1.5}), classified({1.0}, {kClassFinite | kClassNaN}),
                               nullptr, DType::f32, 1, false);
  EXPECT_EQ(g.bad, 1);
  EXPECT_THROW(compare(got, classified({1, 1, 1, 1}, {kClassFinite}), nullptr, DType::f32, 1), std::invalid_argument);
}

}  // namespace
}  // namespace kcv
