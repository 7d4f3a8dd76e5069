// Gate 5 `bounds`: every buffer sits between guard bands of keyed canary bytes (≥ 4 KiB each side;
// on cpu inputs end flush against a PROT_NONE page, so over-reads trap). Any changed canary fails.
#include <fmt/format.h>

#include "kcv/gates/common.hpp"
#include "kcv/gates/registry.hpp"

namespace kcv::gates {
namespace {

class BoundsGate final : public Gate {
 public:
  std::string_view id() const override { return "bounds"; }
  std::string_view summary() const override { return "guard bands around every buffer stay intact"; }
  bool tolerance_independent() const override { return true; }
  std::string note(const GateContext& ctx) const override { return structural_note(ctx.contract); }

  std::vector<Case> cases(const GateContext& ctx, uint64_t seed) const override {
    // NOTES: kcv's fixed placement (inputs flush against their PROT_NONE page, so an over-read of
    // one element traps); every other gate's buffers sit at varied page offsets, and their cases
    // fail on a changed guard band too (judge_all_calls), so this placement tells a candidate
    // nothing it could use to write past its buffers elsewhere.
    std::vector<Case> cases =
        one_call_per_shape(ctx.contract, nominal_and_uniform(ctx.contract, {1, 3, 7, 13, 127, 257}), seed);
    for (Case& c : cases)
      for (CallSpec& call : c.calls) call.fixed_placement = true;
    return cases;
  }

  CaseJudgement judge(const GateContext& ctx, const Case& c, const CaseRun& run) const override {
    const CallResult& r = run.calls[0];
    if (r.rc != 0) return refusal(r);
    const Contract& k = ctx.contract;
    for (std::size_t o = 0; o < r.output_guards.size(); ++o)
      if (!r.output_guards[o].intact)
        return {Verdict::fail, describe_guard("output", k.outputs[o].name, r.output_guards[o],
                                              static_cast<int64_t>(r.outputs[o].span_bytes()))};
    for (std::size_t i = 0; i < r.input_guards.size(); ++i)
      if (!r.input_guards[i].intact)
        return {Verdict::fail, describe_guard("input", k.inputs[i].name, r.input_guards[i],
                                              static_cast<int64_t>(r.inputs_after[i].span_bytes()))};
    return {};
  }

  CaseJudgement judge_abnormal(const GateContext& ctx, const Case& c, const CaseRun& run) const override {
    // NOTES: inputs end flush against an inaccessible page; an over-read traps there, and the
    // worker tells which buffer the address belonged to — a bounds failure with evidence.
    if (std::string where = describe_fault(ctx.contract, c, run); !where.empty())
      return {Verdict::fail, fmt::format("{}: {}", where, run.detail)};
    return Gate::judge_abnormal(ctx, c, run);
  }
};

}  // namespace

std::unique_ptr<Gate> make_bounds_gate() { return std::make_unique<BoundsGate>(); }

}  // namespace kcv::gates
