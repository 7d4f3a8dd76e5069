// Gate 4 `nonfinite`: NaN, +Inf and -Inf injected into each floating input at the first, middle,
// last and tile-boundary positions, and inside tiles at a position drawn from the seed. Every
// output element's class must be one that a legitimate evaluation order gives: decided from the
// reference's expansion where it classifies its terms (docs/nonfinite-classes.md), otherwise
// either class where two summation orders of the reference disagree (Inf - Inf).
#include <algorithm>
#include <cmath>
#include <limits>

#include <fmt/format.h>

#include "kcv/gates/common.hpp"
#include "kcv/gates/registry.hpp"

namespace kcv::gates {
namespace {

struct Injection {
  const char* name;
  double value;
};

class NonfiniteGate final : public Gate {
 public:
  std::string_view id() const override { return "nonfinite"; }
  std::string_view summary() const override { return "NaN/±Inf injection; output classes must match the reference"; }
  bool tolerance_independent() const override { return true; }
  std::string note(const GateContext& ctx) const override { return structural_note(ctx.contract); }

  std::vector<Case> cases(const GateContext& ctx, uint64_t seed) const override {
    static const Injection kinds[] = {{"NaN", std::numeric_limits<double>::quiet_NaN()},
                                      {"+Inf", std::numeric_limits<double>::infinity()},
                                      {"-Inf", -std::numeric_limits<double>::infinity()}};
    const Contract& k = ctx.contract;
    const Bindings b = k.structural_shape();
    std::vector<Case> out;
    for (std::size_t in = 0; in < k.inputs.size(); ++in) {
      if (k.inputs[in].domain == Domain::structural || !is_floating(k.inputs[in].dtype)) continue;
      const std::vector<int64_t> at = k.nonfinite_positions(in, b, seed);
      for (const auto& inj : kinds)
        for (int64_t i : at) {
          Rng rng = case_rng(seed, static_cast<int64_t>(out.size()));
          Case c = single_call_case("", k, b, rng);
          HostTensor& t = c.calls[0].inputs[in];
          t.set(i, inj.value);  // i is free in the input's structure: kept, and mirrored where symmetric
          c.label = fmt::format("{} in '{}' at {}", inj.name, k.inputs[in].name, index_string(i, t.shape));
          k.keep_structure(c.calls[0].inputs);
          out.push_back(std::move(c));
        }
    }
    vary_calling(ctx, seed, out);
    return out;
  }

  std::string skip_reason(const GateContext&) const override { return "the contract has no floating inputs"; }

  CaseJudgement judge(const GateContext& ctx, const Case& c, const CaseRun& run) const override {
    return judge_all_calls(ctx.contract, c, run, {.classes_only = true, .two_orders = true});
  }
};

}  // namespace

std::unique_ptr<Gate> make_nonfinite_gate() { return std::make_unique<NonfiniteGate>(); }

}  // namespace kcv::gates
