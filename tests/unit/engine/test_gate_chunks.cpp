// The engine makes, runs and judges a gate's cases a chunk at a time (gate_run.hpp): a case is
// made only when its chunk is about to run, judged before the next chunk is made, and never made
// at all after a worker crash stops the gate. A gate that judges across cases gets all of them.
#include <gtest/gtest.h>

#include <chrono>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include <fmt/format.h>

#include "kcv/backends/host_backend.hpp"
#include "kcv/contract.hpp"
#include "kcv/gate_run.hpp"
#include "kcv/gates/common.hpp"
#include "kcv/part_clock.hpp"
#include "kcv/report.hpp"
#include "test_support.hpp"

namespace kcv {
namespace {

/// Four small softmax cases; every make, judge and judge_across is logged in order.
class LoggingGate final : public Gate {
 public:
  LoggingGate(std::shared_ptr<std::vector<std::string>> log, bool across) : log_(std::move(log)), across_(across) {}
  std::string_view id() const override { return "logging"; }
  std::string_view summary() const override { return "logs when its cases are made and judged"; }
  bool tolerance_independent() const override { return true; }
  std::vector<CasePlan> plan(const GateContext& ctx, uint64_t seed) const override {
    std::vector<CasePlan> out;
    for (int i = 0; i < 4; ++i) {
      CasePlan p = gates::single_call_plan(fmt::format("case {}", i), ctx.contract, {{"M", 4}, {"N", 33}}, seed, i);
      out.push_back({p.label, [log = log_, make = p.make, i] {
                       log->push_back(fmt::format("make {}", i));
                       return make();
                     }});
    }
    return out;
  }
  std::vector<Case> cases(const GateContext& ctx, uint64_t seed) const override { return make_all(plan(ctx, seed)); }
  CaseJudgement judge(const GateContext&, const Case& c, const CaseRun&) const override {
    log_->push_back("judge " + c.label.substr(5));
    return {};
  }
  bool judges_across() const override { return across_; }
  CaseJudgement judge_across(const GateContext&, const std::vector<Case>& cases,
                             const std::vector<CaseRun>& runs) const override {
    log_->push_back(fmt::format("across {} {}", cases.size(), runs.size()));
    return {};
  }

 private:
  std::shared_ptr<std::vector<std::string>> log_;
  bool across_;
};

struct Fixture {
  test::TempDir dir;
  Candidate candidate;
  std::unique_ptr<Runner> runner;
  const Contract& softmax = *find_contract("softmax");

  explicit Fixture(const std::string& source) {
    candidate = Candidate::prepare(dir.file("cand.c", source), "cpu", dir.path());
    RunnerOptions o;
    o.worker = default_worker_path(Settings{});
    o.workdir = dir.path();
    o.timeout_s = 5;
    o.canary_key = 1234;
    runner = std::make_unique<Runner>(candidate, o);
  }

  std::vector<std::string> run(bool across, int64_t chunk_bytes, GateReport* report = nullptr) {
    auto log = std::make_shared<std::vector<std::string>>();
    LoggingGate gate(log, across);
    const GateContext ctx{softmax, backend_named("cpu"), candidate};
    GateRun r = run_gate(gate, ctx, *runner, 7, std::nullopt, chunk_bytes);
    if (report) *report = r.report;
    return *log;
  }
};

using Log = std::vector<std::string>;

TEST(GateChunks, EachCaseIsMadeOnlyAfterTheChunkBeforeItWasJudged) {
  Fixture f(test::softmax_source());
  GateReport rep;
  // 1 byte: every case stages more than that, so each case is a chunk of its own.
  EXPECT_EQ(f.run(false, 1, &rep),
            (Log{"make 0", "judge 0", "make 1", "judge 1", "make 2", "judge 2", "make 3", "judge 3"}));
  EXPECT_EQ(rep.verdict, Verdict::pass);
  EXPECT_EQ(rep.cases, 4);
}

TEST(GateChunks, SmallCasesShareOneChunk) {
  Fixture f(test::softmax_source());
  EXPECT_EQ(f.run(false, kBatchBytes),
            (Log{"make 0", "make 1", "make 2", "make 3", "judge 0", "judge 1", "judge 2", "judge 3"}));
}

TEST(GateChunks, AGateJudgingAcrossCasesGetsEveryCaseInOneChunk) {
  Fixture f(test::softmax_source());
  EXPECT_EQ(f.run(true, 1), (Log{"make 0", "make 1", "make 2", "make 3", "judge 0", "judge 1", "judge 2", "judge 3",
                                 "across 4 4"}));
}

TEST(GateChunks, APlanKnowsWhatItsCaseWillStage) {
  const Contract& softmax = *find_contract("softmax");
  for (const Bindings& b : {Bindings{{"M", 4}, {"N", 33}}, Bindings{{"M", 1000}, {"N", 1021}}}) {
    const CasePlan p = gates::single_call_plan("p", softmax, b, 3, 0);
    EXPECT_GT(p.staged_bytes, 0);
    EXPECT_EQ(p.staged_bytes, staged_bytes(p.make())) << bindings_string(b);
  }
  const CasePlan eager = plans_of({gates::single_call_plan("e", softmax, {{"M", 2}, {"N", 5}}, 3, 0).make()})[0];
  EXPECT_EQ(eager.staged_bytes, 2 * (2 * 5 * 4) + 3 * (2 * 5 * 4));  // outputs: + their second snapshot
}

TEST(GateChunks, ACrashStopsTheGateBeforeItsLaterCasesAreMade) {
  Fixture f(test::softmax_source("*(volatile int*)(long)c->n_scalars = 1;"));
  GateReport rep;
  EXPECT_EQ(f.run(false, 1, &rep), (Log{"make 0"}));
  EXPECT_EQ(rep.verdict, Verdict::crash);
  EXPECT_EQ(rep.cases, 1);
  EXPECT_NE(rep.evidence.find("[stopped after case 1 of 4]"), std::string::npos) << rep.evidence;
}


/// Four cases whose making, judging and reference take known times (issue 22's split).
class TimedGate final : public Gate {
 public:
  std::string_view id() const override { return "timed"; }
  std::string_view summary() const override { return "sleeps in make, judge and its reference"; }
  bool tolerance_independent() const override { return true; }
  std::vector<CasePlan> plan(const GateContext& ctx, uint64_t seed) const override {
    std::vector<CasePlan> out;
    for (int i = 0; i < 4; ++i) {
      CasePlan p = gates::single_call_plan(fmt::format("case {}", i), ctx.contract, {{"M", 4}, {"N", 33}}, seed, i);
      out.push_back({p.label, [make = p.make] {
                       std::this_thread::sleep_for(std::chrono::milliseconds(30));
                       return make();
                     }});
    }
    return out;
  }
  std::vector<Case> cases(const GateContext& ctx, uint64_t seed) const override { return make_all(plan(ctx, seed)); }
  CaseJudgement judge(const GateContext&, const Case&, const CaseRun&) const override {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    const ReferenceClock reference;   // as KernelBenchContract::reference does
    std::this_thread::sleep_for(std::chrono::milliseconds(40));
    return {};
  }
};

TEST(GateChunks, AGatesSecondsAreSplitIntoMakingCallsReferenceAndJudging) {
  Fixture f(test::softmax_source());
  const TimedGate gate;
  const GateContext ctx{f.softmax, backend_named("cpu"), f.candidate};
  const GateReport rep = run_gate(gate, ctx, *f.runner, 7, std::nullopt, 1).report;
  ASSERT_EQ(rep.verdict, Verdict::pass) << rep.evidence;
  EXPECT_GE(rep.make_seconds, 4 * 0.030);
  EXPECT_GE(rep.reference_seconds, 4 * 0.040);
  EXPECT_GE(rep.judging_seconds, 4 * 0.020);
  // The reference's time is not judging's too (it would be 0.24 s and more).
  EXPECT_LT(rep.judging_seconds, 0.20) << rep.judging_seconds;
  EXPECT_GT(rep.calls_seconds, 0);
  EXPECT_LE(rep.make_seconds + rep.calls_seconds + rep.reference_seconds + rep.judging_seconds, rep.seconds + 1e-6);

  // In the report: per gate, and summed over the gates at the top; read back as written.
  Report r;
  r.gates = {rep, rep};
  const nlohmann::json j = report_to_json(r);
  EXPECT_DOUBLE_EQ(j["gates"][0]["seconds_by_part"]["reference"].get<double>(), rep.reference_seconds);
  EXPECT_DOUBLE_EQ(j["seconds_by_part"]["calls"].get<double>(), 2 * rep.calls_seconds);
  EXPECT_DOUBLE_EQ(j["seconds_by_part"]["judging"].get<double>(), 2 * rep.judging_seconds);
  EXPECT_FALSE(j["seconds_by_part"].contains("build"));   // no KernelBench build here
  const Report back = report_from_json(j);
  EXPECT_DOUBLE_EQ(back.gates[1].make_seconds, rep.make_seconds);
  EXPECT_DOUBLE_EQ(back.gates[1].judging_seconds, rep.judging_seconds);
}

}  // namespace
}  // namespace kcv
