// segment_fold.hpp: one element of the state walked chunk by chunk (s ← e_c·s + a_c, the walk)
// against the segmented walk (each segment from 0 to P = Π e_c and U, then s ← P·s + U across the
// segments, in order), in fp32 as the kernels do. Finite inputs: the two agree to fp32 rounding.
// Extremes (factors 0, NaN and products that underflow; infinite and NaN states and terms): the
// two give the same class — NaN, +Inf, −Inf or finite — at every segmentation.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

#include "glr/cuda/sm90/segment_fold.hpp"

namespace {

namespace sf = glr::cuda::sm90::segment_fold;

float walk(float s, const std::vector<float>& e, const std::vector<float>& a) {
  for (size_t c = 0; c < e.size(); ++c) s = e[c] * s + a[c];
  return s;
}

/// The kernels' order: segments of `len` chunks, each from 0 (P, U), folded into s in order.
float segmented(float s, const std::vector<float>& e, const std::vector<float>& a, size_t len) {
  for (size_t b = 0; b < e.size(); b += len) {
    float p = 1.f, u = 0.f;
    for (size_t c = b; c < e.size() && c < b + len; ++c) {
      u = e[c] * u + a[c];
      p = sf::decay_product(p, e[c]);
    }
    s = sf::fold(p, s, u);
  }
  return s;
}

int klass(float x) { return std::isnan(x) ? 0 : std::isinf(x) ? (x > 0 ? 1 : -1) : 2; }

TEST(SegmentFold, FiniteInputsAgreeToRounding) {
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> decay(0.5f, 1.f);
  std::normal_distribution<float> term(0.f, 1.f);
  for (int trial = 0; trial < 2000; ++trial) {
    const size_t n = 1 + rng() % 200;
    std::vector<float> e(n), a(n);
    for (size_t c = 0; c < n; ++c) {
      e[c] = decay(rng);
      a[c] = term(rng);
    }
    const float s0 = term(rng);
    double exact = s0;  // the walk in double: the yardstick for both fp32 orders
    double mag = std::fabs(s0);
    for (size_t c = 0; c < n; ++c) {
      exact = double(e[c]) * exact + double(a[c]);
      mag = double(e[c]) * mag + std::fabs(double(a[c]));
    }
    for (size_t len : {size_t(1), size_t(3), size_t(16), n}) {
      const float got = segmented(s0, e, a, len);
      EXPECT_LE(std::fabs(got - exact), 4.0 * n * 6e-8 * mag + 1e-30)
          << "n=" << n << " len=" << len << " got " << got << " exact " << exact;
    }
  }
}

TEST(SegmentFold, SameNonFiniteClassAsTheWalk) {
  const float inf = INFINITY, nan = NAN;
  const std::vector<float> factors = {1.f, 0.5f, 0.f, 1e-30f, 1e-20f, nan};
  const std::vector<float> terms = {0.f, 1.f, -2.f, inf, -inf, nan};
  const std::vector<float> starts = {0.f, 3.f, inf, -inf, nan};
  std::mt19937 rng(11);
  int checked = 0, nonfinite = 0;
  for (int trial = 0; trial < 20000; ++trial) {
    const size_t n = 1 + rng() % 24;
    std::vector<float> e(n), a(n);
    for (size_t c = 0; c < n; ++c) {
      // mostly ordinary chunks, an extreme now and then
      e[c] = rng() % 4 ? 0.9f : factors[rng() % factors.size()];
      a[c] = rng() % 5 ? float(int(rng() % 7) - 3) : terms[rng() % terms.size()];
    }
    const float s0 = starts[rng() % starts.size()];
    const float want = walk(s0, e, a);
    nonfinite += !std::isfinite(want);
    for (size_t len = 1; len <= n; ++len) {
      const float got = segmented(s0, e, a, len);
      ++checked;
      ASSERT_EQ(klass(got), klass(want)) << "n=" << n << " segment " << len << ": walk " << want << ", segmented "
                                         << got << " (s0 " << s0 << ")";
    }
  }
  EXPECT_GT(nonfinite, 2000);  // the extremes were exercised
  EXPECT_GT(checked, 100000);
}

TEST(SegmentFold, UnderflowingProductKeepsAnInfiniteStateInfinite) {
  // Two factors of 1e-30: each positive, their product below fp32's range. The walk keeps an
  // infinite state infinite; a product rounded to 0 would make it NaN (Inf·0).
  const std::vector<float> e = {1e-30f, 1e-30f}, a = {0.f, 0.f};
  EXPECT_EQ(walk(INFINITY, e, a), INFINITY);
  EXPECT_EQ(segmented(INFINITY, e, a, 2), INFINITY);
  EXPECT_EQ(sf::decay_product(1e-30f, 1e-30f), sf::kTinyDecay);
  EXPECT_EQ(sf::decay_product(0.5f, 0.f), 0.f);    // a zero factor stays zero: Inf·0 = NaN as the walk
  EXPECT_EQ(sf::decay_product(0.f, 0.5f), 0.f);
  EXPECT_TRUE(std::isnan(sf::decay_product(0.5f, NAN)));
  EXPECT_TRUE(std::isnan(segmented(INFINITY, {1e-30f, 0.f}, {0.f, 0.f}, 2)));
}

}  // namespace
