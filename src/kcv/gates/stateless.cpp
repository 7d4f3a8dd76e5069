// Gate 10 `stateless`: anti-caching. Same addresses with new contents (A/B/A), same contents at
// new addresses, and a change in only the last element of every input: outputs must track the
// inputs every time. And long runs (issue 26): one worker makes thousands of calls at a cheap
// shape, as a production caller does; a sample spread over the run, the last call included, is
// judged (a kernel right only for its first calls fails).
#include <fmt/format.h>

#include "kcv/candidate.hpp"
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
    CallSpec a_tail = a;   // A with the last element of every floating input changed
    for (std::size_t in = 0; in < k.inputs.size(); ++in) {
      HostTensor& t = a_tail.inputs[in];
      if (k.inputs[in].domain == Domain::structural || t.numel() == 0) continue;
      const int64_t last = t.numel() - 1;
      t.set(last, k.inputs[in].domain == Domain::nonpositive ? t.get(last) - 0.5 : t.get(last) + 0.5);
    }
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
    vary_calling(ctx, seed, out);
    // cuda: one long run in kcv's setting, one as production calls (null stream, exact buffers).
    // NOTES: not for KernelBench solutions: their problems' shapes are fixed and a torch call
    // costs milliseconds; thousands of them would outlast the gate's budget.
    if (ctx.candidate.kind() == "kernelbench") return out;
    out.push_back(long_run(k, seed, Calling::kcv, 1));
    if (ctx.backend == "cuda") out.push_back(long_run(k, seed, Calling::null_stream_exact_buffers, 2));
    return out;
  }

  CaseJudgement judge(const GateContext& ctx, const Case& c, const CaseRun& run) const override {
    return judge_all_calls(ctx.contract, c, run);
  }

 private:
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
