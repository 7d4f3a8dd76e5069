/// Contract `add`: c[N] = a[N] + b[N], fp32. The smallest op: a sanity check of the whole
/// pipeline (tails, layouts, non-finite classes) with an error model that is one rounding.
#include <cmath>
#include <memory>

#include "kcv/contract.hpp"
#include "kcv/contracts/builtin.hpp"

namespace kcv {

namespace {

class AddContract final : public Contract {
 public:
  AddContract() {
    name = "add";
    summary = "c[N] = a[N] + b[N] (f32), elementwise";
    inputs = {{"a", DType::f32, {"N"}, Domain::real}, {"b", DType::f32, {"N"}, Domain::real}};
    outputs = {{"c", DType::f32, {"N"}, Domain::real}};
    symbols = {{"N", 1, int64_t{1} << 32, int64_t{1} << 16, int64_t{1} << 20, {}}};
    accumulate = DType::f32;
    // NOTES: c = 1. Any IEEE fp32 kernel returns fl(a + b) = (a + b)(1 + d), |d| <= u: one
    // rounding, already covered by u_out·|r|. c·u·(|a| + |b|) (depth 1) is slack of one more
    // rounding at the operands' size — the smallest honest constant, and still 2^16 times below
    // one bf16 rounding (u = 2^-8) of the result.
    c = 1.0;
    c_reasoning =
        "one fp32 rounding of a+b is covered by u_out*|c|; c*u*(|a|+|b|) admits one more rounding of the "
        "operands' size, 2^16x below a bf16 rounding";
  }

  std::optional<LargeTier> large_tier() const override {
    // NOTES: 2^31 + 1025 elements: an int32 index wraps, and N is odd.
    LargeTier t;
    t.shape = {{"N", (int64_t{1} << 31) + 1025}};
    t.slice = [](int64_t i) { return SubProblem{{{"N", 1}}, {{i}, {i}}, 0}; };
    return t;
  }

  std::vector<RefTensor> reference(const std::vector<HostTensor>& in, const std::vector<double>&,
                                   const Bindings& shape, SumOrder) const override {
    check_reference_inputs(*this, in, shape);
    const std::vector<double> a = in[0].values(), b = in[1].values();
    RefTensor r;
    r.resize(a.size());
    // Two terms, no products: their kinds decide the class (docs/nonfinite-classes.md).
    r.classes.assign(a.size(), kClassFinite);
    for (std::size_t i = 0; i < a.size(); ++i) {
      r.value[i] = a[i] + b[i];  // exact in double for fp32 operands (no order to vary)
      r.mag[i] = std::abs(a[i]) + std::abs(b[i]);
      r.depth[i] = 1;
      if (!std::isfinite(a[i]) || !std::isfinite(b[i]))
        r.classes[i] = (Terms::factor(a[i]) + Terms::factor(b[i])).classes(0x1p-126);
    }
    return {std::move(r)};
  }
};

}  // namespace

std::unique_ptr<Contract> make_add_contract() { return std::make_unique<AddContract>(); }

}  // namespace kcv
