// Gate 2 `shapes`: every shape symbol swept through boundary sizes (others nominal, or within
// Contract::sweep_elements), plus every symbol at once at a few awkward sizes, plus common sizes
// (768 ... 4096), one size per symbol drawn from the run's seed, and one per symbol beyond the
// sweep, up to the contract's range (the others shrunk to keep the call small). Catches dropped
// tails and hard-coded shapes, and kernels right only at the sizes a fixed list names.
#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "kcv/backends/host_backend.hpp"
#include "kcv/gates/common.hpp"
#include "kcv/gates/registry.hpp"
#include "kcv/protocol.hpp"

namespace kcv::gates {
namespace {

class ShapesGate final : public Gate {
 public:
  std::string_view id() const override { return "shapes"; }
  std::string_view summary() const override { return "boundary sweep of every shape symbol"; }
  bool tolerance_independent() const override { return false; }

  std::vector<CasePlan> plan(const GateContext& ctx, uint64_t seed) const override {
    std::vector<Bindings> shapes;
    for (const Bindings& b : swept(ctx.contract))
      if (ctx.contract.valid(b)) shapes.push_back(b);
    for (int64_t v : {1, 3, 7, 13, 127})
      if (auto b = uniform_shape(ctx.contract, v)) shapes.push_back(*b);
    for (const Bindings& b : unpredictable(ctx.contract, seed))
      if (ctx.contract.valid(b) && std::find(shapes.begin(), shapes.end(), b) == shapes.end()) shapes.push_back(b);
    for (const Bindings& b : beyond_sweep(ctx.contract, seed))
      if (ctx.contract.valid(b) && std::find(shapes.begin(), shapes.end(), b) == shapes.end()) shapes.push_back(b);
    // The contract's own: deep reductions for the population test (docs/population-test.md).
    for (const Bindings& b : ctx.contract.extra_shapes)
      if (ctx.contract.valid(b)) shapes.push_back(b);
    std::vector<CasePlan> out =
        vary_calling(ctx, seed, one_call_per_shape_plans(ctx.contract, shapes, seed, /*varied_prefill=*/true));
    // NOTES: the large tier (element indices past 2^31) needs device memory (Backend::large_tier),
    // and a contract that can judge a sampled element from a small sub-problem. Its tensors carry
    // no storage, so it is made at once.
    if (ctx.backend.large_tier())
      if (auto tier = ctx.contract.large_tier()) {
        std::vector<CasePlan> large = plans_of({large_case(ctx.contract, *tier, seed)});
        out.push_back(std::move(large[0]));
      }
    return out;
  }

  std::vector<Case> cases(const GateContext& ctx, uint64_t seed) const override { return make_all(plan(ctx, seed)); }

  std::string note(const GateContext& ctx) const override {
    // NOTES: a size the contract rejects is not a case; say which and why (KernelBench: the
    // problem's own Model raised at that size).
    int64_t rejected = 0;
    std::string first;
    for (const Bindings& b : swept(ctx.contract)) {
      if (ctx.contract.valid(b)) continue;
      if (rejected++ == 0) {
        const std::string why = ctx.contract.rejection(b);
        first = bindings_string(b) + (why.empty() ? "" : ": " + why);
      }
    }
    std::string note;
    if (const Bindings base = sweep_base(ctx.contract); base != ctx.contract.nominal())
      note = fmt::format("each symbol swept with the others at {}, not the problem's own {} (a large problem)",
                         bindings_string(base), bindings_string(ctx.contract.nominal()));
    if (rejected > 0)
      note += fmt::format("{}{} swept shape(s) skipped, the contract rejects them (first {})", note.empty() ? "" : "; ",
                          rejected, first);
    return note;
  }

  CaseJudgement judge(const GateContext& ctx, const Case& c, const CaseRun& run) const override {
    if (c.calls[0].large) return judge_large(ctx.contract, c, run.calls[0]);
    return judge_all_calls(ctx.contract, c, run, {.population = true});
  }

 private:
  /// Where the sweep holds the symbols it is not sweeping: nominal, or within the contract's
  /// sweep budget.
  static Bindings sweep_base(const Contract& k) {
    return k.sweep_elements > 0 ? k.shape_within(k.sweep_elements) : k.nominal();
  }

  /// Every symbol through its boundary sizes, the others at sweep_base(), valid or not.
  static std::vector<Bindings> swept(const Contract& k) {
    const Bindings base = sweep_base(k);
    std::vector<Bindings> out;
    for (const auto& s : k.symbols)
      for (int64_t v : boundary_sizes(s)) {
        Bindings b = base;
        b[s.name] = v;
        out.push_back(std::move(b));
      }
    return out;
  }

  /// Issue 25, class 4: sizes a cheater cannot read off the boundary table: the common ones
  /// (768, 1024, 2048, 4096) and one per symbol drawn from the run's seed, log-uniform over its
  /// sweep range, each with the others at sweep_base(). Not for symbols with an explicit sweep
  /// list (KernelBench's large problems). After the fixed shapes: their case indices stay.
  static std::vector<Bindings> unpredictable(const Contract& k, uint64_t seed) {
    const Bindings base = sweep_base(k);
    Rng rng = case_rng(seed, int64_t{1} << 21);
    std::vector<Bindings> out;
    for (const auto& s : k.symbols) {
      if (!s.sweep.empty()) continue;
      const int64_t lo = std::max<int64_t>(s.min, 1), hi = std::min(s.max, s.sweep_max);
      std::vector<int64_t> sizes;
      for (int64_t v : {768, 1024, 2048, 4096})
        if (v >= lo && v <= hi && v != s.nominal) sizes.push_back(v);
      if (hi > lo) {
        const double u = static_cast<double>(rng() >> 11) * 0x1p-53;
        const double v = std::exp(std::log(static_cast<double>(lo)) + u * (std::log(static_cast<double>(hi) + 1) -
                                                                            std::log(static_cast<double>(lo))));
        sizes.push_back(std::clamp(static_cast<int64_t>(v), lo, hi));
      }
      for (int64_t v : sizes) {
        Bindings b = base;
        b[s.name] = v;
        out.push_back(std::move(b));
      }
    }
    return out;
  }

  /// Elements a call at b moves (inputs plus outputs).
  static int64_t call_elements(const Contract& k, const Bindings& b) {
    int64_t n = 0;
    for (std::size_t i = 0; i < k.inputs.size(); ++i) n += numel(k.input_shape(i, b));
    for (std::size_t o = 0; o < k.outputs.size(); ++o) n += numel(k.output_shape(o, b));
    return n;
  }

  /// Issue 25, class 4: a kernel right only up to the sweep's sizes (a fixed row buffer of 8192,
  /// a 32-bit product of two extents) passed while the contract promises more. Per symbol whose
  /// range reaches past its sweep (no explicit sweep list), one size drawn from the run's seed,
  /// log-uniform over (sweep top, max]; the other symbols halved (largest first, not below their
  /// minimum) until the call moves at most kBeyondElements elements, and the size itself halved
  /// (never back into the sweep) when even that is too many. Judged in full, like every case.
  static std::vector<Bindings> beyond_sweep(const Contract& k, uint64_t seed) {
    const Bindings base = sweep_base(k);
    Rng rng = case_rng(seed, (int64_t{1} << 21) + 1);
    std::vector<Bindings> out;
    for (const auto& s : k.symbols) {
      const int64_t top = std::min(s.max, s.sweep_max);
      const double u = static_cast<double>(rng() >> 11) * 0x1p-53;  // drawn for every symbol: indices stay
      if (!s.sweep.empty() || s.max <= top) continue;
      const double lo = std::log(static_cast<double>(top) + 1), hi = std::log(static_cast<double>(s.max) + 1);
      const int64_t v = std::clamp(static_cast<int64_t>(std::exp(lo + u * (hi - lo))), top + 1, s.max);
      Bindings b = base;
      b[s.name] = v;
      for (int guard = 0; guard < 256 && call_elements(k, b) > kBeyondElements; ++guard) {
        const SymbolSpec* widest = nullptr;
        for (const auto& o : k.symbols)
          if (o.name != s.name && b[o.name] > o.min && (!widest || b[o.name] > b[widest->name])) widest = &o;
        if (widest) b[widest->name] = std::max(widest->min, b[widest->name] / 2);
        else if (b[s.name] / 2 > top) b[s.name] /= 2;
        else break;
      }
      if (call_elements(k, b) <= kBeyondElements) out.push_back(std::move(b));
    }
    return out;
  }

  /// What a case beyond the sweep may move: 2^23 elements (32 MiB of f32), inputs and outputs.
  static constexpr int64_t kBeyondElements = int64_t{1} << 23;

  static Case large_case(const Contract& k, const LargeTier& tier, uint64_t seed) {
    Case c;
    c.shape = tier.shape;
    CallSpec call;
    call.large = true;
    call.large_seed = seed;
    // Shape and strides only: the storage stays empty (nothing is staged for the large tier).
    auto layout_only = [&](const std::vector<TensorSpec>& specs, std::vector<HostTensor>& out) {
      for (const TensorSpec& spec : specs) {
        HostTensor t;
        t.dtype = spec.dtype;
        t.shape = Contract::resolve(spec.dims, tier.shape);
        t.stride = contiguous_strides(t.shape);
        out.push_back(std::move(t));
      }
    };
    layout_only(k.inputs, call.inputs);
    layout_only(k.outputs, call.outputs);
    call.scalars = k.scalar_values(tier.shape);
    // NOTES: the start, both sides of the 2^31 element boundary (where int32 indices wrap), the
    // tail, and random elements.
    const int64_t n = call.outputs[0].numel(), two31 = int64_t{1} << 31;
    std::vector<int64_t> at = {0, 1, two31 - 1, two31, two31 + 1};
    for (int64_t d = 0; d < 200; d += 13) at.push_back(n - 1 - d);  // the tail: the last rows' inputs lie past 2^31
    Rng rng = case_rng(seed, 1 << 20);
    for (int i = 0; i < 57; ++i) at.push_back(static_cast<int64_t>(rng() % static_cast<uint64_t>(n)));
    std::erase_if(at, [&](int64_t i) { return i < 0 || i >= n; });
    call.samples = at;
    c.label = fmt::format("large tier {} ({} output elements, {} sampled)", bindings_string(tier.shape), n, at.size());
    c.calls.push_back(std::move(call));
    return c;
  }

  /// Every guard band intact, and each sampled element of output 0 within the error model of its
  /// sub-problem's reference.
  static CaseJudgement judge_large(const Contract& k, const Case& c, const CallResult& r) {
    if (r.rc != 0) return refusal(r);
    for (std::size_t o = 0; o < r.output_guards.size(); ++o)
      if (!r.output_guards[o].intact)
        return {Verdict::fail, describe_guard("output", k.outputs[o].name, r.output_guards[o],
                                              static_cast<int64_t>(c.calls[0].outputs[o].span_bytes()))};
    const LargeTier tier = *k.large_tier();
    const CallSpec& call = c.calls[0];
    RefTensor ref;
    ref.resize(call.samples.size());
    for (std::size_t s = 0; s < call.samples.size(); ++s) {
      const SubProblem p = tier.slice(call.samples[s]);
      std::vector<HostTensor> inputs;
      for (std::size_t i = 0; i < k.inputs.size(); ++i) {
        std::vector<double> v;
        for (int64_t at : p.input_indices[i]) v.push_back(protocol::large_tier_value(call.large_seed + i, at));
        inputs.push_back(HostTensor::from_values(k.inputs[i].dtype, k.input_shape(i, p.shape), v));
      }
      const auto sub = k.reference(inputs, call.scalars, p.shape, SumOrder::forward);
      const auto j = static_cast<std::size_t>(p.out_index);
      ref.value[s] = sub[0].value[j];
      ref.mag[s] = sub[0].mag[j];
      ref.depth[s] = sub[0].depth[j];
      ref.amp[s] = sub[0].amp[j];
    }
    const Comparison cmp = compare(r.outputs[0], ref, nullptr, k.accumulate, k.c);
    if (!cmp.ok()) {
      const Mismatch& m = cmp.first.front();
      return {Verdict::fail, fmt::format("output '{}' element {} (of the sampled ones): got {:.9g} expected {:.9g} "
                                         "bound {:.3g}; {} of {} samples outside the model",
                                         k.outputs[0].name, call.samples[static_cast<std::size_t>(m.index)], m.got,
                                         m.expected, m.bound, cmp.bad, cmp.checked)};
    }
    return {};
  }
};

}  // namespace

std::unique_ptr<Gate> make_shapes_gate() { return std::make_unique<ShapesGate>(); }

}  // namespace kcv::gates
