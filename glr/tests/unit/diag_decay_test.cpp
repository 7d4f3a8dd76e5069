// The diagonal 16-blocks' decay of the forward split's prep kernel (include/glr/cuda/sm90/
// diag_decay.hpp: 2^(b_i − b_j) as 2^(b_i − b_ρ)·2^(b_ρ − b_j) where every |b_i − b_ρ| of the
// block's column is within kSpan, else per pair), emulated on the host in fp32 with the kernel's
// own formulas and checked against the per-pair form of the fused kernels, pair by pair, at the
// gate extremes: 0, decay near 1, normal gates, the span threshold from both sides, −20 and −1e4
// per step, −Inf and NaN in mid-block, at a block's first row and before the block, +Inf; and
// nonfinite or zero q, k. Checked: the same Inf/NaN/zero class as the per-pair form for every pair
// j <= i; where the block is factored and the product is a normal number, a relative error of at
// most 2^-16 against q·k·2^(b_i − b_j) in fp64 from the same fp32 b (the per-pair form as well,
// where its intermediate is normal); which blocks are factored; and that a −Inf gate at step t
// leaves the pairs of rows i < t finite and those with j < t <= i at exactly 0.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "glr/cuda/sm90/diag_decay.hpp"

namespace {

namespace dd = glr::cuda::sm90::diag_decay;

constexpr int kC = 64;  // chunk
constexpr float kLog2e = 1.4426950408889634f;

/// b = Σ g·log2e down the chunk, in order (the kernel's cumulative gate of one column).
std::vector<float> cumulative(const std::vector<float>& g) {
  std::vector<float> b(kC);
  float a = 0.f;
  for (int i = 0; i < kC; ++i) {
    a += g[i] * kLog2e;
    b[i] = a;
  }
  return b;
}

/// One column's diagonal terms of block ib, pair (i, j <= i): the kernel's form (factored where
/// the block's column allows it) and the per-pair form, single terms (one column of K).
struct Terms {
  bool factored = false;
  std::vector<float> kernel, per_pair;  // [16 * 16], j <= i only
};

Terms diagonal_terms(const std::vector<float>& b, const std::vector<float>& q, const std::vector<float>& k, int ib) {
  Terms t;
  const float bref = ib ? b[16 * ib - 1] : 0.f;
  bool ok = true;
  for (int r = 0; r < 16; ++r) ok = ok & dd::within_span(b[16 * ib + r], bref);
  t.factored = ok;
  t.kernel.assign(256, 0.f);
  t.per_pair.assign(256, 0.f);
  for (int a = 0; a < 16; ++a)
    for (int c = 0; c <= a; ++c) {
      const int i = 16 * ib + a, j = 16 * ib + c;
      const float x = dd::x_of(q[i], b[i], bref, ok), y = dd::y_of(k[j], b[j], bref, ok);
      t.kernel[a * 16 + c] = dd::add_term(0.f, x, y, b[i], b[j], ok);
      t.per_pair[a * 16 + c] = 0.f + q[i] * (k[j] * exp2f(b[i] - b[j]));  // the fused kernels' form
    }
  return t;
}

int cls(float x) { return std::isnan(x) ? 0 : std::isinf(x) ? (x > 0 ? 1 : 2) : x == 0 ? 3 : 4; }

struct Scenario {
  std::string name;
  std::vector<float> g;
  int expect_factored = -1;  // for block 1: 1 / 0, or −1 for no expectation
};

/// Checks every block of every scenario for q, k drawn from draw(); returns the number of failures.
template <class Draw>
void check_all(const std::vector<Scenario>& scenarios, Draw draw, const char* qk_name, uint64_t seed) {
  std::mt19937_64 rng(seed);
  for (const Scenario& s : scenarios) {
    const std::vector<float> b = cumulative(s.g);
    std::vector<float> q(kC), k(kC);
    for (int i = 0; i < kC; ++i) {
      q[i] = draw(rng, i, true);
      k[i] = draw(rng, i, false);
    }
    for (int ib = 0; ib < 4; ++ib) {
      SCOPED_TRACE(s.name + ", q/k " + qk_name + ", block " + std::to_string(ib));
      const Terms t = diagonal_terms(b, q, k, ib);
      if (ib == 1 && s.expect_factored >= 0) {
        EXPECT_EQ(int(t.factored), s.expect_factored) << "factored or not";
      }
      int shown = 0;
      for (int a = 0; a < 16; ++a)
        for (int c = 0; c <= a; ++c) {
          const int i = 16 * ib + a, j = 16 * ib + c;
          const float got = t.kernel[a * 16 + c], want = t.per_pair[a * 16 + c];
          bool bad = cls(got) != cls(want);
          const double exact = double(q[i]) * double(k[j]) * std::exp2(double(b[i]) - double(b[j]));
          if (!bad && std::isfinite(exact) && std::fabs(exact) >= 0x1p-126 && std::fabs(exact) <= 0x1p127) {
            // The per-pair form only where its 2^(b_i − b_j) and k_j·2^(b_i − b_j) are normal numbers
            // (below, they round in the subnormal range: its own, unchanged, behaviour).
            const double tol = 0x1p-16 * std::fabs(exact), e = std::exp2(double(b[i]) - double(b[j]));
            const bool pp_normal = e >= 0x1p-126 && std::fabs(double(k[j]) * e) >= 0x1p-126;
            bad = (t.factored && std::fabs(double(got) - exact) > tol) ||
                  (pp_normal && std::fabs(double(want) - exact) > tol);
          }
          if (bad && shown++ < 4)
            ADD_FAILURE() << "pair (" << i << ", " << j << "): kernel form " << got << ", per-pair " << want
                          << ", fp64 " << exact << " (b_i " << b[i] << ", b_j " << b[j] << ", q " << q[i] << ", k "
                          << k[j] << ", factored " << t.factored << ")";
        }
    }
  }
}

std::vector<Scenario> scenarios(uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> N01;
  auto normal_gates = [&] {
    std::vector<float> g(kC);
    for (float& x : g) x = float(-std::log1p(std::exp(-(2 + 1.5 * N01(rng)))));
    return g;
  };
  auto constant = [](float v) { return std::vector<float>(kC, v); };
  const float inf = INFINITY, nan = NAN;
  std::vector<Scenario> out;
  out.push_back({"gates 0", constant(0.f), 1});
  out.push_back({"decay near 1", constant(-1e-3f), 1});
  out.push_back({"normal gates", normal_gates(), -1});
  // |b_i − b_ρ| over block 1's 16 rows is 16·|g|·log2e: just inside and just outside kSpan.
  out.push_back({"span inside", constant(-0.99f * dd::kSpan / (16 * kLog2e)), 1});
  out.push_back({"span outside", constant(-1.01f * dd::kSpan / (16 * kLog2e)), 0});
  out.push_back({"gates -20", constant(-20.f), 0});
  out.push_back({"gates -1e4", constant(-1e4f), 0});
  {
    std::vector<float> g = normal_gates();
    g[16 + 7] = -inf;  // mid-block 1
    out.push_back({"-Inf mid-block", g, 0});
    g = normal_gates();
    g[16] = -inf;  // block 1's first row
    out.push_back({"-Inf at a block's first row", g, 0});
    g = normal_gates();
    g[15] = -inf;  // the row before block 1 (its reference)
    out.push_back({"-Inf at the reference row", g, 0});
    g = normal_gates();
    g[16 + 9] = nan;
    out.push_back({"NaN mid-block", g, 0});
    g = normal_gates();
    g[3] = nan;  // before the block
    out.push_back({"NaN in an earlier block", g, 0});
    g = normal_gates();
    g[16 + 4] = inf;
    out.push_back({"+Inf mid-block", g, 0});
    g = normal_gates();
    g[16 + 2] = -30.f;  // one deep gate: this block's column goes per pair, the others stay factored
    out.push_back({"one gate of -30", g, 0});
  }
  return out;
}

TEST(GlrDiagDecay, FactoredFormMatchesPerPairAtGateExtremes) {
  std::normal_distribution<double> N01;
  for (uint64_t seed : {1u, 2u, 3u}) {
    const std::vector<Scenario> sc = scenarios(seed);
    check_all(sc, [&](std::mt19937_64& r, int, bool) { return float(N01(r)); }, "N(0,1)", seed);
    check_all(sc, [&](std::mt19937_64& r, int, bool) { return float(1e4 * N01(r)); }, "1e4 N(0,1)", seed);
    check_all(sc, [&](std::mt19937_64& r, int, bool) { return float(1e-4 * N01(r)); }, "1e-4 N(0,1)", seed);
    check_all(sc, [&](std::mt19937_64& r, int, bool) { return float(N01(r) * std::pow(10.0, 12 * (double(r() % 1000) / 1000) - 6)); },
              "wide range", seed);
  }
}

TEST(GlrDiagDecay, NonfiniteAndZeroOperandsKeepTheirClass) {
  std::normal_distribution<double> N01;
  const float inf = INFINITY, nan = NAN;
  for (uint64_t seed : {4u, 5u}) {
    // q, k with Inf, −Inf, NaN and 0 at a few rows of every block, the rest N(0,1).
    auto draw = [&](std::mt19937_64& r, int i, bool is_q) {
      const int m = i % 16;
      if (is_q && m == 3) return inf;
      if (!is_q && m == 5) return -inf;
      if (is_q && m == 7) return nan;
      if (!is_q && m == 3) return 0.f;
      if (is_q && m == 11) return 0.f;
      return float(N01(r));
    };
    check_all(scenarios(seed), draw, "nonfinite", seed);
  }
}

TEST(GlrDiagDecay, MinusInfGateLeavesEarlierRowsFinite) {
  std::mt19937_64 rng(9);
  std::normal_distribution<double> N01;
  for (int t = 1; t < kC; ++t) {
    std::vector<float> g(kC), q(kC), k(kC);
    for (int i = 0; i < kC; ++i) {
      g[i] = float(-std::log1p(std::exp(-(2 + 1.5 * N01(rng)))));
      q[i] = float(N01(rng));
      k[i] = float(N01(rng));
    }
    g[t] = -INFINITY;
    const std::vector<float> b = cumulative(g);
    for (int ib = 0; ib < 4; ++ib) {
      const Terms tm = diagonal_terms(b, q, k, ib);
      for (int a = 0; a < 16; ++a)
        for (int c = 0; c <= a; ++c) {
          const int i = 16 * ib + a, j = 16 * ib + c;
          const float x = tm.kernel[a * 16 + c];
          if (i < t) {
            EXPECT_TRUE(std::isfinite(x)) << "t " << t << ", pair (" << i << ", " << j << "): " << x;
          }
          if (j < t && t <= i) {
            EXPECT_EQ(x, 0.f) << "t " << t << ", pair (" << i << ", " << j << ")";
          }
        }
    }
  }
}

TEST(GlrDiagDecay, TheSpanKeepsBothFactorsNormal) {
  // Within kSpan both factors are in [2^-kSpan, 2^kSpan]: never 0 nor Inf, so the factored form
  // cannot make a 0·Inf the per-pair form does not.
  static_assert(dd::kSpan > 0.f && dd::kSpan <= 63.f, "a span the fp32 factors and their products hold");
  EXPECT_TRUE(dd::within_span(dd::kSpan, 0.f));
  EXPECT_FALSE(dd::within_span(std::nextafter(dd::kSpan, 100.f), 0.f));
  EXPECT_FALSE(dd::within_span(NAN, 0.f));
  EXPECT_FALSE(dd::within_span(-INFINITY, 0.f));
  EXPECT_FALSE(dd::within_span(-INFINITY, -INFINITY));
  EXPECT_FALSE(dd::within_span(0.f, NAN));
  EXPECT_EQ(dd::x_of(1.f, -dd::kSpan, 0.f, true), std::ldexp(1.f, -int(dd::kSpan)));
  EXPECT_EQ(dd::y_of(1.f, -dd::kSpan, 0.f, true), std::ldexp(1.f, int(dd::kSpan)));
}

TEST(GlrDiagDecay, AFiniteFactoredTermIsThePerPairTerm) {
  // GLR_DIAG_RANGE's prep keeps a factored diagonal entry of A where it is finite and recomputes it per pair
  // where it is not (glr_fwd_split.cuh, redo_diagonal_per_pair). What that rests on, over k up to bf16's
  // largest, q from subnormal to large, and b_i, b_j, b_ρ within the span of the factored form: where
  // x_i·y_j is finite it is the per-pair x_i·(y_j·2^(b_i − b_j)) up to rounding (the fp64 product of the same
  // fp32 inputs), so a finite entry needs nothing; where it is not, only y = k·2^(b_ρ − b_j) left fp32's
  // range (x <= |q|) while the per-pair term, at most |q·k|, is finite.
  const float kmax = std::ldexp(255.f / 128.f, 127);  // bf16's largest finite
  int overflowed = 0, checked = 0;
  for (float k : {1.f, -3.25f, std::ldexp(1.f, 60), std::ldexp(1.f, 94), std::ldexp(1.5f, 100), -std::ldexp(1.f, 110), kmax})
    for (float q : {std::ldexp(1.f, -130), 0.75f, -2.f, std::ldexp(1.f, 20)})
      for (float dref : {0.f, -0.5f, -7.25f, -20.f})  // b_ρ
        for (float di : {0.f, -0.25f, -13.f, -dd::kSpan})  // b_i − b_ρ, b_j − b_ρ in [−kSpan, 0] (g <= 0, rows after ρ)
          for (float dj : {0.f, -1.f, -19.5f, -dd::kSpan}) {
            const float bref = dref, bi = dref + di, bj = dref + dj;
            if (bi > bj) continue;  // j <= i: b_i <= b_j
            const float x = dd::x_of(q, bi, bref, true), y = dd::y_of(k, bj, bref, true);
            const float factored = dd::add_term(0.f, x, y, 0.f, 0.f, true);
            const float per_pair = dd::add_term(0.f, q, k, bi, bj, false);
            const double exact = double(q) * double(k) * std::exp2(double(bi) - double(bj));
            if (std::fabs(exact) > std::ldexp(1.0, 126)) continue;  // the term itself out of range: not this test's
            ++checked;
            if (std::isfinite(factored)) {
              ASSERT_TRUE(std::isfinite(per_pair)) << q << " " << k << " " << bi << " " << bj;
              if (std::fpclassify(x) == FP_NORMAL && std::fpclassify(y) == FP_NORMAL) {  // five roundings apart at most
                ASSERT_NEAR(factored / exact, 1.0, std::ldexp(1.0, -19)) << q << " " << k << " " << bi << " " << bj;
              }
            } else {
              ++overflowed;
              EXPECT_FALSE(std::isfinite(y)) << "x <= |q| cannot overflow: " << q << " " << bi << " " << bref;
              EXPECT_TRUE(std::isfinite(per_pair)) << q << " " << k << " " << bi << " " << bj;
            }
          }
  EXPECT_GT(overflowed, 0) << "the sweep must reach the overflow the cold path fixes";
  EXPECT_GT(checked - overflowed, 0);
}

}  // namespace
