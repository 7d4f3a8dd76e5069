// The population test (docs/population-test.md): the random-walk scale, the statistic's rules
// (finite elements of a reduction, at least 64 of them), and its fairness and power on matmul at
// the shapes the gates use: every fp32 order passes at every K from 1 to 16384; TF32 (truncated
// and rounded) and bf16 operands fail at every K from 128 to 16384, where the worst-case bound
// alone stops seeing them.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <numeric>

#include "fp32_kernels.hpp"
#include "model_harness.hpp"

namespace kcv::testing {
namespace {

const Contract& matmul() { return *find_contract("matmul"); }

Bindings mnk(int64_t m, int64_t n, int64_t k) { return {{"M", m}, {"N", n}, {"K", k}}; }

/// The shapes at which the gates reach each depth: numerics at K = 128 (nominal), the shapes
/// sweep at K = 1000 (M = N = 128), the contract's extra shapes at 4096 and 16384.
std::vector<Bindings> gate_depths() {
  return {mnk(128, 128, 128), mnk(128, 128, 1000), mnk(64, 64, 4096), mnk(32, 32, 16384)};
}

const std::vector<std::string>& random_kinds() {
  static const std::vector<std::string> k = {value_kind::normal, value_kind::scaled_up, value_kind::scaled_down,
                                             value_kind::negated};
  return k;
}

Impl matmul_impl(const std::string& name, Sum how, bool fma, MatmulInputs inputs) {
  return {name, [=](const std::vector<HostTensor>& in, const Bindings& b) {
            return matmul_f32(in, b.at("M"), b.at("N"), b.at("K"), how, fma, inputs);
          }};
}

TEST(Population, RandomWalkScaleIsTheExpectedSumOfSquaredPartialSums) {
  // Over every order of the terms, the mean of sum_j s_j² (s_j the first j terms' sum) is
  // (n + 1)(2r² + q)/6; the scale adds q for the terms' own roundings.
  std::vector<double> p = {1.5, -2.0, 0.25, 3.0, -0.75};
  std::sort(p.begin(), p.end());
  const double n = static_cast<double>(p.size());
  const double r = std::accumulate(p.begin(), p.end(), 0.0);
  const double q = std::inner_product(p.begin(), p.end(), p.begin(), 0.0);
  double total = 0;
  int orders = 0;
  do {
    double s = 0;
    for (double x : p) {
      s += x;
      total += s * s;
    }
    ++orders;
  } while (std::next_permutation(p.begin(), p.end()));
  EXPECT_EQ(orders, 120);
  const double w = random_walk_scale(n, r, q);
  EXPECT_NEAR(w * w - q, total / orders, 1e-12 * total / orders);
  // Terms of one sign: about sqrt(n/3)·m, the sqrt(n) law; mean zero: about sqrt(n/2)·||p||_2.
  EXPECT_NEAR(random_walk_scale(3e6, 3e6, 3e6) / (std::sqrt(1e6) * 3e6), 1.0, 1e-3);
}

TEST(Population, ScaleFromDepthAndMagnitudeOrFromTheWalk) {
  const double u = 0x1p-24;
  RefTensor ref;
  ref.value = {3.0, 3.0, 3.0};
  ref.mag = {5.0, 5.0, 5.0};
  ref.depth = {16, 0, 16};
  ref.amp = {2.0, 0.0, 0.0};
  // Without a walk: sqrt(c·n)·m, amp taken whole (c·amp), the output's rounding u_out·|r|, in
  // quadrature; the underflow terms are below 1e-40.
  const double c = 2;
  const double want = std::sqrt(u * u * (c * 16 * 25 + (c * 2) * (c * 2)) + (u * 3) * (u * 3));
  EXPECT_NEAR(population_scale(ref, 0, DType::f32, DType::f32, c), want, 1e-12 * want);
  EXPECT_EQ(population_scale(ref, 1, DType::f32, DType::f32, c), 0.0);  // not a reduction
  // A bf16 output's own rounding dominates: sigma carries it (the bf16/f16 contracts' store).
  EXPECT_GT(population_scale(ref, 2, DType::bf16, DType::f32, c), 0x1p-8 * 3);
  // With a walk from the reference, it replaces sqrt(c·n)·m.
  ref.walk = {7.0, 7.0, 7.0};
  const double with_walk = std::sqrt(u * u * (49 + 16) + (u * 3) * (u * 3));
  EXPECT_NEAR(population_scale(ref, 0, DType::f32, DType::f32, c), with_walk, 1e-12 * with_walk);
}

TEST(Population, JudgesFiniteReductionElementsAndNeedsSixtyFour) {
  auto ref_of = [](int64_t n) {
    RefTensor r;
    r.value.assign(static_cast<std::size_t>(n), 1.0);
    r.mag.assign(static_cast<std::size_t>(n), 1.0);
    r.depth.assign(static_cast<std::size_t>(n), 1.0);
    return r;
  };
  // Every element 100 sigma off: judged (and failed) from 64 elements on, not below.
  for (int64_t n : {63, 64}) {
    const RefTensor ref = ref_of(n);
    const double s = population_scale(ref, 0, DType::f32, DType::f32, 1.0);
    std::vector<float> got(static_cast<std::size_t>(n), static_cast<float>(1.0 + 100 * s));
    const Population p = population_test(from_floats({n}, got), ref, DType::f32, 1.0);
    EXPECT_EQ(p.elements, n);
    EXPECT_NEAR(p.rms, 100, 1);
    EXPECT_EQ(p.ran(), n >= kPopulationMinElements);
    EXPECT_EQ(p.ok(), n < kPopulationMinElements);
    if (!p.ok()) {
      EXPECT_NE(p.describe("y", {n}).find("> λ = 4"), std::string::npos) << p.describe("y", {n});
    }
  }
  // Non-finite results and references are the class comparison's business; elements without a
  // depth (a KernelBench reference: its calibrated bound is all in amp) are not in the statistic.
  RefTensor ref = ref_of(100);
  std::vector<float> got(100, 1.0f);
  got[3] = NAN;
  got[4] = INFINITY;
  ref.value[5] = INFINITY;
  EXPECT_EQ(population_test(from_floats({100}, got), ref, DType::f32, 1.0).elements, 97);
  ref.depth.clear();
  EXPECT_EQ(population_test(from_floats({100}, got), ref, DType::f32, 1.0).elements, 0);
}

TEST(Population, MatmulFp32OrdersPassAtEveryDepth) {
  std::vector<Impl> legit;
  for (Sum s : legit_sums()) legit.push_back(matmul_impl(sum_name(s), s, false, MatmulInputs::fp32));
  legit.push_back(matmul_impl("fma sequential", Sum::sequential, true, MatmulInputs::fp32));
  std::vector<Bindings> shapes = gate_depths();
  shapes.push_back(mnk(32, 32, 1));
  shapes.push_back(mnk(32, 32, 16));
  // expect_all_pass judges the worst-case bound and, on these random kinds, the population test.
  report_margin("matmul legit worst err/bound (every depth)",
                expect_all_pass(matmul(), shapes, legit, {1, 2}, random_kinds()));
}

TEST(Population, MatmulReducedPrecisionFailsAtEveryDepth) {
  const std::vector<Impl> reduced = {
      matmul_impl("tf32 truncated", Sum::sequential, false, MatmulInputs::tf32),
      matmul_impl("tf32 round-to-nearest", Sum::sequential, false, MatmulInputs::tf32_rn),
      matmul_impl("bf16 operands", Sum::sequential, true, MatmulInputs::bf16),
      matmul_impl("tf32 round-to-nearest, pairwise", Sum::pairwise, false, MatmulInputs::tf32_rn)};
  const Contract& c = matmul();
  for (const Bindings& b : gate_depths())
    for (const Impl& impl : reduced) {
      double least = INFINITY;
      for (uint64_t seed : {1, 2, 3}) {
        Rng rng(seed);
        const auto in = c.make_inputs(b, rng, value_kind::normal);
        const Refs refs(c, b, in);
        const HostTensor got = impl.run(in, b);
        const Population pop = refs.population(c, got);
        EXPECT_TRUE(pop.ran());
        EXPECT_FALSE(pop.ok()) << case_label(impl.name, value_kind::normal, b, seed) << " passed the population test";
        least = std::min(least, pop.rms / kPopulationLambda);
        // The gap this test closes: at K >= 4096 the worst-case bound alone passes them all.
        if (b.at("K") >= 4096) {
          EXPECT_TRUE(refs.judge(c, got).ok()) << impl.name << " at " << bindings_string(b)
                                               << ": the worst-case bound fails it (the premise changed)";
        }
      }
      report_margin(impl.name + " at " + bindings_string(b) + ": least RMS err/sigma / lambda", least);
    }
}

}  // namespace
}  // namespace kcv::testing
