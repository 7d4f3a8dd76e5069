/// Contract `softmax`: y[M,N] = row-wise softmax of x[M,N], fp32, max-subtracted:
///   m = max_j x_j,  z_j = x_j - m,  e_j = exp(z_j),  s = sum_j e_j,  y_j = e_j / s.
/// SumOrder::forward is this two-pass definition; SumOrder::reverse streams the row right to left
/// with a running max (online softmax), which differs only in the classes of rows holding +Inf.
#include <cmath>
#include <limits>
#include <memory>

#include "kcv/contract.hpp"
#include "kcv/contracts/builtin.hpp"

namespace kcv {

namespace {

// NOTES: error of a legitimate fp32 softmax, relative to y_j (u = 2^-24, first order):
//   - exp argument. Formed as z = x - m (m is exact: max does not round), exp(z) picks up |z|·u.
//     Formed as exp2(fma(x, log2e, -fl(m·log2e))) (flash / online softmax), the rounding of
//     m·log2e is common to the whole row and cancels in e/s: again ~|z|·u. Formed without the
//     FMA, exp2(fl(x·log2e) - fl(m·log2e)), each x·log2e rounds on its own: (|x| + |m| + |z|)·u
//     <= (2|z| + 2|m|)·u — backward stable (the softmax of x·(1 + d)), so admitted too. Plus 4u
//     for expf / ex2.approx (a few ulp): e_k errs by eps_k <= (2|z_k| + 2|m| + 4)·u.
//   - the sum. Any order (sequential, pairwise, blocked, online with rescaling) of N positive
//     terms: (N - 1)·u, plus the terms' own errors weighted by y_k: sum_k y_k·eps_k <=
//     (2N/e + 2|m| + 4)·u, since y_k·|z_k| <= |z_k|·e^{z_k} <= 1/e (s >= 1).
//   - the division, e/s or e·(1/s): <= 2u.
//   Total <= [(1 + 2/e)·N + 9 + 2|z_j| + 4|m|]·u. The model gives c·u·(depth·|y| + amp) with
//   depth = N + 8, amp = |y_j|·(|z_j| + 2|m|) and c = 2: 2N + 16 >= 1.74N + 9 for every N.
//   Measured (tests/unit/core/softmax_model_test.cpp): classic, reciprocal, exp2 and online fp32
//   forms in every order reach <= 0.25 of the bound on every value kind; fp16 accumulation of s
//   (u = 2^-11) lands ~100x outside at nominal N = 512, where |m| ~ 3; an unstabilized exp
//   overflows at scaled inputs (a class failure). At scaled or wide-range inputs the |m| term
//   dominates: the bound is then that of a backward-stable softmax (the exact softmax of x
//   perturbed by one rounding), loose by design, while classes are still judged exactly.
constexpr double kDepthExtra = 8;

class SoftmaxContract final : public Contract {
 public:
  SoftmaxContract() {
    name = "softmax";
    summary = "y[M,N] = softmax(x[M,N]) along N (f32), max-subtracted";
    inputs = {{"x", DType::f32, {"M", "N"}, Domain::real}};
    outputs = {{"y", DType::f32, {"M", "N"}, Domain::real}};
    symbols = {{"M", 1, int64_t{1} << 24, 128, 4096, {}}, {"N", 1, int64_t{1} << 16, 512, 8192, {}}};
    accumulate = DType::f32;
    c = 2.0;
    c_reasoning =
        "exp argument error |z|u (z=x-m, FMA exp2 form) or (2|z|+2|m|)u (exp2 of rounded x*log2e, backward "
        "stable), a few ulp of expf, (1+2/e)N u for the sum in any order, 2u for the division: within "
        "2u((N+8)|y| + (|z|+2|m|)|y|)";
  }

  std::optional<LargeTier> large_tier() const override {
    // NOTES: (2^21 + 3) rows of 1024: 2^31 + 3072 elements, so row offsets pass 2^31.
    LargeTier t;
    const int64_t n = 1024;
    t.shape = {{"M", (int64_t{1} << 21) + 3}, {"N", n}};
    t.slice = [n](int64_t i) {
      SubProblem p{{{"M", 1}, {"N", n}}, {{}}, i % n};
      for (int64_t j = 0; j < n; ++j) p.input_indices[0].push_back(i / n * n + j);
      return p;
    };
    return t;
  }

  std::vector<RefTensor> reference(const std::vector<HostTensor>& in, const std::vector<double>&,
                                   const Bindings& shape, SumOrder order) const override {
    check_reference_inputs(*this, in, shape);
    const int64_t M = shape.at("M"), N = shape.at("N");
    const std::vector<double> x = in[0].values();
    RefTensor r;
    r.resize(x.size());
    std::vector<double> z(static_cast<std::size_t>(N)), e(static_cast<std::size_t>(N));
    for (int64_t i = 0; i < M; ++i) {
      const double* row = x.data() + i * N;
      double m = -std::numeric_limits<double>::infinity(), s = 0;
      if (order == SumOrder::forward) {
        // Two-pass, the definition: max (NaN propagating; std::max would depend on where the NaN
        // sits), then the sum of exp(x - max) left to right.
        for (int64_t j = 0; j < N; ++j) m = std::isnan(row[j]) || std::isnan(m) ? NAN : std::max(m, row[j]);
        for (int64_t j = 0; j < N; ++j) s += std::exp(row[j] - m);
      } else {
        // One pass right to left with a running max that rescales the running sum (online
        // softmax). Same values on finite rows; on rows with +Inf it gives what streaming kernels
        // give (0 beside the Inf, NaN at it) where two-pass gives a NaN row: the nonfinite gate
        // accepts either class there.
        for (int64_t j = N; j-- > 0;) {
          if (row[j] > m) {
            s = s * std::exp(m - row[j]) + 1;
            m = row[j];
          } else {
            s += std::exp(row[j] - m);  // NaN (compares false) lands here and poisons s
          }
        }
      }
      // IEEE semantics do the rest: +Inf gives Inf - Inf = NaN, -Inf entries give exp(-Inf) = 0,
      // an all -Inf row is NaN.
      for (int64_t j = 0; j < N; ++j) {
        z[j] = row[j] - m;
        e[j] = std::exp(z[j]);
      }
      for (int64_t j = 0; j < N; ++j) {
        const std::size_t k = static_cast<std::size_t>(i * N + j);
        const double y = e[j] / s;
        r.value[k] = y;
        r.mag[k] = std::abs(y);
        r.depth[k] = static_cast<double>(N) + kDepthExtra;
        // y == 0 (z = -Inf): no error to amplify, and |z|·0 would be NaN.
        r.amp[k] = y == 0 ? 0.0 : std::abs(y) * (std::abs(z[j]) + 2 * std::abs(m));
      }
    }
    return {std::move(r)};
  }
};

}  // namespace

std::unique_ptr<Contract> make_softmax_contract() { return std::make_unique<SoftmaxContract>(); }

}  // namespace kcv
