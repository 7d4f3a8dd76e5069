// Gate 7 `coverage`: the same inputs twice, outputs pre-filled with two different poisons (NaN
// bytes, then finite 0x3F bytes). Results must be bitwise identical — an element left unwritten
// or read before written shows through one poison or the other — and finite where the reference is.
#include <cmath>

#include <fmt/format.h>

#include "kcv/gates/common.hpp"
#include "kcv/gates/registry.hpp"

namespace kcv::gates {
namespace {

class CoverageGate final : public Gate {
 public:
  std::string_view id() const override { return "coverage"; }
  std::string_view summary() const override { return "two output poisons; every element written, nothing stale"; }
  bool tolerance_independent() const override { return true; }
  std::string note(const GateContext& ctx) const override { return structural_note(ctx.contract); }

  std::vector<Case> cases(const GateContext& ctx, uint64_t seed) const override {
    std::vector<Case> out = one_call_per_shape(ctx.contract, nominal_and_uniform(ctx.contract, {3, 13, 127}), seed);
    for (Case& c : out) {
      CallSpec second = c.calls[0];
      for (auto& t : second.outputs) fill_bytes(t, kPoisonFinite);
      c.calls.push_back(std::move(second));
    }
    vary_calling(ctx, seed, out);
    return out;
  }

  CaseJudgement judge(const GateContext& ctx, const Case& c, const CaseRun& run) const override {
    const Contract& k = ctx.contract;
    for (const auto& r : run.calls)
      if (r.rc != 0) return refusal(r);
    const CallResult &a = run.calls[0], &b = run.calls[1];
    for (std::size_t o = 0; o < k.outputs.size(); ++o) {
      const int64_t at = a.outputs[o].first_bit_difference(b.outputs[o]);
      if (at >= 0)
        return {Verdict::fail, fmt::format("output '{}' at {}: {:.9g} under NaN poison, {:.9g} under finite poison "
                                           "(element not written, or poison read)",
                                           k.outputs[o].name, index_string(at, a.outputs[o].shape),
                                           a.outputs[o].get(at), b.outputs[o].get(at))};
    }
    const auto ref = k.reference(c.calls[0].inputs, c.calls[0].scalars, c.shape, SumOrder::forward);
    for (std::size_t o = 0; o < k.outputs.size(); ++o) {
      const HostTensor& got = a.outputs[o];
      for (int64_t i = 0; i < got.numel(); ++i) {
        const double want = round_to(got.dtype, ref[o].value[static_cast<std::size_t>(i)]);
        if (std::isfinite(want) && !std::isfinite(got.get(i)))
          return {Verdict::fail, fmt::format("output '{}' at {}: {} where the reference is finite ({:.9g})",
                                             k.outputs[o].name, index_string(i, got.shape), got.get(i), want)};
      }
    }
    return {};
  }
};

}  // namespace

std::unique_ptr<Gate> make_coverage_gate() { return std::make_unique<CoverageGate>(); }

}  // namespace kcv::gates
