// Gate 8 `determinism`: the same inputs run 5 times at different addresses must give bitwise
// identical outputs; so must runs with other thread counts (cpu) — across cases, same inputs.
#include <fmt/format.h>

#include "kcv/backends/host_backend.hpp"
#include "kcv/gates/common.hpp"
#include "kcv/gates/registry.hpp"

namespace kcv::gates {
namespace {

CaseJudgement compare_outputs(const Contract& k, const CallResult& first, const CallResult& other, const std::string& what) {
  for (std::size_t o = 0; o < k.outputs.size(); ++o) {
    const int64_t at = first.outputs[o].first_bit_difference(other.outputs[o]);
    if (at >= 0)
      return {Verdict::fail, fmt::format("{}: output '{}' at {} is {:.9g}, first run gave {:.9g}", what, k.outputs[o].name,
                                         index_string(at, first.outputs[o].shape), other.outputs[o].get(at),
                                         first.outputs[o].get(at))};
  }
  return {};
}

class DeterminismGate final : public Gate {
 public:
  std::string_view id() const override { return "determinism"; }
  std::string_view summary() const override { return "repeated runs bitwise identical (addresses, thread counts)"; }
  bool tolerance_independent() const override { return true; }
  std::string note(const GateContext& ctx) const override { return structural_note(ctx.contract); }

  /// Without streams (cpu): workers started with 1 and 3 threads (a process started so, not a
  /// call made so).
  std::vector<WorkerOptions> worker_options(const GateContext& ctx) const override {
    if (ctx.backend.has_streams()) return {};
    std::vector<WorkerOptions> out(2);
    out[0].threads = 1;
    out[1].threads = 3;
    return out;
  }

  std::vector<Case> cases(const GateContext& ctx, uint64_t seed) const override {
    const Bindings b = ctx.contract.structural_shape();
    Rng rng = case_rng(seed, 0);
    const CallSpec call = make_call(ctx.contract, b, rng);
    std::vector<Case> out;
    Case first;
    first.label = "5 runs";
    first.shape = b;
    first.calls.assign(5, call);
    out.push_back(std::move(first));
    // NOTES: same inputs in every case; judge_across compares the cases. With streams (cuda): a
    // load kernel on another stream shares the device during each call; without: other thread counts.
    if (ctx.backend.has_streams()) {
      Case loaded;
      loaded.label = "3 runs beside a co-running load kernel";
      loaded.shape = b;
      loaded.calls.assign(3, call);
      for (auto& c : loaded.calls) c.background_load = true;
      out.push_back(std::move(loaded));
    } else {
      for (const WorkerOptions& w : worker_options(ctx)) {
        Case c;
        c.label = fmt::format("{} thread(s)", w.threads);
        c.shape = b;
        c.worker = w;
        c.calls.assign(2, call);
        out.push_back(std::move(c));
      }
    }
    vary_calling(ctx, seed, out);
    return out;
  }

  CaseJudgement judge(const GateContext& ctx, const Case& c, const CaseRun& run) const override {
    for (std::size_t k = 0; k < run.calls.size(); ++k) {
      const CallResult& r = run.calls[k];
      if (r.rc != 0) return refusal(r);
      if (k == 0) continue;
      CaseJudgement j = compare_outputs(ctx.contract, run.calls[0], r, fmt::format("run {}", k));
      if (j.verdict != Verdict::pass) return j;
    }
    return {};
  }

  bool judges_across() const override { return true; }

  CaseJudgement judge_across(const GateContext& ctx, const std::vector<Case>& cases,
                             const std::vector<CaseRun>& runs) const override {
    for (std::size_t i = 1; i < runs.size(); ++i) {
      CaseJudgement j = compare_outputs(ctx.contract, runs[0].calls[0], runs[i].calls[0], cases[i].label);
      if (j.verdict != Verdict::pass) {
        j.evidence = fmt::format("case {} ({}) vs case 0: {}", i, cases[i].label, j.evidence);
        return j;
      }
    }
    return {};
  }
};

}  // namespace

std::unique_ptr<Gate> make_determinism_gate() { return std::make_unique<DeterminismGate>(); }

}  // namespace kcv::gates
