// The fp64 reference of glr: backward against central finite differences of the forward, forward
// and backward against an independent chunked fp64 evaluation, and the shape of the error data.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <limits>
#include <string>

#include "glr/reference/reference.hpp"
#include "glr_test_util.hpp"

namespace glr::test {
namespace {

Problem small(GateForm gate, int64_t B = 2, int64_t T = 7, int64_t H = 2, int64_t K = 3, int64_t V = 4) {
  Problem p;
  p.B = B; p.T = T; p.H = H; p.K = K; p.V = V; p.gate = gate;
  return p;
}

/// Compares every analytic gradient entry with a central difference of the fp64 forward loss
/// Σ dO·o + Σ dhT·hT. Returns the largest |analytic| seen (the test asserts it is not ~0).
double check_gradients(Data d) {
  const BwdResult an = reference_bwd(d.p, d.bwd());
  const std::vector<double> wo = d.dO, wh = d.dhT;
  double biggest = 0;
  auto check = [&](std::vector<double>& x, const std::vector<double>& grad, const char* name) {
    ASSERT_EQ(x.size(), grad.size()) << name;
    for (std::size_t i = 0; i < x.size(); ++i) {
      const double x0 = x[i], h = 1e-5 * std::max(1.0, std::fabs(x0));
      x[i] = x0 + h;
      const double lp = loss(d, wo, wh);
      x[i] = x0 - h;
      const double lm = loss(d, wo, wh);
      x[i] = x0;
      const double fd = (lp - lm) / (2 * h);
      EXPECT_NEAR(grad[i], fd, 1e-6 * (1 + std::fabs(fd))) << name << "[" << i << "]";
      biggest = std::max(biggest, std::fabs(grad[i]));
    }
  };
  check(d.q, an.dq.value, "dq");
  check(d.k, an.dk.value, "dk");
  check(d.v, an.dv.value, "dv");
  check(d.g, an.dg.value, "dg");
  check(d.h0, an.dh0.value, "dh0");
  return biggest;
}

TEST(GlrReference, BackwardMatchesFiniteDifferencesVectorGate) {
  EXPECT_GT(check_gradients(make_data(small(GateForm::vector), 1)), 0.1);
}

TEST(GlrReference, BackwardMatchesFiniteDifferencesScalarGate) {
  EXPECT_GT(check_gradients(make_data(small(GateForm::scalar), 2)), 0.1);
}

TEST(GlrReference, BackwardMatchesFiniteDifferencesVarlenWithEmptyAndLengthOne) {
  for (GateForm gate : {GateForm::vector, GateForm::scalar}) {
    // sequences: empty, 3 steps, 1 step, 5 steps
    Data d = make_data(small(gate, 1, 9, 2, 3, 2), 3, {0, 0, 3, 4, 9});
    EXPECT_GT(check_gradients(d), 0.1);
    // The empty sequence passes its state straight through: hT = h0, dh0 = dhT.
    const FwdResult f = reference_fwd(d.p, d.fwd());
    const BwdResult b = reference_bwd(d.p, d.bwd());
    for (int64_t e = 0; e < 2 * 3 * 2; ++e) {
      EXPECT_EQ(f.hT.value[e], d.h0[e]);
      EXPECT_EQ(b.dh0.value[e], d.dhT[e]);
    }
  }
}

/// max |a − b| / (1e-300 + mag): agreement relative to the magnitude of the terms.
double rel_gap(const std::vector<double>& a, const Estimate& b) {
  double w = 0;
  for (std::size_t i = 0; i < a.size(); ++i)
    w = std::max(w, std::fabs(a[i] - b.value[i]) / (1e-300 + b.mag[i]));
  return w;
}

TEST(GlrReference, ForwardAndBackwardMatchAnIndependentChunkedFp64Evaluation) {
  for (GateForm gate : {GateForm::vector, GateForm::scalar})
    for (int64_t T : {1, 63, 64, 65, 200}) {
      const Data d = make_data(small(gate, 2, T, 2, 5, 3), 10 + T);
      const FwdResult r = reference_fwd(d.p, d.fwd());
      const BwdResult rb = reference_bwd(d.p, d.bwd());
      for (int64_t C : {64, 16}) {
        const FwdOut c = chunked_fwd<double>(d, C);
        const BwdOut cb = chunked_bwd<double>(d, C);
        const std::string at = "T=" + std::to_string(T) + " C=" + std::to_string(C);
        EXPECT_LT(rel_gap(c.o, r.o), 1e-13) << at;
        EXPECT_LT(rel_gap(c.hT, r.hT), 1e-13) << at;
        EXPECT_LT(rel_gap(cb.dq, rb.dq), 1e-13) << at;
        EXPECT_LT(rel_gap(cb.dk, rb.dk), 1e-13) << at;
        EXPECT_LT(rel_gap(cb.dv, rb.dv), 1e-13) << at;
        EXPECT_LT(rel_gap(cb.dh0, rb.dh0), 1e-13) << at;
        // dg: the chunked identity cancels terms of the size of q·dq; its magnitude is larger.
        double worst = 0;
        for (std::size_t i = 0; i < cb.dg.size(); ++i)
          worst = std::max(worst, std::fabs(cb.dg[i] - rb.dg.value[i]) / (1 + rb.dg.depth[i] * rb.dg.mag[i]));
        EXPECT_LT(worst, 1e-13) << at;
      }
    }
}

TEST(GlrReference, ChunkedOrderAgreesOnFiniteDataAndKeepsTheErrorData) {
  const Data d = make_data(small(GateForm::vector, 1, 130, 1, 4, 4), 5, {0, 3, 3, 130});
  const FwdResult s = reference_fwd(d.p, d.fwd());
  const FwdResult c = reference_fwd(d.p, d.fwd(), Order::chunked);
  EXPECT_LT(rel_gap(c.o.value, s.o), 1e-13);
  EXPECT_LT(rel_gap(c.hT.value, s.hT), 1e-13);
}

TEST(GlrReference, ErrorDataBoundTheValues) {
  for (GateForm gate : {GateForm::vector, GateForm::scalar}) {
    const Data d = make_data(small(gate, 2, 100, 2, 8, 8), 6);
    const FwdResult f = reference_fwd(d.p, d.fwd());
    const BwdResult b = reference_bwd(d.p, d.bwd());
    for (const Estimate* e : {&f.o, &f.hT, &b.dq, &b.dk, &b.dv, &b.dg, &b.dh0})
      for (std::size_t i = 0; i < e->value.size(); ++i) {
        ASSERT_GE(e->mag[i] * (1 + 1e-12), std::fabs(e->value[i])) << i;
        ASSERT_GE(e->depth[i], 1.0) << i;
        ASSERT_GE(e->amp[i], 0.0) << i;
        ASSERT_GT(e->under[i], 0.0) << i;
      }
  }
}

TEST(GlrReference, NanInKPoisonsExactlyItsStepOnward) {
  Data d = make_data(small(GateForm::vector, 1, 10, 1, 3, 2), 8);
  d.k[4 * 3 + 1] = std::numeric_limits<double>::quiet_NaN();  // t = 4, k index 1
  const FwdResult f = reference_fwd(d.p, d.fwd());
  for (int64_t t = 0; t < 10; ++t)
    for (int64_t y = 0; y < 2; ++y) EXPECT_EQ(std::isnan(f.o.value[t * 2 + y]), t >= 4) << t;
  for (int64_t x = 0; x < 3; ++x)
    for (int64_t y = 0; y < 2; ++y) EXPECT_EQ(std::isnan(f.hT.value[x * 2 + y]), x == 1);
}

TEST(GlrReference, RejectsInvalidCuSeqlens) {
  Data d = make_data(small(GateForm::vector, 1, 9, 1, 2, 2), 9, {0, 5, 4, 9});
  EXPECT_THROW(reference_fwd(d.p, d.fwd()), std::invalid_argument);
  d.cu = {0, 4, 8};
  d.p.cu_seqlens = d.cu.data();
  d.p.N = 2;
  EXPECT_THROW(reference_fwd(d.p, d.fwd()), std::invalid_argument);
}

}  // namespace
}  // namespace glr::test
