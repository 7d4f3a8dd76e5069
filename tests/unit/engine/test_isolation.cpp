// Isolation (DESIGN §5.1): hostile candidates yield CRASH/TIMEOUT verdicts, never a hung or
// crashed verifier, never PASS; nothing they start outlives the batch.
#include <gtest/gtest.h>
#include <signal.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <set>
#include <thread>
#include <vector>

#include "kcv/contract.hpp"
#include "kcv/gates/common.hpp"
#include "kcv/protocol.hpp"
#include "test_support.hpp"

namespace kcv {
namespace {

struct Fixture {
  test::TempDir dir;
  Candidate candidate;
  std::unique_ptr<Runner> runner;
  const Contract& softmax = *find_contract("softmax");

  /// max_time_s > 0: the overall limit (--max-time) runs out that many seconds from now.
  explicit Fixture(const std::string& source, double timeout = 5, double max_time_s = 0) {
    candidate = Candidate::prepare(dir.file("cand.c", source), "cpu", dir.path());
    RunnerOptions o;
    o.worker = default_worker_path(Settings{});
    o.workdir = dir.path();
    o.timeout_s = timeout;
    o.canary_key = 1234;
    if (max_time_s > 0) {
      o.max_time_s = max_time_s;
      o.deadline = std::chrono::steady_clock::now() +
                   std::chrono::duration_cast<std::chrono::steady_clock::duration>(std::chrono::duration<double>(max_time_s));
    }
    runner = std::make_unique<Runner>(candidate, o);
  }

  /// n cases; fixed: kcv's fixed placement (the bounds gate's), else placed by the runner.
  std::vector<Case> cases(int n, bool fixed = true, const std::string& label = "case") const {
    std::vector<Case> out;
    for (int i = 0; i < n; ++i) {
      Rng rng(static_cast<uint64_t>(i));
      out.push_back(gates::single_call_case(n > 1 && !fixed ? label + " " + std::to_string(i) : label, softmax,
                                            {{"M", 4}, {"N", 33}}, rng));
      out.back().calls[0].fixed_placement = fixed;
    }
    return out;
  }
};

TEST(Isolation, CorrectCandidateRunsEveryCase) {
  Fixture f(test::softmax_source());
  auto runs = f.runner->run(f.cases(3));
  ASSERT_EQ(runs.size(), 3u);
  for (const auto& r : runs) {
    EXPECT_EQ(r.status, RunStatus::ok);
    ASSERT_TRUE(r.calls[0].ran);
    EXPECT_EQ(r.calls[0].rc, 0);
    EXPECT_TRUE(r.calls[0].output_guards[0].intact);
  }
  // The outputs came back: a softmax row sums to 1.
  double row = 0;
  for (int j = 0; j < 33; ++j) row += runs[0].calls[0].outputs[0].get(j);
  EXPECT_NEAR(row, 1.0, 1e-5);
}

TEST(Isolation, SegfaultIsACrashAndStopsTheBatch) {
  Fixture f(test::softmax_source("*(volatile int*)(long)c->n_scalars = 1;"));
  auto runs = f.runner->run(f.cases(3));
  ASSERT_EQ(runs.size(), 1u);
  EXPECT_EQ(runs[0].status, RunStatus::crash);
  EXPECT_NE(runs[0].detail.find("SIGSEGV"), std::string::npos) << runs[0].detail;
}

TEST(Isolation, ExitZeroMidCallIsACrash) {
  for (const char* how : {"exit(0);", "_exit(0);"}) {
    Fixture f(test::softmax_source(how));
    auto runs = f.runner->run(f.cases(2));
    ASSERT_EQ(runs.size(), 1u) << how;
    EXPECT_EQ(runs[0].status, RunStatus::crash) << how;
    EXPECT_NE(runs[0].detail.find("status 0"), std::string::npos) << runs[0].detail;
  }
}

TEST(Isolation, EndlessLoopIgnoringSignalsIsATimeout) {
  Fixture f(test::softmax_source("signal(SIGTERM, SIG_IGN); signal(SIGINT, SIG_IGN); for (;;) {}"), 1.0);
  const auto t0 = std::chrono::steady_clock::now();
  auto runs = f.runner->run(f.cases(2));
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  ASSERT_EQ(runs.size(), 1u);
  EXPECT_EQ(runs[0].status, RunStatus::timeout);
  EXPECT_FALSE(runs[0].out_of_time) << "the case's own call outlasted the per-call timeout";
  EXPECT_LT(secs, 10.0);
}

TEST(Isolation, ATimeoutOfTheOverallLimitIsFlaggedAsSuch) {
  // The per-call timeout (100 s) never comes: --max-time (1 s) stops the endless call, and the
  // case says it was the run's limit (a corpus run must not retry it as a slow call).
  Fixture f(test::softmax_source("signal(SIGTERM, SIG_IGN); for (;;) {}"), 100.0, 1.0);
  const auto t0 = std::chrono::steady_clock::now();
  auto runs = f.runner->run(f.cases(2));
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  ASSERT_EQ(runs.size(), 1u);
  EXPECT_EQ(runs[0].status, RunStatus::timeout);
  EXPECT_TRUE(runs[0].out_of_time) << runs[0].detail;
  EXPECT_NE(runs[0].detail.find("--max-time"), std::string::npos) << runs[0].detail;
  EXPECT_LT(secs, 20.0);
  // A case not started before the limit is the limit's too.
  auto late = f.runner->run(f.cases(1));
  ASSERT_EQ(late.size(), 1u);
  EXPECT_EQ(late[0].status, RunStatus::timeout);
  EXPECT_TRUE(late[0].out_of_time) << late[0].detail;
}

/// Host pids of live processes whose name is comm (zombies excluded).
std::vector<int> processes_named(const std::string& comm) {
  std::vector<int> out;
  for (const auto& e : std::filesystem::directory_iterator("/proc")) {
    const std::string pid = e.path().filename().string();
    if (pid.find_first_not_of("0123456789") != std::string::npos) continue;
    std::ifstream stat(e.path() / "stat");
    std::string text((std::istreambuf_iterator<char>(stat)), std::istreambuf_iterator<char>());
    const auto open = text.find('('), close = text.rfind(')');
    if (open == std::string::npos || close == std::string::npos || close + 2 >= text.size()) continue;
    if (text.substr(open + 1, close - open - 1) == comm && text[close + 2] != 'Z') out.push_back(std::stoi(pid));
  }
  return out;
}

TEST(Isolation, ChildrenTheCandidateForksFailTheCallAndDieWithTheWorker) {
  // A child that outlives the call is a side effect (issue 25): the case fails with evidence, and
  // the child, escaped from the process group or not, dies with the worker's PID namespace.
  const std::string name = "kcv-t" + std::to_string(getpid() % 100000);
  for (const std::string escape : {"", "setsid(); if (fork() != 0) _exit(0); "}) {
    Fixture f(test::softmax_source(
        "static int forked = 0; if (!forked++ && fork() == 0) { " + escape + "prctl(PR_SET_NAME, \"" + name +
            "\", 0, 0, 0); for (;;) pause(); }",
        "#include <sys/prctl.h>\n"));
    auto runs = f.runner->run(f.cases(2));
    ASSERT_EQ(runs.size(), 1u) << "the batch stops at the case that left a process";
    EXPECT_EQ(runs[0].status, RunStatus::side_effect);
    EXPECT_NE(runs[0].detail.find("process outlived the call"), std::string::npos) << runs[0].detail;
    bool gone = false;
    for (int i = 0; i < 100 && !gone; ++i) {
      gone = processes_named(name).empty();
      if (!gone) std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    EXPECT_TRUE(gone) << "the candidate's child outlived the worker (escape: '" << escape << "')";
  }
}

TEST(Isolation, WritesToTheWorkingDirectoryStayInTheWorkersOwnDirectory) {
  Fixture f(test::softmax_source("FILE* fp = fopen(\"kcv-junk-file\", \"w\"); if (fp) { fputs(\"x\", fp); fclose(fp); }"));
  auto runs = f.runner->run(f.cases(1));
  EXPECT_EQ(runs[0].status, RunStatus::ok);
  EXPECT_FALSE(std::filesystem::exists("kcv-junk-file"));
}

TEST(Isolation, EnvironmentIsClean) {
  setenv("KCV_TEST_SECRET", "leak", 1);
  Fixture f(test::softmax_source("if (getenv(\"KCV_TEST_SECRET\")) return 7;"));
  auto runs = f.runner->run(f.cases(1));
  ASSERT_EQ(runs[0].status, RunStatus::ok);
  EXPECT_EQ(runs[0].calls[0].rc, 0) << "the worker inherited the verifier's environment";
  unsetenv("KCV_TEST_SECRET");
}

TEST(Isolation, ForgedRecordsCannotMakeUnwrittenOutputsPass) {
  // The candidate writes the protocol's "done" and "bye" records itself and leaves: the outputs
  // are still poison, and the judge reads the raw bytes.
  Fixture f(R"(#include <kcv/abi.h>
#include <unistd.h>
#include <string.h>
int kcv_run(const kcv_call* c) {
  const char* lie = "done 0 0 0.0 -\nbye\n";
  write(4, lie, strlen(lie));
  _exit(0);
})");
  auto cases = f.cases(1);
  auto runs = f.runner->run(cases);
  ASSERT_EQ(runs.size(), 1u);
  const auto j = gates::judge_call(f.softmax, cases[0].shape, cases[0].calls[0], runs[0].calls[0]);
  EXPECT_NE(j.verdict, Verdict::pass);
}

TEST(Isolation, OverReadTrapsAndIsAttributedToTheInput) {
  Fixture f(test::softmax_source("volatile float t = ((const float*)c->inputs[0].data)[M * N]; (void)t;"));
  auto runs = f.runner->run(f.cases(1));
  ASSERT_EQ(runs[0].status, RunStatus::crash);
  ASSERT_TRUE(runs[0].fault.known);
  EXPECT_TRUE(runs[0].fault.input);
  EXPECT_EQ(runs[0].fault.arg, 0);
  EXPECT_EQ(runs[0].fault.offset, 4 * 33 * 4);
}

TEST(Isolation, GuardBandsSeeAWritePastTheOutput) {
  Fixture f(test::softmax_source("((float*)c->outputs[0].data)[M * N + 2] = 1.0f;"));
  auto runs = f.runner->run(f.cases(1));
  ASSERT_EQ(runs[0].status, RunStatus::ok);
  const GuardReport& g = runs[0].calls[0].output_guards[0];
  EXPECT_FALSE(g.intact);
  EXPECT_EQ(g.first_bad, 4 * 33 * 4 + 8);
}

TEST(Isolation, BuffersSitAtSeededPageOffsetsOutsideTheFixedPlacement) {
  // Issue 25 class 3: every output started on a page boundary and every input ended flush
  // against its PROT_NONE page, a tell a candidate could test. The candidate writes the page
  // offsets of its input and its output into y[0] and y[1].
  const std::string where =
      "yp[0] = (float)((unsigned long)c->inputs[0].data & 4095); yp[1] = (float)((unsigned long)yp & 4095);";
  Fixture f(test::softmax_source(where));
  auto offsets = [&](bool fixed, const std::string& label) {
    std::set<std::pair<int, int>> seen;
    for (const CaseRun& r : f.runner->run(f.cases(12, fixed, label))) {
      EXPECT_EQ(r.status, RunStatus::ok) << r.detail;
      if (r.status != RunStatus::ok) continue;
      const int in = static_cast<int>(r.calls[0].outputs[0].get(0)), out = static_cast<int>(r.calls[0].outputs[0].get(1));
      if (fixed) {
        EXPECT_EQ((in + 4 * 33 * 4) % 4096, 0) << "the input ends flush against its page";
        EXPECT_EQ(out, 0);
      } else {
        EXPECT_EQ(in % 64, 0);
        EXPECT_EQ(out % 64, 0) << "64-byte aligned, as torch's CPU allocator";
      }
      seen.insert({in, out});
    }
    return seen;
  };
  EXPECT_EQ(offsets(true, "case").size(), 1u);
  const auto a = offsets(false, "case"), b = offsets(false, "case");
  EXPECT_GE(a.size(), 6u) << "offsets vary from case to case";
  EXPECT_EQ(a, b) << "and are drawn from the key and the label: a replay places them again";
  EXPECT_NE(a, offsets(false, "other")) << "other labels, other places";
}

TEST(Isolation, AFencedOutputFaultsOnAWritePastItEvenWhenRestored) {
  // Issue 25 class 4: a write past the output whose bytes the candidate puts back leaves the
  // canaries intact. A quarter of the placed cases end the outputs against a PROT_NONE page.
  Fixture f(test::softmax_source(
      "volatile unsigned char* past = (volatile unsigned char*)(yp + M * N); unsigned char s[64];"
      " for (int k = 0; k < 64; ++k) { s[k] = past[k]; past[k] = 1; } for (int k = 0; k < 64; ++k) past[k] = s[k];"));
  int fenced = 0, open = 0;
  for (int i = 0; i < 16; ++i) {
    auto runs = f.runner->run(f.cases(1, false, "case " + std::to_string(i)));
    ASSERT_EQ(runs.size(), 1u);
    if (runs[0].status == RunStatus::ok) {
      ++open;
      EXPECT_TRUE(runs[0].calls[0].output_guards[0].intact) << "restored: the canaries cannot tell";
      continue;
    }
    ++fenced;
    EXPECT_EQ(runs[0].status, RunStatus::crash);
    ASSERT_TRUE(runs[0].fault.known) << runs[0].detail;
    EXPECT_FALSE(runs[0].fault.input);
    // The output starts 64-byte aligned: it ends within 63 bytes of the page.
    EXPECT_GE(runs[0].fault.offset, 4 * 33 * 4);
    EXPECT_LT(runs[0].fault.offset, 4 * 33 * 4 + 64);
    EXPECT_NE(runs[0].placement.find("PROT_NONE"), std::string::npos) << runs[0].placement;
  }
  EXPECT_GE(fenced, 1);
  EXPECT_GE(open, 6);
}

TEST(Isolation, SetupErrorsAreReportedNotRun) {
  test::TempDir dir;
  EXPECT_THROW(Candidate::prepare(dir.file("bad.c", "int kcv_run(const void* c) { return }"), "cpu", dir.path()),
               SetupError);
  EXPECT_THROW(Candidate::prepare(dir.path() + "/missing.c", "cpu", dir.path()), SetupError);
  Candidate none = Candidate::prepare(dir.file("none.c", "int other(void) { return 0; }"), "cpu", dir.path());
  RunnerOptions o;
  o.worker = default_worker_path(Settings{});
  o.workdir = dir.path();
  Runner r(none, o);
  EXPECT_THROW(r.probe(), SetupError);
}

}  // namespace
}  // namespace kcv

namespace kcv {
namespace {

/// The large tier's mechanism (cuda uses it past 2^31 elements) exercised on cpu at a small size:
/// inputs generated in the worker, outputs poisoned there, only guards and samples come back.
TEST(LargeTier, GeneratedInputsAndSampledOutputsRoundTrip) {
  test::TempDir dir;
  const Candidate cand = Candidate::prepare(std::string(KCV_SOURCE_DIR) + "/controls/cpu/add/add_ok.c", "cpu", dir.path());
  RunnerOptions o;
  o.worker = default_worker_path(Settings{});
  o.workdir = dir.path();
  o.canary_key = 77;
  Runner runner(cand, o);
  const int64_t n = 1001;
  CallSpec call;
  call.large = true;
  call.large_seed = 5;
  for (int i = 0; i < 3; ++i) {
    HostTensor t;
    t.shape = {n};
    t.stride = {1};
    (i < 2 ? call.inputs : call.outputs).push_back(t);
  }
  call.samples = {0, 1, 500, n - 1};
  Case c;
  c.shape = {{"N", n}};
  c.calls = {call};
  auto runs = runner.run({c});
  ASSERT_EQ(runs[0].status, RunStatus::ok) << runs[0].detail;
  const CallResult& r = runs[0].calls[0];
  ASSERT_EQ(r.outputs[0].numel(), 4);
  for (std::size_t s = 0; s < call.samples.size(); ++s) {
    const int64_t i = call.samples[s];
    const float want = protocol::large_tier_value(5, i) + protocol::large_tier_value(6, i);
    EXPECT_EQ(static_cast<float>(r.outputs[0].get(static_cast<int64_t>(s))), want) << i;
  }
  for (const auto& g : r.input_guards) EXPECT_TRUE(g.intact);
  EXPECT_TRUE(r.output_guards[0].intact);
}

}  // namespace
}  // namespace kcv
