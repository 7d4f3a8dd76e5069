// Gate 11 `concurrency`. cpu: two host threads call at once on disjoint buffers; both results
// must be right. cuda: a writer kernel on the caller's stream fills the inputs right before the
// call; the result must reflect them and be complete once that stream is synchronized. Some rounds
// hand over the null stream handle (the writer on the legacy default stream) and exact buffers.
#include <fmt/format.h>

#include "kcv/backends/host_backend.hpp"
#include "kcv/gates/common.hpp"
#include "kcv/gates/registry.hpp"

namespace kcv::gates {
namespace {

class ConcurrencyGate final : public Gate {
 public:
  std::string_view id() const override { return "concurrency"; }
  std::string_view summary() const override { return "concurrent callers (cpu) / stream ordering (cuda)"; }
  bool tolerance_independent() const override { return true; }
  std::string note(const GateContext& ctx) const override { return structural_note(ctx.contract); }

  std::vector<Case> cases(const GateContext& ctx, uint64_t seed) const override {
    const Bindings b = ctx.contract.structural_shape();
    std::vector<Case> out;
    for (int64_t i = 0; i < kRounds; ++i) {
      Rng rng = case_rng(seed, i);
      Case c;
      c.shape = b;
      if (ctx.backend.has_streams()) {
        c.label = fmt::format("writer kernel before the call, round {}", i);
        c.calls.push_back(make_call(ctx.contract, b, rng));
        c.calls[0].writer_kernel = true;
      } else {
        c.label = fmt::format("two threads at once, round {}", i);
        c.calls.push_back(make_call(ctx.contract, b, rng));
        c.calls.push_back(make_call(ctx.contract, b, rng));
        c.calls[0].concurrent_with_next = true;
      }
      // Each call's values once more, alone and in order: a precision failure is not a race.
      for (std::size_t k = 0, n = c.calls.size(); k < n; ++k) add_plain_twin(c, k);
      out.push_back(std::move(c));
    }
    // NOTES: cuda: on the null stream too (issue 26). The writer kernel then runs on the legacy
    // default stream and only that stream is synchronized before the snapshot: work the candidate
    // put on a non-blocking stream of its own is as unordered there as beside kcv's stream.
    vary_calling(ctx, seed, out);
    return out;
  }

  CaseJudgement judge(const GateContext& ctx, const Case& c, const CaseRun& run) const override {
    return judge_all_calls(ctx.contract, c, run);
  }

 private:
  static constexpr int64_t kRounds = 6;
};

}  // namespace

std::unique_ptr<Gate> make_concurrency_gate() { return std::make_unique<ConcurrencyGate>(); }

}  // namespace kcv::gates
