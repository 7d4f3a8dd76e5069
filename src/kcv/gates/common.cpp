#include "kcv/backends/host_backend.hpp"
#include "kcv/gates/common.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <set>

#include <fmt/format.h>

namespace kcv::gates {

Rng case_rng(uint64_t gate_seed, int64_t case_index) {
  std::seed_seq seq{static_cast<uint32_t>(gate_seed), static_cast<uint32_t>(gate_seed >> 32),
                    static_cast<uint32_t>(case_index), static_cast<uint32_t>(case_index >> 32)};
  return Rng(seq);
}

void fill_bytes(HostTensor& t, std::byte byte) { std::fill(t.storage.begin(), t.storage.end(), byte); }

CallSpec make_call(const Contract& contract, const Bindings& b, Rng& rng, const std::string& kind, std::byte poison) {
  CallSpec call;
  call.inputs = contract.make_inputs(b, rng, kind);
  call.outputs = contract.make_outputs(b);
  for (auto& t : call.outputs) fill_bytes(t, poison);
  call.scalars = contract.scalar_values(b);
  return call;
}

std::size_t add_plain_twin(Case& c, std::size_t k) {
  const CallSpec& from = c.calls.at(k);
  CallSpec twin;
  auto plain = [](const HostTensor& t) {
    return t.is_contiguous() ? t : t.relayout(contiguous_strides(t.shape), 0, std::byte{0});
  };
  for (const HostTensor& t : from.inputs) twin.inputs.push_back(plain(t));
  for (const HostTensor& t : from.outputs) twin.outputs.push_back(plain(t));
  twin.scalars = from.scalars;
  const std::size_t index = c.calls.size();
  twin.plain_twin = static_cast<int>(index);
  c.calls.push_back(std::move(twin));
  c.calls[k].plain_twin = static_cast<int>(index);
  return index;
}

Case single_call_case(std::string label, const Contract& contract, const Bindings& b, Rng& rng, const std::string& kind) {
  Case c;
  c.label = std::move(label);
  c.shape = b;
  c.calls.push_back(make_call(contract, b, rng, kind));
  c.random_inputs = value_kind::is_random(kind);
  return c;
}

Prefill prefill_for(uint64_t seed, int64_t index) {
  Rng rng(seed ^ (0x9e3779b97f4a7c15ull * static_cast<uint64_t>(index + 1)) ^ 0x70726566696c6cull);
  switch (rng() % 8) {
    case 4: return Prefill::zeros;
    case 5: return Prefill::random_bytes;
    case 6: return Prefill::one_byte;
    case 7: return Prefill::stale;
    default: return Prefill::poison;
  }
}

void vary_prefill(Case& c, uint64_t seed, int64_t index) {
  // NOTES: (issue 25 class 3) outputs always starting as 0xFF bytes would tell a candidate it runs
  // under kcv. Half the cases keep that poison (an unwritten element is a NaN there); the others
  // start from zeros, random bytes, one random byte repeated, or stale data, as a caller's fresh
  // or reused allocation might. Random bytes hold NaNs and huge values and one byte is a constant:
  // a candidate could tell either from real data. Stale data cannot be told from an earlier
  // op's tensor: the values of the case's own inputs (finite, at their own magnitudes), from a
  // seeded place on, in the output's dtype — what a reused allocation holds in production. A
  // candidate that skips its work when the output already looks computed (a result cached from
  // a benchmark's previous call) fails there. Coverage keeps its own poisons (it judges by them).
  const Prefill way = prefill_for(seed, index);
  if (way == Prefill::poison) return;
  Rng rng(seed ^ (0x9e3779b97f4a7c15ull * static_cast<uint64_t>(index + 1)) ^ 0x7374616c65ull);
  const auto one = static_cast<std::byte>(rng() & 0xFF);
  std::vector<double> stale;
  if (way == Prefill::stale)
    for (const auto& call : c.calls)
      for (const HostTensor& t : call.inputs) {
        const std::vector<double> v = t.values();
        for (double x : v)
          if (std::isfinite(x)) stale.push_back(x);
      }
  if (way == Prefill::stale && stale.empty()) stale.push_back(0.0);
  std::size_t at = stale.empty() ? 0 : static_cast<std::size_t>(rng() % stale.size());
  for (auto& call : c.calls)
    for (auto& t : call.outputs) {
      if (way == Prefill::zeros) fill_bytes(t, std::byte{0});
      else if (way == Prefill::one_byte) fill_bytes(t, one);
      else if (way == Prefill::random_bytes)
        for (auto& b : t.storage) b = static_cast<std::byte>(rng() & 0xFF);
      else {
        // Every storage byte first (the gaps of a strided output), then each element.
        // NOTES: a contiguous output's element i is at i: stored directly, and the stale index
        // wrapped without a division, as a 16.8M-element output's prefill did per element
        // through set() (session 31). The same bytes.
        fill_bytes(t, std::byte{0});
        const bool row_major = t.is_contiguous();
        const std::size_t es = dtype_size(t.dtype);
        for (int64_t i = 0; i < t.numel(); ++i) {
          if (row_major) store_element(t.dtype, t.storage.data() + static_cast<std::size_t>(i) * es, stale[at]);
          else t.set(i, stale[at]);
          if (++at == stale.size()) at = 0;
        }
      }
    }
}

CasePlan single_call_plan(std::string label, const Contract& contract, Bindings b, uint64_t seed, int64_t index,
                          std::string kind, bool varied_prefill) {
  // NOTES: single_call_case's tensors are contiguous: staging is twice their bytes, and once more
  // for the outputs (their second snapshot at the end of the case; runner.cpp's staged_bytes).
  int64_t bytes = 0;
  for (std::size_t i = 0; i < contract.inputs.size(); ++i)
    bytes += 2 * numel(contract.input_shape(i, b)) * static_cast<int64_t>(dtype_size(contract.inputs[i].dtype));
  for (std::size_t o = 0; o < contract.outputs.size(); ++o)
    bytes += 3 * numel(contract.output_shape(o, b)) * static_cast<int64_t>(dtype_size(contract.outputs[o].dtype));
  return {label,
          [label, &contract, b = std::move(b), seed, index, kind = std::move(kind), varied_prefill] {
            Rng rng = case_rng(seed, index);
            Case c = single_call_case(label, contract, b, rng, kind);
            if (varied_prefill) vary_prefill(c, seed, index);
            return c;
          },
          bytes};
}

Calling calling_for(const GateContext& ctx, uint64_t seed, int64_t i, int64_t n) {
  if (!ctx.backend.has_streams()) return Calling::kcv;
  // NOTES: seeded, so which cases call which way cannot be learnt from one run; with few cases
  // kcv's own way is left out (every other case of the run has it).
  const auto r = static_cast<int64_t>(seed % 12);
  if (n >= 4) return static_cast<Calling>((i + r) % 4);
  return static_cast<Calling>(1 + (i + r) % 3);
}

void call_as(Case& c, Calling how) {
  if (how == Calling::kcv) return;
  const bool null = how == Calling::null_stream || how == Calling::null_stream_exact_buffers;
  const bool exact = how == Calling::exact_buffers || how == Calling::null_stream_exact_buffers;
  bool any = false;
  for (CallSpec& call : c.calls) {
    if (call.large) continue;
    call.null_stream = null;
    call.exact_buffers = exact;
    any = true;
  }
  if (!any) return;
  c.label += null && exact ? " [null stream, exact buffers]" : null ? " [null stream]" : " [exact buffers]";
}

void vary_calling(const GateContext& ctx, uint64_t seed, std::vector<Case>& cases) {
  const auto n = static_cast<int64_t>(cases.size());
  for (int64_t i = 0; i < n; ++i) call_as(cases[static_cast<std::size_t>(i)], calling_for(ctx, seed, i, n));
}

std::vector<CasePlan> vary_calling(const GateContext& ctx, uint64_t seed, std::vector<CasePlan> plans) {
  const auto n = static_cast<int64_t>(plans.size());
  for (int64_t i = 0; i < n; ++i) {
    const Calling how = calling_for(ctx, seed, i, n);
    if (how == Calling::kcv) continue;
    CasePlan& p = plans[static_cast<std::size_t>(i)];
    p.make = [make = std::move(p.make), how] {
      Case c = make();
      call_as(c, how);
      return c;
    };
    // The plan's label is the made case's (call_as appends the same words).
    Case probe;
    probe.calls.emplace_back();
    probe.label = p.label;
    call_as(probe, how);
    p.label = probe.label;
  }
  return plans;
}

std::vector<int64_t> boundary_sizes(const SymbolSpec& s) {
  // NOTES: 1 and 2; primes; 2^k-1 and 2^k+1; sizes divisible by 4 but not 8, 8 not 16, ...,
  // 64 not 128 — so that every tile width up to 128 leaves a tail somewhere.
  static const int64_t sizes[] = {1,    2,    3,    4,    5,    7,    9,    13,   15,   17,   24,  31,
                                  33,   48,   63,   65,   96,   100,  127,  129,  192,  255, 257,
                                  511,  513,  1000, 1021, 1023, 1025, 2047, 2049, 4095, 4097, 8191, 8193};
  const int64_t hi = std::min(s.max, s.sweep_max);
  std::vector<int64_t> out;
  if (!s.sweep.empty()) {
    for (int64_t v : s.sweep)
      if (v >= s.min && v <= hi && v != s.nominal && std::find(out.begin(), out.end(), v) == out.end()) out.push_back(v);
    return out;
  }
  for (int64_t v : sizes)
    if (v >= s.min && v <= hi && v != s.nominal) out.push_back(v);
  if (out.empty() || out.front() != s.min) {
    if (s.min != s.nominal && std::find(out.begin(), out.end(), s.min) == out.end()) out.insert(out.begin(), s.min);
  }
  return out;
}

std::optional<Bindings> uniform_shape(const Contract& contract, int64_t v) {
  Bindings b = contract.nominal();
  for (const auto& s : contract.symbols) b[s.name] = std::clamp(v, s.min, std::min(s.max, s.sweep_max));
  if (!contract.valid(b)) return std::nullopt;
  return b;
}

std::vector<Bindings> nominal_and_uniform(const Contract& contract, std::initializer_list<int64_t> sizes) {
  std::vector<Bindings> shapes = {contract.structural_shape()};
  for (int64_t v : sizes)
    if (auto b = uniform_shape(contract, v)) shapes.push_back(*b);
  return shapes;
}

std::vector<CasePlan> one_call_per_shape_plans(const Contract& contract, const std::vector<Bindings>& shapes,
                                               uint64_t seed, bool varied_prefill) {
  std::vector<CasePlan> out;
  for (const auto& b : shapes)
    out.push_back(single_call_plan(bindings_string(b), contract, b, seed, static_cast<int64_t>(out.size()), "normal",
                                   varied_prefill));
  return out;
}

std::vector<Case> one_call_per_shape(const Contract& contract, const std::vector<Bindings>& shapes, uint64_t seed) {
  return make_all(one_call_per_shape_plans(contract, shapes, seed));
}

std::string structural_note(const Contract& contract) { return structural_note(contract, contract.structural_shape()); }

std::string structural_note(const Contract& contract, const Bindings& s) {
  const Bindings n = contract.nominal();
  if (s == n) return {};
  return fmt::format("ran at {}, not the problem's own {} (a size-independent check of a large problem)",
                     bindings_string(s), bindings_string(n));
}

CaseJudgement refusal(const CallResult& r) {
  return {Verdict::refused, fmt::format("refused (rc {}): {}", r.rc, r.message.empty() ? "no message" : r.message)};
}

namespace {

/// Whether the problem promises some input's elements to be zero (an upper or lower triangle).
bool promises_zeros(const Contract& k) {
  return std::any_of(k.inputs.begin(), k.inputs.end(), [](const TensorSpec& t) {
    return t.structure == Structure::upper || t.structure == Structure::lower;
  });
}

/// The reference on the problem's domain (docs/nonfinite-classes.md, "Structural zeros"): for a
/// call whose floating inputs hold non-finite elements, the reference twice more with each of them
/// replaced by a finite probe (+3·(1 + m), then −(1 + m)/2, m the input's largest finite |value|,
/// kept well inside its dtype): per output element the value where both probes give the same
/// finite value — the element reaches the injected ones only through products with promised
/// zeros — and NaN elsewhere. Empty when no input holds a non-finite element.
std::vector<RefTensor> domain_reference(const Contract& k, const CallSpec& spec, const Bindings& shape) {
  struct Holes {
    std::vector<int64_t> at;  // the input's non-finite elements (logical indices)
    double probe = 0;         // its probe's magnitude
  };
  std::vector<Holes> holes(spec.inputs.size());
  bool any = false;
  for (std::size_t i = 0; i < spec.inputs.size(); ++i) {
    const HostTensor& t = spec.inputs[i];
    if (!is_floating(t.dtype)) continue;
    const std::vector<double> v = t.values();
    double m = 0;
    for (std::size_t j = 0; j < v.size(); ++j) {
      if (std::isfinite(v[j])) m = std::max(m, std::abs(v[j]));
      else holes[i].at.push_back(static_cast<int64_t>(j));
    }
    holes[i].probe = std::min(1 + m, max_finite(t.dtype) / 16);
    any = any || !holes[i].at.empty();
  }
  if (!any) return {};
  auto probe = [&](double scale) {
    std::vector<HostTensor> in = spec.inputs;
    for (std::size_t i = 0; i < in.size(); ++i)
      for (int64_t j : holes[i].at) in[i].set(j, scale * holes[i].probe);
    return in;
  };
  std::vector<RefTensor> hi, lo;
  try {
    hi = k.reference(probe(3.0), spec.scalars, shape, SumOrder::forward);
    lo = k.reference(probe(-0.5), spec.scalars, shape, SumOrder::forward);
  } catch (const ReferenceRejects&) {
    return {};  // outside the Model's domain: the reference's own classes alone
  }
  for (std::size_t o = 0; o < hi.size() && o < lo.size(); ++o)
    for (std::size_t e = 0; e < hi[o].value.size() && e < lo[o].value.size(); ++e)
      if (!(std::isfinite(hi[o].value[e]) && hi[o].value[e] == lo[o].value[e]))
        hi[o].value[e] = std::numeric_limits<double>::quiet_NaN();
  return hi;
}

}  // namespace

CaseJudgement judge_call(const Contract& contract, const Bindings& shape, const CallSpec& spec,
                         const CallResult& result, const JudgeOptions& opts, const CallResult* plain) {
  if (result.rc != 0) {
    // NOTES: a clean refusal says why (ABI: a message in error); a bare non-zero is not one.
    if (opts.refusal_ok && result.message.empty())
      return {Verdict::fail, fmt::format("returned {} with no message: not a clean refusal", result.rc)};
    if (opts.refusal_ok) return {Verdict::pass, fmt::format("refused cleanly: {}", result.message)};
    // NOTES: a candidate that refuses inputs its reference rejects too does what the reference
    // does (a KernelBench Model raising outside its domain, offered as its own candidate).
    if (contract.reference_may_reject) {
      try {
        (void)contract.reference(spec.inputs, spec.scalars, shape, SumOrder::forward);
      } catch (const ReferenceRejects& e) {
        return {Verdict::pass, fmt::format("refused inputs the reference rejects too ({})", e.what())};
      }
    }
    return refusal(result);
  }
  std::vector<RefTensor> ref;
  try {
    ref = contract.reference(spec.inputs, spec.scalars, shape, SumOrder::forward);
  } catch (const ReferenceRejects& e) {
    return {Verdict::pass, fmt::format("not judged: the reference rejects these inputs ({})", e.what())};
  }
  // NOTES: a reference that classifies the terms of every output decides classes itself
  // (docs/nonfinite-classes.md); a second order is only evaluated for one that does not.
  const bool classified = std::all_of(ref.begin(), ref.end(), [](const RefTensor& r) { return !r.classes.empty(); });
  const bool two_orders = (opts.two_orders || contract.classes_in_two_orders) && !classified;
  std::vector<RefTensor> alt;
  if (two_orders) alt = contract.reference(spec.inputs, spec.scalars, shape, SumOrder::reverse);
  // The reference on the problem's domain (structural zeros), made only when an output fails without
  // it: it can only add accepted classes, and costs two more reference calls.
  std::vector<RefTensor> domain;
  bool domain_made = false;
  auto domain_of = [&](std::size_t o) -> const RefTensor* {
    if (!promises_zeros(contract)) return nullptr;
    if (!domain_made) domain = domain_reference(contract, spec, shape), domain_made = true;
    return o < domain.size() ? &domain[o] : nullptr;
  };
  CaseJudgement out;
  std::string as_plain;  // what passed only as no worse than the plain twin
  for (std::size_t o = 0; o < contract.outputs.size(); ++o) {
    const RefTensor* alt_o = two_orders ? &alt[o] : nullptr;
    Comparison cmp = compare(result.outputs[o], ref[o], alt_o, contract.accumulate, contract.c, opts.classes_only);
    const RefTensor* dom_o = cmp.ok() ? nullptr : domain_of(o);
    if (dom_o)
      cmp = compare(result.outputs[o], ref[o], alt_o, contract.accumulate, contract.c, opts.classes_only, 5, nullptr,
                    dom_o);
    if (!cmp.ok() && !opts.classes_only && plain && plain->rc == 0 && o < plain->outputs.size() &&
        plain->outputs[o].numel() == result.outputs[o].numel()) {
      // NOTES: the twin's own distance from the model sets the allowance; classes it shares pass.
      // A plain call is its own twin: its distance is the comparison just made.
      const double own_worst = plain == &result ? cmp.worst_ratio
                                                : compare(plain->outputs[o], ref[o], alt_o, contract.accumulate,
                                                          contract.c, false, 0, nullptr, dom_o).worst_ratio;
      const PlainTwin twin{&plain->outputs[o], std::max(1.0, own_worst)};
      cmp = compare(result.outputs[o], ref[o], alt_o, contract.accumulate, contract.c, false, 5, &twin, dom_o);
      if (cmp.as_plain > 0)
        as_plain += fmt::format("{}out '{}': {} of {} elements outside the model, none further from it than the "
                                "plain call on the same inputs (worst err/bound {:.3g} here, {:.3g} there): the "
                                "candidate's own error, for numerics, shapes and values to judge",
                                as_plain.empty() ? "" : "; ", contract.outputs[o].name, cmp.as_plain, cmp.checked,
                                cmp.as_plain_worst, twin.worst_ratio);
    }
    if (cmp.worst_index >= 0 && !opts.classes_only) {
      const WorstElement w{cmp.worst_error, cmp.worst_bound};
      if (!out.worst || w.ratio() > out.worst->ratio()) out.worst = w;
    }
    if (!cmp.ok()) {
      out.verdict = Verdict::fail;
      out.evidence = cmp.describe(contract.outputs[o].name, result.outputs[o].shape);
      return out;
    }
    if (opts.population && !opts.classes_only) {
      // NOTES: after the worst-case bound, which every element met: the errors as a population
      // (docs/population-test.md). Against the forward reference: on random finite data the
      // orders differ by ~1e-16 relative.
      const Population pop = population_test(result.outputs[o], ref[o], contract.accumulate, contract.c);
      if (!pop.ok()) {
        out.verdict = Verdict::fail;
        out.evidence = fmt::format("{}; every element within the worst-case bound (worst err/bound {:.3g})",
                                   pop.describe(contract.outputs[o].name, result.outputs[o].shape), cmp.worst_ratio);
        return out;
      }
    }
  }
  out.evidence = as_plain;
  return out;
}

CaseJudgement guards_intact(const Contract& contract, const CallSpec& spec, const CallResult& r) {
  // NOTES: not only the bounds gate's: its fixed placement differs from every other gate's, and
  // a candidate that wrote past its buffers only where they are placed otherwise would pass it.
  for (std::size_t o = 0; o < r.output_guards.size() && o < spec.outputs.size(); ++o)
    if (!r.output_guards[o].intact)
      return {Verdict::fail, describe_guard("output", contract.outputs[o].name, r.output_guards[o],
                                            static_cast<int64_t>(spec.outputs[o].span_bytes()))};
  for (std::size_t i = 0; i < r.input_guards.size() && i < spec.inputs.size(); ++i)
    if (!r.input_guards[i].intact)
      return {Verdict::fail, describe_guard("input", contract.inputs[i].name, r.input_guards[i],
                                            static_cast<int64_t>(spec.inputs[i].span_bytes()))};
  return {};
}

CaseJudgement judge_all_calls(const Contract& contract, const Case& c, const CaseRun& run, const JudgeOptions& opts) {
  CaseJudgement pass;  // a pass keeps the first note (e.g. "refused cleanly: ...")
  JudgeOptions call_opts = opts;
  call_opts.population = opts.population && c.random_inputs;
  for (std::size_t k = 0; k < c.calls.size(); ++k) {
    if (CaseJudgement g = guards_intact(contract, c.calls[k], run.calls[k]); g.verdict != Verdict::pass) {
      if (c.calls.size() > 1) g.evidence = fmt::format("call {}: {}", k, g.evidence);
      return g;
    }
    const int t = c.calls[k].plain_twin;
    const CallResult* plain = t >= 0 && static_cast<std::size_t>(t) < run.calls.size() ? &run.calls[t] : nullptr;
    CaseJudgement j = judge_call(contract, c.shape, c.calls[k], run.calls[k], call_opts, plain);
    if (j.verdict != Verdict::pass) {
      if (c.calls.size() > 1) j.evidence = fmt::format("call {}: {}", k, j.evidence);
      return j;
    }
    if (pass.evidence.empty()) pass.evidence = j.evidence;
    if (j.worst && (!pass.worst || j.worst->ratio() > pass.worst->ratio())) pass.worst = j.worst;
  }
  return pass;
}

std::string describe_guard(const std::string& what, const std::string& name, const GuardReport& g, int64_t span) {
  const std::string where = g.first_bad < 0 ? fmt::format("{} bytes before its first byte", -g.first_bad)
                                            : fmt::format("at offset {} after its end", g.first_bad - span);
  return fmt::format("{} '{}': {} guard byte(s) changed, first {}", what, name, g.bad_bytes, where);
}

std::string describe_fault(const Contract& contract, const Case& c, const CaseRun& run) {
  const Fault& f = run.fault;
  if (!f.known || f.call < 0 || f.call >= static_cast<int>(c.calls.size())) return {};
  const auto& specs = f.input ? contract.inputs : contract.outputs;
  const auto& tensors = f.input ? c.calls[f.call].inputs : c.calls[f.call].outputs;
  if (f.arg < 0 || f.arg >= static_cast<int>(tensors.size())) return {};
  const int64_t span = static_cast<int64_t>(tensors[f.arg].span_bytes());
  const std::string where = f.offset == span ? std::string("just past the end of")
                            : f.offset > span ? fmt::format("{} bytes past the end of", f.offset - span)
                            : f.offset < 0   ? fmt::format("{} bytes before the start of", -f.offset)
                                             : fmt::format("at byte {} of", f.offset);
  return fmt::format("access {} {} '{}'{}", where, f.input ? "input" : "output", specs[f.arg].name,
                     c.calls.size() > 1 ? fmt::format(" (call {})", f.call) : "");
}

}  // namespace kcv::gates
