/// Contract `layernorm`: y[M,N] = (x - mean) / sqrt(var + eps) · w + b along N, fp32, with the
/// biased variance var = sum (x - mean)^2 / N.
#include <cmath>
#include <memory>

#include "kcv/contract.hpp"
#include "kcv/contracts/builtin.hpp"

namespace kcv {

namespace {

// NOTES: error of a legitimate fp32 layernorm, per row (first order, u = 2^-24), with
// d_j = x_j - mean, r = (var + eps)^-1/2, R_j = r·|w_j|, A = mean |x|, Q = mean x^2:
//   - mean: any summation order, then /N: |d mean| <= N·u·A. It reaches y_j as R_j·|d mean|.
//   - variance: two-pass sum (x - mean)^2 errs by ~(N + 2)·u·var (the mean's error is a common
//     offset and enters only at second order); Welford similarly; one-pass E[x^2] - mean^2 errs by
//     <= (3N + 2)·u·Q (Q >= var: cancellation). Through r it reaches y_j as
//     (1/2)·|d_j|·R_j·|d var| / (var + eps) <= (1.5N + 1)·u·|d_j|·R_j·Q / (var + eps).
//   - pointwise: x - mean, rsqrt (<= 2 ulp) or 1/sqrt, ·w, +b, or the folded form x·s + (b - mean·s)
//     with s = r·w: <= 8·u·(|x_j| + |mean|)·R_j + u·|b_j|.
// The model: depth = N + 2, mag_j = R_j·(A + |d_j|·Q / (var + eps)), amp_j = 4·(|x_j| + |mean|)·R_j +
// |b_j|, c = 2: 2(N + 2) >= N (mean) and >= 1.5N + 1 (one-pass variance); 2·4 >= 8 and 2 >= 1
// (pointwise). Measured (tests/unit/core/layernorm_model_test.cpp): two-pass, Welford, one-pass
// and folded fp32 forms in every order reach <= 0.6 of the bound on every value kind; bf16
// running sums (u = 2^-8) land >= 700x outside at the nominal N = 512.
// A carries + 2^-126 (= eta_f32 / u_f32): the mean's division may underflow (absolute error
// 2^-150) when x is subnormal, and that error is amplified by R_j like the mean's rounding.
constexpr double kDepthExtra = 2;
constexpr double kUnderflowOverU = 0x1p-126;

class LayernormContract final : public Contract {
 public:
  LayernormContract() {
    name = "layernorm";
    summary = "y[M,N] = (x - mean)/sqrt(var + eps)*w[N] + b[N] along N (f32, biased variance)";
    inputs = {{"x", DType::f32, {"M", "N"}, Domain::real},
              {"w", DType::f32, {"N"}, Domain::real},
              {"b", DType::f32, {"N"}, Domain::real}};
    outputs = {{"y", DType::f32, {"M", "N"}, Domain::real}};
    scalars = {{"eps", "added to the biased variance before the inverse square root",
                [](const Bindings&) { return 1e-5; }}};
    symbols = {{"M", 1, int64_t{1} << 16, 64, 2048, {}}, {"N", 1, int64_t{1} << 16, 512, 8192, {}}};
    accumulate = DType::f32;
    c = 2.0;
    c_reasoning =
        "mean error N*u*mean|x| and variance error up to (3N+2)*u*mean(x^2) (one-pass included) amplified "
        "through rsqrt, plus ~8u pointwise: within 2u((N+2)*mag + amp)";
  }

  std::vector<RefTensor> reference(const std::vector<HostTensor>& in, const std::vector<double>& scalars,
                                   const Bindings& shape, SumOrder order) const override {
    check_reference_inputs(*this, in, shape);
    const int64_t M = shape.at("M"), N = shape.at("N");
    const double eps = scalars.at(0);
    const std::vector<double> x = in[0].values(), w = in[1].values(), b = in[2].values();
    RefTensor r;
    r.resize(x.size());
    auto sum = [&](auto term) {  // sum_j term(j) in the requested order
      double s = 0;
      if (order == SumOrder::forward)
        for (int64_t j = 0; j < N; ++j) s += term(j);
      else
        for (int64_t j = N; j-- > 0;) s += term(j);
      return s;
    };
    for (int64_t i = 0; i < M; ++i) {
      const double* row = x.data() + i * N;
      const double n = static_cast<double>(N);
      const double mean = sum([&](int64_t j) { return row[j]; }) / n;
      const double var = sum([&](int64_t j) { return (row[j] - mean) * (row[j] - mean); }) / n;
      const double abs_mean = sum([&](int64_t j) { return std::abs(row[j]); }) / n + kUnderflowOverU;
      const double sq_mean = sum([&](int64_t j) { return row[j] * row[j]; }) / n;
      const double rstd = 1.0 / std::sqrt(var + eps);
      for (int64_t j = 0; j < N; ++j) {
        const std::size_t k = static_cast<std::size_t>(i * N + j);
        const double d = row[j] - mean;
        const double R = rstd * std::abs(w[j]);
        r.value[k] = d * rstd * w[j] + b[j];
        r.mag[k] = R * (abs_mean + std::abs(d) * sq_mean / (var + eps));
        r.depth[k] = n + kDepthExtra;
        r.amp[k] = 4 * (std::abs(row[j]) + std::abs(mean)) * R + std::abs(b[j]);
      }
    }
    return {std::move(r)};
  }
};

}  // namespace

std::unique_ptr<Contract> make_layernorm_contract() { return std::make_unique<LayernormContract>(); }

}  // namespace kcv
