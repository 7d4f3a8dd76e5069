// Gate 7 `coverage`: the same inputs three times, outputs pre-filled with the NaN poison, then
// the finite 0x3F poison, then the NaN poison again. Results under the two poisons must be bitwise
// identical — an element left unwritten or read before written shows through one poison or the
// other — and finite where the reference is. When the two runs under the same poison already
// differ, the output is nondeterministic (the determinism gate's finding, issue 27): a difference
// between the poisons is then no evidence of an unwritten element by itself, so what still is
// judges — an element that holds each run's own poison, one that varies further from the
// reference than an evaluation order explains, non-finite output where the reference is finite.
#include <algorithm>
#include <cmath>
#include <cstring>

#include <fmt/format.h>

#include "kcv/gates/common.hpp"
#include "kcv/gates/registry.hpp"

namespace kcv::gates {
namespace {

/// Whether logical element i of t holds byte in every byte (an element left as poisoned).
bool holds_poison(const HostTensor& t, int64_t i, std::byte byte) {
  const std::size_t es = dtype_size(t.dtype);
  const std::byte* p = t.storage.data() + t.storage_index(i) * static_cast<int64_t>(es);
  for (std::size_t k = 0; k < es; ++k)
    if (p[k] != byte) return false;
  return true;
}

/// Whether logical element i has the same bits in t and u.
bool same_bits(const HostTensor& t, const HostTensor& u, int64_t i) {
  const std::size_t es = dtype_size(t.dtype);
  return std::memcmp(t.storage.data() + t.storage_index(i) * static_cast<int64_t>(es),
                     u.storage.data() + u.storage_index(i) * static_cast<int64_t>(es), es) == 0;
}

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
      CallSpec again = c.calls[0];  // the first poison again: tells nondeterminism from the prefill
      c.calls.push_back(std::move(second));
      c.calls.push_back(std::move(again));
    }
    vary_calling(ctx, seed, out);
    return out;
  }

  CaseJudgement judge(const GateContext& ctx, const Case& c, const CaseRun& run) const override {
    const Contract& k = ctx.contract;
    for (const auto& r : run.calls)
      if (r.rc != 0) return refusal(r);
    const CallResult &a = run.calls[0], &b = run.calls[1], &again = run.calls[2];
    // NOTES: the same poison twice first. Where those runs differ, so may the two poisons' for
    // no fault of the prefill (cumsum compiled by Inductor: a scan that is not reproducible).
    std::string varies;
    for (std::size_t o = 0; o < k.outputs.size() && varies.empty(); ++o) {
      const int64_t at = a.outputs[o].first_bit_difference(again.outputs[o]);
      if (at >= 0)
        varies = fmt::format("output '{}' at {}: {:.9g}, then {:.9g} in a second run under the same NaN poison",
                             k.outputs[o].name, index_string(at, a.outputs[o].shape), a.outputs[o].get(at),
                             again.outputs[o].get(at));
    }
    const auto ref = k.reference(c.calls[0].inputs, c.calls[0].scalars, c.shape, SumOrder::forward);
    for (std::size_t o = 0; o < k.outputs.size(); ++o) {
      const HostTensor &x = a.outputs[o], &y = b.outputs[o], &z = again.outputs[o];
      if (varies.empty()) {
        const int64_t at = x.first_bit_difference(y);
        if (at >= 0)
          return {Verdict::fail, fmt::format("output '{}' at {}: {:.9g} under NaN poison, {:.9g} under finite poison "
                                             "(element not written, or poison read; two runs under the same poison "
                                             "agree)",
                                             k.outputs[o].name, index_string(at, x.shape), x.get(at), y.get(at))};
        continue;
      }
      // NOTES: nondeterministic. An element the runs do not agree on is excused as an order's
      // rounding only when no run holds its poison there and every run is as near the reference
      // as the elements all runs agree on (the error model at least): a candidate's own output
      // allocation (torch) holds varying garbage, not the poison, where it was never written.
      const RefTensor& r = ref[o];
      auto ratio = [&](const HostTensor& t, int64_t i) {
        const double want = r.value[static_cast<std::size_t>(i)], got = t.get(i);
        if (!std::isfinite(want) || !std::isfinite(got)) return 0.0;  // classes: below and nonfinite's
        const double bound = allowed_error(r, static_cast<std::size_t>(i), t.dtype, k.accumulate, k.c);
        const double err = std::abs(got - want);
        return err <= bound ? 0.0 : bound > 0 ? err / bound : INFINITY;
      };
      std::vector<char> agree(static_cast<std::size_t>(x.numel()));
      double own = 1;  // the worst err/bound where the runs agree, at least the model's 1
      for (int64_t i = 0; i < x.numel(); ++i) {
        agree[static_cast<std::size_t>(i)] = same_bits(x, y, i) && same_bits(x, z, i);
        if (agree[static_cast<std::size_t>(i)]) own = std::max(own, ratio(x, i));
      }
      for (int64_t i = 0; i < x.numel(); ++i) {
        if (agree[static_cast<std::size_t>(i)]) continue;
        if (holds_poison(x, i, kPoisonNaN) && holds_poison(y, i, kPoisonFinite) && holds_poison(z, i, kPoisonNaN))
          return {Verdict::fail, fmt::format("output '{}' at {}: holds each run's poison (element not written; the "
                                             "output is also nondeterministic: {})",
                                             k.outputs[o].name, index_string(i, x.shape), varies)};
        const double worst = std::max({ratio(x, i), ratio(y, i), ratio(z, i)});
        if (worst > own)
          return {Verdict::fail,
                  fmt::format("output '{}' at {}: {:.9g} under NaN poison, {:.9g} under finite poison, {:.9g} under NaN "
                              "poison again; the runs differ under the same poison, but err/bound {:.3g} here is beyond "
                              "an evaluation order's rounding (the elements every run agrees on reach {:.3g}): element "
                              "not written, or poison read",
                              k.outputs[o].name, index_string(i, x.shape), x.get(i), y.get(i), z.get(i), worst, own)};
      }
    }
    for (const CallResult* r : {&a, &b, &again}) {
      for (std::size_t o = 0; o < k.outputs.size(); ++o) {
        const HostTensor& got = r->outputs[o];
        for (int64_t i = 0; i < got.numel(); ++i) {
          const double want = round_to(got.dtype, ref[o].value[static_cast<std::size_t>(i)]);
          if (std::isfinite(want) && !std::isfinite(got.get(i)))
            return {Verdict::fail, fmt::format("output '{}' at {}: {} where the reference is finite ({:.9g}){}",
                                               k.outputs[o].name, index_string(i, got.shape), got.get(i), want,
                                               r == &b ? " under the finite poison" : "")};
        }
      }
    }
    if (varies.empty()) return {};
    return {Verdict::pass,
            fmt::format("nondeterministic output, not an unwritten one: {} (the determinism gate's finding); the runs "
                        "under the two poisons were not compared bit for bit: no element holds its run's poison, every "
                        "element that varies stays as near the reference as those that do not (or within the error "
                        "model), and every element is finite where the reference is",
                        varies)};
  }
};

}  // namespace

std::unique_ptr<Gate> make_coverage_gate() { return std::make_unique<CoverageGate>(); }

}  // namespace kcv::gates
