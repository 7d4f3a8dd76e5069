// Gate 2 `shapes`: every shape symbol swept through boundary sizes (others nominal), plus every
// symbol at once at a few awkward sizes. Catches dropped tails and hard-coded shapes.
#include <fmt/format.h>

#include "kcv/gates/common.hpp"
#include "kcv/gates/registry.hpp"

namespace kcv::gates {
namespace {

class ShapesGate final : public Gate {
 public:
  std::string_view id() const override { return "shapes"; }
  std::string_view summary() const override { return "boundary sweep of every shape symbol"; }
  bool tolerance_independent() const override { return false; }

  std::vector<Case> cases(const GateContext& ctx, uint64_t seed) const override {
    std::vector<Bindings> shapes;
    for (const auto& s : ctx.contract.symbols) {
      for (int64_t v : boundary_sizes(s)) {
        Bindings b = ctx.contract.nominal();
        b[s.name] = v;
        if (ctx.contract.valid(b)) shapes.push_back(b);
      }
    }
    for (int64_t v : {1, 3, 7, 13, 127})
      if (auto b = uniform_shape(ctx.contract, v)) shapes.push_back(*b);
    std::vector<Case> out;
    for (const auto& b : shapes) {
      Rng rng = case_rng(seed, static_cast<int64_t>(out.size()));
      out.push_back(single_call_case(bindings_string(b), ctx.contract, b, rng));
    }
    // NOTES: a large tier (element index > 2^31) needs device memory; it belongs to cuda.
    return out;
  }

  CaseJudgement judge(const GateContext& ctx, const Case& c, const CaseRun& run) const override {
    return judge_all_calls(ctx.contract, c, run);
  }
};

}  // namespace

std::unique_ptr<Gate> make_shapes_gate() { return std::make_unique<ShapesGate>(); }

}  // namespace kcv::gates
