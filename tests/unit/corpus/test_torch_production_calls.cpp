// The torch worker calls as production does when the plan asks (issue 26): an exact call's
// inputs are tensors of exactly their span from the allocator, no guard band (a solution that
// looks at its input's storage sees the difference); what comes back is the span alone. Real torch (Debian's python3-torch), cpu backend: the flags are only set for
// cuda by the gates, so here a case sets them itself.
#include <gtest/gtest.h>

#include "corpus_test_support.hpp"
#include "kcv/candidate.hpp"
#include "kcv/gates/common.hpp"
#include "kcv/kernelbench.hpp"
#include "kcv/runner.hpp"

namespace kcv::corpus_test {
namespace {

const std::string kRowsum = std::string(KCV_SOURCE_DIR) + "/controls/torch/rowsum";

/// Right, and says in its result whether x's storage is exactly x (a tensor of its own size) or a
/// view into something larger (a guarded buffer): +1000 in every element when larger.
constexpr const char* kStorageProbe = R"(import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def forward(self, x):
        y = torch.relu(x) * 2.0 + x.sum(dim=1, keepdim=True)
        storage = x.untyped_storage() if hasattr(x, "untyped_storage") else x.storage()
        if storage.nbytes() != x.numel() * x.element_size():
            y = y + 1000.0
        return y
)";

TEST(TorchProductionCalls, ExactCallsGetTheirInputsWithoutGuardsAndComeBackRight) {
  TempDir tmp;
  KernelBenchSetup setup;
  setup.problem = kRowsum + "/problem.py";
  setup.python = resolve_python(torch_python(), Settings{});
  setup.workdir = tmp.path();
  auto contract = KernelBenchContract::create(setup);
  const std::string probe = tmp.path() + "/probe.py";
  write_file(probe, kStorageProbe);
  const Candidate candidate = Candidate::kernelbench(setup.problem, probe, setup.python);
  RunnerOptions o;
  o.worker = default_worker_path(Settings{});
  o.workdir = tmp.path();
  o.timeout_s = 5;
  o.load_timeout_s = 300;
  o.canary_key = 78;
  o.kernelbench = contract->worker_plan();
  Runner runner(candidate, o);

  Bindings b = contract->nominal();
  b["batch_size"] = 5;
  Rng rng(3);
  Case c = gates::single_call_case("exact", *contract, b, rng);
  gates::add_plain_twin(c, 0);
  // Call 0 exact and on the null stream; a third call reuses its buffers with new contents.
  CallSpec again = gates::make_call(*contract, b, rng);
  again.reuse_buffers_of = 0;
  c.calls.push_back(again);
  Case guarded = c;
  guarded.label = "guarded";
  for (CallSpec& call : c.calls) call.exact_buffers = call.null_stream = true;
  const std::vector<CaseRun> runs = runner.run({c, guarded});
  // Control: in kcv's guarded buffers the probe sees a larger storage and is wrong.
  ASSERT_EQ(runs.size(), 2u);
  ASSERT_EQ(runs[1].status, RunStatus::ok) << runs[1].detail;
  EXPECT_EQ(gates::judge_call(*contract, guarded.shape, guarded.calls[0], runs[1].calls[0], {}).verdict, Verdict::fail);
  ASSERT_EQ(runs[0].status, RunStatus::ok) << runs[0].detail << runs[0].log;
  for (std::size_t k = 0; k < c.calls.size(); ++k) {
    const CallResult& r = runs[0].calls[k];
    const CaseJudgement j = gates::judge_call(*contract, c.shape, c.calls[k], r, {});
    EXPECT_EQ(j.verdict, Verdict::pass) << "call " << k << ": " << j.evidence;
    // The inputs came back whole from buffers of their own size.
    for (std::size_t i = 0; i < r.inputs_after.size(); ++i)
      EXPECT_EQ(r.inputs_after[i].storage, c.calls[k].inputs[i].storage) << "call " << k << " input " << i;
  }
}

}  // namespace
}  // namespace kcv::corpus_test
