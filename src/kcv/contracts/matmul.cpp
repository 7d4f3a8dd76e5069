/// Contract `matmul`: C[M,N] = A[M,K] · B[K,N], fp32 inputs, fp32 accumulation, fp32 output.
#include <algorithm>
#include <cmath>
#include <memory>

#include "kcv/contract.hpp"
#include "kcv/contracts/builtin.hpp"
#include "kcv/error_model.hpp"

namespace kcv {

namespace {

// NOTES: c = 2. For any order of summation — sequential, pairwise, blocked/split-K partials,
// FMA or not — |fl(a·b) - a·b| <= gamma_K · sum_k |a_k||b_k| with gamma_K = K·u/(1 - K·u)
// (Higham, Accuracy and Stability, Thm 3.5: the K product roundings and K - 1 additions along
// any tree path). For K <= 2^14, K·u <= 2^-10, so gamma_K <= 1.001·K·u: c = 1 is the worst case
// of plain fp32. c = 2 leaves headroom for fp32-emulating paths that add a few roundings per
// product (3xTF32 drops the lo·lo term, ~2^-22 relative per product: (K + 4)·u <= 2·K·u for
// K >= 4) while TF32 (inputs rounded to 10 mantissa bits, ~2^-11 relative per product, growing
// like sqrt(K)) still lands outside. Measured (tests/unit/core/matmul_model_test.cpp): fp32
// orders (sequential, reverse, pairwise, blocked, Kahan, FMA) reach <= 0.25 of the bound on every
// value kind; TF32 inputs land >= 25x and a bf16 running sum >= 900x outside at K = 128.
// That bound grows like K while rounding on random data grows like sqrt(K): past K ~ 1000 TF32
// sits inside it. The population test (docs/population-test.md) catches it there: the reference
// gives each element the random-walk scale of its K products (random_walk_scale), and the shapes
// gate runs K = 1000..1023 (its sweep), 4096 and 16384 (2^14, the contract's largest K).
class MatmulContract final : public Contract {
 public:
  MatmulContract() {
    name = "matmul";
    summary = "C[M,N] = A[M,K] @ B[K,N] (f32, fp32 accumulate)";
    inputs = {{"A", DType::f32, {"M", "K"}, Domain::real}, {"B", DType::f32, {"K", "N"}, Domain::real}};
    outputs = {{"C", DType::f32, {"M", "N"}, Domain::real}};
    symbols = {{"M", 1, int64_t{1} << 22, 128, 1024, {}},
               {"N", 1, int64_t{1} << 14, 128, 1024, {}},
               {"K", 1, int64_t{1} << 14, 128, 1024, {}}};
    // Deep reductions for the population test, the output kept small (>= 64 elements judged).
    extra_shapes = {{{"M", 64}, {"N", 64}, {"K", 4096}}, {{"M", 32}, {"N", 32}, {"K", int64_t{1} << 14}}};
    accumulate = DType::f32;
    c = 2.0;
    c_reasoning =
        "any-order fp32 dot product errs by <= gamma_K*sum|a||b| <= 1.001*K*u*mag (Higham Thm 3.5); c=2 "
        "admits fp32-emulating paths (3xTF32); TF32 lands >= 25x outside at K=128";
  }

  std::optional<LargeTier> large_tier() const override {
    // NOTES: A has (2^21 + 3)·1024 = 2^31 + 3072 elements, so A's row offsets pass 2^31; N = 64
    // keeps C (134M elements) and the work (~0.3 TFLOP) small. An element of C is the 1×K·K×1
    // product of its row of A and its column of B.
    LargeTier t;
    const int64_t m = (int64_t{1} << 21) + 3, k = 1024, n = 64;
    t.shape = {{"M", m}, {"K", k}, {"N", n}};
    t.slice = [k, n](int64_t idx) {
      const int64_t i = idx / n, j = idx % n;
      SubProblem p{{{"M", 1}, {"K", k}, {"N", 1}}, {{}, {}}, 0};
      for (int64_t q = 0; q < k; ++q) {
        p.input_indices[0].push_back(i * k + q);
        p.input_indices[1].push_back(q * n + j);
      }
      return p;
    };
    return t;
  }

  std::vector<RefTensor> reference(const std::vector<HostTensor>& in, const std::vector<double>&,
                                   const Bindings& shape, SumOrder order) const override {
    check_reference_inputs(*this, in, shape);
    const int64_t M = shape.at("M"), N = shape.at("N"), K = shape.at("K");
    const std::vector<double> A = in[0].values(), B = in[1].values();
    RefTensor r;
    r.resize(static_cast<std::size_t>(M * N));
    r.walk.assign(r.value.size(), 0);  // Σ p² first, the random-walk scale at the end of the row
    // i-k-j loop: row i of C accumulates over k in the requested order, rows of B stream.
    for (int64_t i = 0; i < M; ++i) {
      double* val = r.value.data() + i * N;
      double* mag = r.mag.data() + i * N;
      double* sq = r.walk.data() + i * N;
      for (int64_t step = 0; step < K; ++step) {
        const int64_t k = order == SumOrder::forward ? step : K - 1 - step;
        const double a = A[i * K + k];
        const double* b = B.data() + k * N;
        for (int64_t j = 0; j < N; ++j) {
          const double p = a * b[j];  // exact: a product of two fp32 values fits in a double
          val[j] += p;
          mag[j] += std::abs(p);
          sq[j] += p * p;
        }
      }
      for (int64_t j = 0; j < N; ++j) {
        r.depth[i * N + j] = static_cast<double>(K);
        sq[j] = random_walk_scale(static_cast<double>(K), val[j], sq[j]);
      }
    }
    // The classes of C_ij = Σ_k A_ik·B_kj from its K terms (docs/nonfinite-classes.md); a product
    // below FLT_MIN may be flushed to zero beside an infinity.
    r.classes.assign(static_cast<std::size_t>(M * N), kClassFinite);
    if (!all_finite(in)) {
      std::vector<Terms> tb(B.size());
      for (std::size_t x = 0; x < B.size(); ++x) tb[x] = Terms::factor(B[x]);
      std::vector<Terms> row(static_cast<std::size_t>(N));
      for (int64_t i = 0; i < M; ++i) {
        std::fill(row.begin(), row.end(), Terms{});
        for (int64_t k = 0; k < K; ++k) {
          const Terms a = Terms::factor(A[i * K + k]);
          for (int64_t j = 0; j < N; ++j) row[j] += a * tb[k * N + j];
        }
        for (int64_t j = 0; j < N; ++j) r.classes[i * N + j] = row[j].classes(0x1p-126);
      }
    }
    return {std::move(r)};
  }
};

}  // namespace

std::unique_ptr<Contract> make_matmul_contract() { return std::make_unique<MatmulContract>(); }

}  // namespace kcv
