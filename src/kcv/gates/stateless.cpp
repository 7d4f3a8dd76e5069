// Gate 10 `stateless`: anti-caching. Same addresses with new contents (A/B/A), same contents at
// new addresses, and a change in only the last element of every input, or in one element at an
// interior position drawn from the run's seed: outputs must track the inputs every time. And long runs (issue 26): one worker makes thousands of calls at a cheap
// shape, as a production caller does; a sample spread over the run, the last call included, is
// judged (a kernel right only for its first calls fails).
#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "kcv/backends/host_backend.hpp"
#include "kcv/candidate.hpp"
#include "kcv/error_model.hpp"
#include "kcv/gates/common.hpp"
#include "kcv/gates/registry.hpp"

namespace kcv::gates {
namespace {

class StatelessGate final : public Gate {
 public:
  std::string_view id() const override { return "stateless"; }
  std::string_view summary() const override { return "outputs track inputs across reused/new addresses"; }
  bool tolerance_independent() const override { return true; }
  std::string note(const GateContext& ctx) const override { return structural_note(ctx.contract); }

  std::vector<Case> cases(const GateContext& ctx, uint64_t seed) const override {
    const Contract& k = ctx.contract;
    const Bindings b = k.structural_shape();
    Rng rng = case_rng(seed, 0);
    const CallSpec a = make_call(k, b, rng), other = make_call(k, b, rng);
    // A with one element of every floating input changed: the last, or (issue 25, class 4) one at
    // an interior position drawn from the seed, so that no cache keyed on a few elements a
    // cheater can predict (the ends, fixed offsets) passes.
    // NOTES: the position is of the flat storage in index order; a change there reaches every
    // output element that depends on it, which the plain twin on the same values judges.
    Rng where = case_rng(seed, 77);
    auto changed_at = [&](bool interior) {
      CallSpec c = a;
      for (std::size_t in = 0; in < k.inputs.size(); ++in) {
        HostTensor& t = c.inputs[in];
        if (k.inputs[in].domain == Domain::structural || t.numel() == 0) continue;
        int64_t at = t.numel() - 1;
        if (interior && t.numel() > 2) at = 1 + static_cast<int64_t>(where() % static_cast<uint64_t>(t.numel() - 2));
        at = k.free_index(in, t.shape, at);  // an element its structure lets change (Structure)
        t.set(at, k.inputs[in].domain == Domain::nonpositive ? t.get(at) - 0.5 : t.get(at) + 0.5);
      }
      k.keep_structure(c.inputs);
      return c;
    };
    const CallSpec a_tail = changed_at(false), a_inner = changed_at(true);
    std::vector<Case> out;
    // twin[i]: the plain call of the case with call i's values (docs/tolerance-independence.md);
    // -1: a plain twin is appended. A call at fresh addresses is plain.
    auto make = [&](std::string label, std::vector<CallSpec> calls, std::vector<int> reuse, std::vector<int> twin) {
      Case c;
      c.label = std::move(label);
      c.shape = b;
      for (std::size_t i = 0; i < calls.size(); ++i) calls[i].reuse_buffers_of = reuse[i];
      c.calls = std::move(calls);
      for (std::size_t i = 0, n = c.calls.size(); i < n; ++i) {
        if (twin[i] >= 0) c.calls[i].plain_twin = twin[i];
        else add_plain_twin(c, i);
      }
      out.push_back(std::move(c));
    };
    make("A/B/A at the same addresses", {a, other, a}, {-1, 0, 0}, {0, -1, 0});
    make("same contents at new addresses", {a, a}, {-1, -1}, {0, 0});
    make("A then A with each input's last element changed, same addresses", {a, a_tail}, {-1, 0}, {0, -1});
    make("A then A with one element of each input changed at a seeded interior position, same addresses",
         {a, a_inner}, {-1, 0}, {0, -1});
    vary_calling(ctx, seed, out);
    // With streams (cuda): one long run in kcv's setting, one as production calls (null stream, exact buffers).
    // NOTES: not for KernelBench solutions: their problems' shapes are fixed and a torch call
    // costs milliseconds; thousands of them would outlast the gate's budget.
    const std::vector<WorkerOptions> own = worker_options(ctx);
    if (!own.empty()) out.push_back(long_run(k, seed, Calling::kcv, own[0].tag));
    if (own.size() > 1) out.push_back(long_run(k, seed, Calling::null_stream_exact_buffers, own[1].tag));
    return out;
  }

  /// The long runs' workers of their own (tags 1, and 2 with streams); none for KernelBench solutions.
  std::vector<WorkerOptions> worker_options(const GateContext& ctx) const override {
    if (ctx.candidate.kind() == "kernelbench") return {};
    std::vector<WorkerOptions> out(ctx.backend.has_streams() ? 2 : 1);
    for (std::size_t i = 0; i < out.size(); ++i) out[i].tag = static_cast<int>(i) + 1;
    return out;
  }

  CaseJudgement judge(const GateContext& ctx, const Case& c, const CaseRun& run) const override {
    CaseJudgement j = judge_all_calls(ctx.contract, c, run);
    if (j.verdict != Verdict::pass) return j;
    if (CaseJudgement t = tracks_inputs(ctx.contract, c, run); t.verdict != Verdict::pass) return t;
    return j;
  }

 private:
  /// A call at the addresses of an earlier call with other inputs: where the model says their
  /// outputs differ by far more than the candidate's own error (its worst error/bound on the
  /// earlier call, itself judged first), the later output must be nearer its own reference than
  /// the earlier call's.
  /// NOTES: a result kept from the earlier call, by a cache keyed on a few elements the change
  /// missed, passes the plain-twin judgement: the twin has the same contents, so the same cache
  /// hands it the same stale output (docs/tolerance-independence.md). The margin (4 x the earlier
  /// call's worst ratio) keeps it a test of the setting, not of precision.
  static CaseJudgement tracks_inputs(const Contract& k, const Case& c, const CaseRun& run) {
    for (std::size_t q = 0; q < c.calls.size() && q < run.calls.size(); ++q) {
      const int p = c.calls[q].reuse_buffers_of;
      if (p < 0 || static_cast<std::size_t>(p) >= q) continue;
      const CallResult &rp = run.calls[static_cast<std::size_t>(p)], &rq = run.calls[q];
      if (!rp.ran || !rq.ran || rp.rc != 0 || rq.rc != 0) continue;
      std::vector<RefTensor> ref_p, ref_q;
      try {
        ref_p = k.reference(c.calls[static_cast<std::size_t>(p)].inputs, c.calls[static_cast<std::size_t>(p)].scalars,
                            c.shape, SumOrder::forward);
        ref_q = k.reference(c.calls[q].inputs, c.calls[q].scalars, c.shape, SumOrder::forward);
      } catch (const ReferenceRejects&) {
        continue;
      }
      for (std::size_t o = 0; o < k.outputs.size() && o < rp.outputs.size() && o < rq.outputs.size(); ++o) {
        const HostTensor &gp = rp.outputs[o], &gq = rq.outputs[o];
        const auto n = static_cast<int64_t>(ref_p[o].value.size());
        if (gp.numel() != n || gq.numel() != n || static_cast<int64_t>(ref_q[o].value.size()) != n) continue;
        auto bound = [&](const RefTensor& r, int64_t i) {
          return allowed_error(r, static_cast<std::size_t>(i), k.outputs[o].dtype, k.accumulate, k.c);
        };
        double w = 1;
        for (int64_t i = 0; i < n; ++i) {
          const double r = ref_p[o].value[static_cast<std::size_t>(i)], g = gp.get(i), b = bound(ref_p[o], i);
          if (std::isfinite(r) && std::isfinite(g) && b > 0) w = std::max(w, std::abs(g - r) / b);
        }
        for (int64_t i = 0; i < n; ++i) {
          const double was = ref_p[o].value[static_cast<std::size_t>(i)], is = ref_q[o].value[static_cast<std::size_t>(i)];
          const double g = gq.get(i);
          if (!std::isfinite(was) || !std::isfinite(is) || !std::isfinite(g)) continue;
          if (std::abs(is - was) <= 4 * w * (bound(ref_p[o], i) + bound(ref_q[o], i))) continue;
          if (std::abs(g - is) < std::abs(g - was)) continue;
          return {Verdict::fail,
                  fmt::format("call {} (at the addresses of call {}, other inputs): output '{}' element {} got {:.9g}, "
                              "nearer call {}'s expected {:.9g} than its own {:.9g}: a result kept from the earlier "
                              "inputs",
                              q, p, k.outputs[o].name, i, g, p, was, is)};
        }
      }
    }
    return {};
  }

  static constexpr int64_t kLongRunCalls = 4000;  // calls one worker makes in a long run, about
  static constexpr int64_t kJudged = 9;           // of them, judged late (the last included)

  /// In a worker of its own: first kJudged plain calls (their own twins), then the same kJudged
  /// inputs again at fresh addresses, each after a gap of unjudged calls on its buffers and judged
  /// beside its early twin: a late call may be no further from the model than the early call on
  /// the same inputs. Gaps are drawn from the seed, so no call number is known ahead to be judged.
  static Case long_run(const Contract& k, uint64_t seed, Calling how, int tag) {
    Bindings b = k.structural_shape();
    for (int64_t v : {13, 16, 32})  // cheap: thousands of calls must take well under a second
      if (auto small = uniform_shape(k, v)) { b = *small; break; }
    Rng rng = case_rng(seed, 1000 + static_cast<int64_t>(how));
    Case c;
    c.shape = b;
    c.worker.tag = tag;
    for (int64_t j = 0; j < kJudged; ++j) {
      c.calls.push_back(make_call(k, b, rng));
      c.calls.back().plain_twin = static_cast<int>(j);
    }
    const int64_t gap = (kLongRunCalls - 2 * kJudged) / kJudged;  // on average; at least gap / 2
    int64_t made = kJudged;
    for (int64_t j = 0; j < kJudged; ++j) {
      CallSpec call = c.calls[static_cast<std::size_t>(j)];
      call.calls_before = gap / 2 + static_cast<int64_t>(rng() % static_cast<uint64_t>(gap));
      made += call.calls_before + 1;
      call.plain_twin = static_cast<int>(j);
      c.calls.push_back(std::move(call));
    }
    c.label = fmt::format("long run: {} calls in one worker at {}, {} judged late beside the same inputs early "
                          "(the last call among them)", made, bindings_string(b), kJudged);
    call_as(c, how);
    return c;
  }
};

}  // namespace

std::unique_ptr<Gate> make_stateless_gate() { return std::make_unique<StatelessGate>(); }

}  // namespace kcv::gates
