// Gate 10 `stateless`: anti-caching. Same addresses with new contents (A/B/A), same contents at
// new addresses, and a change in only the last element of every input: outputs must track the
// inputs every time.
#include <fmt/format.h>

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
    return out;
  }

  CaseJudgement judge(const GateContext& ctx, const Case& c, const CaseRun& run) const override {
    return judge_all_calls(ctx.contract, c, run);
  }
};

}  // namespace

std::unique_ptr<Gate> make_stateless_gate() { return std::make_unique<StatelessGate>(); }

}  // namespace kcv::gates
