// Gate 1 `numerics`: the nominal shape, several seeds, the fp64 reference and the error model.
#include <fmt/format.h>

#include "kcv/gates/common.hpp"
#include "kcv/gates/registry.hpp"

namespace kcv::gates {
namespace {

class NumericsGate final : public Gate {
 public:
  std::string_view id() const override { return "numerics"; }
  std::string_view summary() const override { return "nominal shape, 5 seeds, fp64 reference, error model"; }
  bool tolerance_independent() const override { return false; }

  std::vector<CasePlan> plan(const GateContext& ctx, uint64_t seed) const override {
    std::vector<CasePlan> out;
    const Bindings b = ctx.contract.nominal();
    for (int64_t i = 0; i < kSeeds; ++i)
      out.push_back(single_call_plan(fmt::format("{} seed {}", bindings_string(b), i), ctx.contract, b, seed, i, "normal",
                                       /*varied_prefill=*/true));
    return vary_calling(ctx, seed, std::move(out));
  }

  std::vector<Case> cases(const GateContext& ctx, uint64_t seed) const override { return make_all(plan(ctx, seed)); }

  CaseJudgement judge(const GateContext& ctx, const Case& c, const CaseRun& run) const override {
    return judge_all_calls(ctx.contract, c, run, {.population = true});
  }

 private:
  static constexpr int64_t kSeeds = 5;
};

}  // namespace

std::unique_ptr<Gate> make_numerics_gate() { return std::make_unique<NumericsGate>(); }

}  // namespace kcv::gates
