// Torch worker sessions (src/kcv/protocol.hpp, fd 5): one torch worker serves every batch of the
// same worker options; a crash or hang ends the session and the next batch gets a fresh worker;
// sanitized batches never join a session. Real torch (Debian's python3-torch), cpu backend.
#include <gtest/gtest.h>

#include "corpus_test_support.hpp"
#include "kcv/candidate.hpp"
#include "kcv/gates/common.hpp"
#include "kcv/kernelbench.hpp"
#include "kcv/runner.hpp"

namespace kcv::corpus_test {
namespace {

const std::string kRowsum = std::string(KCV_SOURCE_DIR) + "/controls/torch/rowsum";

/// A rowsum solution that is right, except that it dies by SIGSEGV on a batch of exactly 3 rows
/// and never returns on a batch of exactly 5.
constexpr const char* kTripwires = R"(import ctypes
import time
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def forward(self, x):
        if x.shape[0] == 3:
            ctypes.c_int.from_address(8).value
        if x.shape[0] == 5:
            while True:
                time.sleep(1)
        return torch.relu(x) * 2.0 + x.sum(dim=1, keepdim=True)
)";

/// A rowsum solution that is right, except that it adds 1000 to its result when its input's
/// address (its first element's or its storage's) is one it has been called with before: a cache
/// keyed by address would return a stale result there.
constexpr const char* kAddressProbe = R"(import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self.seen = set()

    def forward(self, x):
        y = torch.relu(x) * 2.0 + x.sum(dim=1, keepdim=True)
        keys = {x.data_ptr(), x.storage().data_ptr()}
        if keys & self.seen:
            y = y + 1000.0
        self.seen |= keys
        return y
)";

struct Session {
  TempDir tmp;
  std::unique_ptr<KernelBenchContract> contract;
  Candidate candidate;
  std::unique_ptr<Runner> runner;
  uint64_t next_seed = 1;

  explicit Session(const std::string& solution) {
    KernelBenchSetup setup;
    setup.problem = kRowsum + "/problem.py";
    setup.python = resolve_python(torch_python(), Settings{});
    setup.workdir = tmp.path();
    contract = KernelBenchContract::create(setup);
    candidate = Candidate::kernelbench(setup.problem, solution, setup.python);
    RunnerOptions o;
    o.worker = default_worker_path(Settings{});
    o.workdir = tmp.path();
    o.timeout_s = 5;
    o.load_timeout_s = 300;
    o.canary_key = 77;
    o.kernelbench = contract->worker_plan();
    runner = std::make_unique<Runner>(candidate, o);
    runner->probe();
  }

  Case rows(int64_t batch, WorkerOptions w = {}) {
    Bindings b = contract->nominal();
    b["batch_size"] = batch;
    Rng rng(next_seed++);
    Case c = gates::single_call_case("batch " + std::to_string(batch), *contract, b, rng);
    c.worker = w;
    return c;
  }

  /// The case ran and its output is right (the contract's own judgement).
  void expect_right(const Case& c, const CaseRun& run) {
    ASSERT_EQ(run.status, RunStatus::ok) << run.detail;
    const CaseJudgement j = gates::judge_call(*contract, c.shape, c.calls[0], run.calls[0], {});
    EXPECT_EQ(j.verdict, Verdict::pass) << j.evidence;
  }
};

TEST(TorchSessions, OneWorkerServesEveryBatchOfTheSameOptions) {
  Session s(kRowsum + "/solution_ok.py");
  EXPECT_EQ(s.runner->workers_started(), 1);  // the probe's, still waiting
  for (int64_t batch : {4, 7, 1}) {
    const std::vector<Case> cases = {s.rows(batch), s.rows(batch + 1)};
    const auto runs = s.runner->run(cases);
    ASSERT_EQ(runs.size(), 2u);
    for (std::size_t i = 0; i < runs.size(); ++i) s.expect_right(cases[i], runs[i]);
  }
  EXPECT_EQ(s.runner->workers_started(), 1);
}

TEST(TorchSessions, ASessionsBatchesReuseItsDataFileWhenTheyFit) {
  // A fresh memfd per batch made kcv fault in and zero every page of it again (session 10). A
  // batch that fits the session's last one reuses it, zeroed first: the outputs read back must
  // be this batch's, whatever an earlier, larger batch left there.
  Session s(kRowsum + "/solution_ok.py");
  const int after_probe = s.runner->data_files_made();
  auto run_right = [&](std::vector<int64_t> batches) {
    std::vector<Case> cases;
    for (int64_t b : batches) cases.push_back(s.rows(b));
    const auto runs = s.runner->run(cases);
    ASSERT_EQ(runs.size(), cases.size());
    for (std::size_t i = 0; i < runs.size(); ++i) s.expect_right(cases[i], runs[i]);
  };
  run_right({300, 200});   // larger than the probe's: a new file
  EXPECT_EQ(s.runner->data_files_made(), after_probe + 1);
  run_right({7});          // fits: the same file
  run_right({250});
  run_right({1, 2});
  EXPECT_EQ(s.runner->data_files_made(), after_probe + 1);
  run_right({2000});       // larger again: a new file, kept from then on
  run_right({5});
  EXPECT_EQ(s.runner->data_files_made(), after_probe + 2);
  EXPECT_EQ(s.runner->workers_started(), 1);

  WorkerOptions sanitized;   // never a session, so a file of its own each time
  sanitized.sanitized = true;
  const std::vector<Case> asan = {s.rows(4, sanitized)};
  ASSERT_EQ(s.runner->run(asan).size(), 1u);
  ASSERT_EQ(s.runner->run(asan).size(), 1u);
  EXPECT_EQ(s.runner->data_files_made(), after_probe + 4);
}

TEST(TorchSessions, ACrashOrAHangEndsTheSessionAndTheNextBatchGetsAFreshWorker) {
  TempDir dir;
  write_file(dir / "solution_tripwires.py", kTripwires);
  Session s(dir / "solution_tripwires.py");
  ASSERT_EQ(s.runner->workers_started(), 1);

  const std::vector<Case> crash = {s.rows(4), s.rows(3), s.rows(6)};
  auto runs = s.runner->run(crash);
  ASSERT_EQ(runs.size(), 2u);  // stops at the crash
  s.expect_right(crash[0], runs[0]);
  EXPECT_EQ(runs[1].status, RunStatus::crash);
  EXPECT_NE(runs[1].detail.find("SIGSEGV"), std::string::npos) << runs[1].detail;

  const std::vector<Case> after = {s.rows(4)};
  runs = s.runner->run(after);
  ASSERT_EQ(runs.size(), 1u);
  s.expect_right(after[0], runs[0]);
  EXPECT_EQ(s.runner->workers_started(), 2);  // the crashed session's worker was replaced

  const std::vector<Case> hang = {s.rows(5)};
  runs = s.runner->run(hang);
  ASSERT_EQ(runs.size(), 1u);
  EXPECT_EQ(runs[0].status, RunStatus::timeout) << runs[0].detail;

  runs = s.runner->run(after);
  ASSERT_EQ(runs.size(), 1u);
  s.expect_right(after[0], runs[0]);
  EXPECT_EQ(s.runner->workers_started(), 3);
}

TEST(TorchSessions, AFreshInputNeverGetsAnAddressTheCandidateHasSeen) {
  // A session's batches free their buffers and the allocator hands the same blocks back first: a
  // plain twin or a later batch's input landed where a caching candidate had cached another
  // input's result, and excused it in stateless (issue 26, run 6). Only a call that reuses an
  // earlier call's buffers on purpose may meet an address again.
  TempDir dir;
  write_file(dir / "solution_address_probe.py", kAddressProbe);
  Session s(dir / "solution_address_probe.py");
  int judged_fresh = 0;
  for (int batch = 0; batch < 4; ++batch) {
    std::vector<Case> cases;
    for (int k = 0; k < 3; ++k) cases.push_back(s.rows(4));
    Case aba = s.rows(4);   // A, then B at A's addresses (the control: the probe must see it)
    Rng rng(1000 + batch);
    CallSpec again = gates::make_call(*s.contract, aba.shape, rng);
    again.reuse_buffers_of = 0;
    aba.calls.push_back(again);
    gates::add_plain_twin(aba, 1);   // B again at fresh addresses
    cases.push_back(aba);
    // Guarded buffers and exact ones (tensors of their own size from the allocator, issue 26),
    // mixed in every batch: neither may land where the other was.
    for (std::size_t i = 0; i < cases.size(); ++i)
      for (CallSpec& call : cases[i].calls) call.exact_buffers = (i + static_cast<std::size_t>(batch)) % 2 == 1;
    const auto runs = s.runner->run(cases);
    ASSERT_EQ(runs.size(), cases.size());
    for (std::size_t i = 0; i < cases.size(); ++i) {
      ASSERT_EQ(runs[i].status, RunStatus::ok) << runs[i].detail;
      for (std::size_t k = 0; k < cases[i].calls.size(); ++k) {
        const CaseJudgement j = gates::judge_call(*s.contract, cases[i].shape, cases[i].calls[k], runs[i].calls[k], {});
        const bool reused = cases[i].calls[k].reuse_buffers_of >= 0;
        EXPECT_EQ(j.verdict, reused ? Verdict::fail : Verdict::pass)
            << "batch " << batch << " case " << i << " call " << k << ": " << j.evidence;
        judged_fresh += reused ? 0 : 1;
      }
    }
  }
  EXPECT_EQ(judged_fresh, 4 * 5);
  EXPECT_EQ(s.runner->workers_started(), 1);  // one worker saw every batch
}

TEST(TorchSessions, SanitizedAndOtherThreadCountBatchesKeepTheirOwnWorkers) {
  Session s(kRowsum + "/solution_ok.py");
  WorkerOptions sanitized;
  sanitized.sanitized = true;
  WorkerOptions one_thread;
  one_thread.threads = 1;
  const std::vector<Case> plain = {s.rows(4)}, asan = {s.rows(4, sanitized)}, single = {s.rows(4, one_thread)};
  auto expect_ran = [&](const std::vector<Case>& cases, int started) {
    const auto runs = s.runner->run(cases);
    ASSERT_EQ(runs.size(), 1u);
    s.expect_right(cases[0], runs[0]);
    EXPECT_EQ(s.runner->workers_started(), started);
  };
  expect_ran(asan, 2);     // a sanitized worker of its own, which ends with its batch
  expect_ran(plain, 2);    // the probe's session, still there
  expect_ran(asan, 3);     // never kept
  expect_ran(single, 4);   // a session of its own
  expect_ran(plain, 4);    // both sessions wait
  expect_ran(single, 4);
}

}  // namespace
}  // namespace kcv::corpus_test
