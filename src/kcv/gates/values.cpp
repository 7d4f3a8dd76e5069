// Gate 3 `values`: adversarial value distributions at the nominal shape (generic kinds plus the
// contract's own extremes), judged by the same error model.
#include "kcv/gates/common.hpp"
#include "kcv/gates/registry.hpp"

namespace kcv::gates {
namespace {

class ValuesGate final : public Gate {
 public:
  std::string_view id() const override { return "values"; }
  std::string_view summary() const override { return "adversarial value distributions at nominal shape"; }
  bool tolerance_independent() const override { return false; }

  std::vector<CasePlan> plan(const GateContext& ctx, uint64_t seed) const override {
    std::vector<std::string> kinds = {value_kind::scaled_up, value_kind::scaled_down, value_kind::all_equal,
                                      value_kind::zeros, value_kind::cancellation, value_kind::wide_range,
                                      value_kind::subnormal, value_kind::negated};
    for (auto& k : ctx.contract.extra_value_kinds()) kinds.push_back(k);
    const Bindings b = ctx.contract.nominal();
    std::vector<CasePlan> out;
    for (const auto& kind : kinds)
      out.push_back(single_call_plan(kind, ctx.contract, b, seed, static_cast<int64_t>(out.size()), kind,
                                     /*varied_prefill=*/true));
    return vary_calling(ctx, seed, std::move(out));
  }

  std::vector<Case> cases(const GateContext& ctx, uint64_t seed) const override { return make_all(plan(ctx, seed)); }

  CaseJudgement judge(const GateContext& ctx, const Case& c, const CaseRun& run) const override {
    return judge_all_calls(ctx.contract, c, run, {.population = true});
  }
};

}  // namespace

std::unique_ptr<Gate> make_values_gate() { return std::make_unique<ValuesGate>(); }

}  // namespace kcv::gates
