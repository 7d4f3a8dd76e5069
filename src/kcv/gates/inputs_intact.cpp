// Gate 6 `inputs_intact`: every input byte is unchanged after the call (unless the contract
// allows in-place use).
#include <cstring>

#include <fmt/format.h>

#include "kcv/gates/common.hpp"
#include "kcv/gates/registry.hpp"

namespace kcv::gates {
namespace {

class InputsIntactGate final : public Gate {
 public:
  std::string_view id() const override { return "inputs_intact"; }
  std::string_view summary() const override { return "inputs bitwise unchanged by the call"; }
  bool tolerance_independent() const override { return true; }
  std::string note(const GateContext& ctx) const override { return structural_note(ctx.contract); }

  std::vector<Case> cases(const GateContext& ctx, uint64_t seed) const override {
    if (ctx.contract.inplace_allowed) return {};
    std::vector<Case> out = one_call_per_shape(ctx.contract, nominal_and_uniform(ctx.contract, {1, 7, 127}), seed);
    vary_calling(ctx, seed, out);
    return out;
  }

  std::string skip_reason(const GateContext&) const override { return "the contract allows in-place use of inputs"; }

  CaseJudgement judge(const GateContext& ctx, const Case& c, const CaseRun& run) const override {
    const CallResult& r = run.calls[0];
    if (r.rc != 0) return refusal(r);
    for (std::size_t i = 0; i < r.inputs_after.size(); ++i) {
      const HostTensor& before = c.calls[0].inputs[i];
      const HostTensor& after = r.inputs_after[i];
      const int64_t at = before.first_bit_difference(after);
      if (at >= 0)
        return {Verdict::fail, fmt::format("input '{}' changed at {}: was {:.9g}, now {:.9g}", ctx.contract.inputs[i].name,
                                           index_string(at, before.shape), before.get(at), after.get(at))};
      if (std::memcmp(before.storage.data(), after.storage.data(), before.span_bytes()) != 0)
        return {Verdict::fail, fmt::format("input '{}': bytes between its elements changed", ctx.contract.inputs[i].name)};
    }
    return {};
  }
};

}  // namespace

std::unique_ptr<Gate> make_inputs_intact_gate() { return std::make_unique<InputsIntactGate>(); }

}  // namespace kcv::gates
