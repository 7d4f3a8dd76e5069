// Calls the way production makes them (issue 26): the null stream handle and exact-size buffers
// in a seeded share of every value-judging gate's cuda cases, exact buffers throughout the cuda
// sanitizer gate, and long runs of thousands of calls in one worker. The cuda cases are only made
// here (no device needed); the long runs run for real on the cpu backend.
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <set>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "kcv/backends/host_backend.hpp"
#include "kcv/contract.hpp"
#include "kcv/gates/common.hpp"
#include "test_support.hpp"

namespace kcv {
namespace {

struct Ways {
  int null = 0, exact = 0, neither = 0, cases = 0;
};

Ways ways_of(const std::vector<Case>& cases) {
  Ways w;
  for (const Case& c : cases) {
    ++w.cases;
    bool null = false, exact = false;
    for (const CallSpec& call : c.calls) {
      null |= call.null_stream;
      exact |= call.exact_buffers;
      // One way per case: its plain twins are made the same way (large-tier calls stay guarded).
      if (call.large) continue;
      EXPECT_EQ(call.null_stream, c.calls[0].null_stream) << c.label;
      EXPECT_EQ(call.exact_buffers, c.calls[0].exact_buffers) << c.label;
    }
    w.null += null;
    w.exact += exact;
    w.neither += !null && !exact;
    if (null) {
      EXPECT_NE(c.label.find("null stream"), std::string::npos) << c.label;
    }
    if (exact) {
      EXPECT_NE(c.label.find("exact buffers"), std::string::npos) << c.label;
    }
  }
  return w;
}

TEST(ProductionCalls, EveryValueJudgingCudaGateHasNullStreamAndExactBufferCases) {
  test::TempDir dir;
  const Candidate cand = Candidate::prepare(dir.file("c.c", "int kcv_run(const void* c) { return 0; }"), "cpu", dir.path());
  for (const char* op : {"softmax", "add", "matmul"}) {
    const GateContext cuda{*find_contract(op), backend_named("cuda"), cand}, cpu{*find_contract(op), backend_named("cpu"), cand};
    for (uint64_t seed : {1ull, 6ull}) {
      for (const auto& gate : all_gates()) {
        const std::string id(gate->id());
        const Ways w = ways_of(gate->cases(cuda, seed));
        if (seed == 1) {
          const Ways off = ways_of(gate->cases(cpu, seed));
          EXPECT_EQ(off.null, 0) << id << ": the cpu backend has no streams";
          // cpu's exact buffers are the sanitizer gate's: malloc'd, so ASan and valgrind bound them.
          EXPECT_EQ(off.exact, id == "sanitizer" ? off.cases : 0) << id;
        }
        if (id == "bounds") {
          EXPECT_EQ(w.null + w.exact, 0) << "bounds judges guard bands: kcv's buffers only";
        } else if (id == "sanitizer") {
          EXPECT_EQ(w.exact, w.cases) << "memcheck sees a one-element over-read only past an exact buffer";
          EXPECT_GT(w.null, 0) << id;
        } else {
          EXPECT_GT(w.null, 0) << id << " on " << op << " seed " << seed;
          EXPECT_GT(w.exact, 0) << id << " on " << op << " seed " << seed;
          if (w.cases >= 5) {
            EXPECT_GT(w.neither, 0) << id << ": kcv's own setting stays too";
          }
        }
      }
    }
  }
}

TEST(ProductionCalls, WhichCasesCallWhichWayDependsOnTheSeed) {
  test::TempDir dir;
  const Candidate cand = Candidate::prepare(dir.file("c.c", "int kcv_run(const void* c) { return 0; }"), "cpu", dir.path());
  const GateContext ctx{*find_contract("softmax"), backend_named("cuda"), cand};
  const Gate* numerics = find_gate("numerics");
  std::set<std::string> patterns;
  for (uint64_t seed = 0; seed < 8; ++seed) {
    std::string p;
    for (const Case& c : numerics->cases(ctx, seed)) p += fmt::format("{}{} ", int(c.calls[0].null_stream), int(c.calls[0].exact_buffers));
    patterns.insert(p);
  }
  EXPECT_GE(patterns.size(), 4u);
}

TEST(ProductionCalls, LongRunsMakeThousandsOfCallsInAWorkerOfTheirOwnAndJudgeTheLast) {
  test::TempDir dir;
  const Candidate cand = Candidate::prepare(dir.file("c.c", "int kcv_run(const void* c) { return 0; }"), "cpu", dir.path());
  for (const char* backend : {"cpu", "cuda"}) {
    const GateContext ctx{*find_contract("softmax"), backend_named(backend), cand};
    const std::vector<Case> cases = find_gate("stateless")->cases(ctx, 3);
    std::set<int> tags;
    int runs = 0;
    for (const Case& c : cases) {
      int64_t made = 0;
      for (const CallSpec& call : c.calls) made += call.calls_before + 1;
      if (made < 1000) {
        EXPECT_EQ(c.worker.tag, 0) << c.label;
        continue;
      }
      ++runs;
      tags.insert(c.worker.tag);
      EXPECT_GE(made, 2000) << c.label;
      EXPECT_NE(c.label.find(std::to_string(made) + " calls"), std::string::npos) << c.label;
      EXPECT_GT(c.calls.back().calls_before, 0) << "the worker's last call is judged";
      // Each late call is judged beside an early call on the same inputs.
      const CallSpec& last = c.calls.back();
      ASSERT_GE(last.plain_twin, 0);
      const CallSpec& twin = c.calls[static_cast<std::size_t>(last.plain_twin)];
      EXPECT_EQ(twin.calls_before, 0);
      EXPECT_EQ(twin.inputs[0].storage, last.inputs[0].storage);
      EXPECT_LE(c.shape.at("N") * c.shape.at("M"), 32 * 32) << "a cheap shape";
    }
    EXPECT_EQ(runs, std::string(backend) == "cuda" ? 2 : 1) << backend;
    EXPECT_EQ(tags.size(), static_cast<std::size_t>(runs)) << "each long run in a worker of its own";
    EXPECT_EQ(tags.count(0), 0u);
  }
}

// The worker makes calls_before unjudged calls first: a candidate that counts its calls in y[0]
// says how many it saw.
TEST(ProductionCalls, TheWorkerMakesTheUnjudgedCallsBefore) {
  test::TempDir dir;
  const Candidate cand = Candidate::prepare(
      dir.file("count.c", "#include <kcv/abi.h>\nstatic long n;\n"
                          "int kcv_run(const kcv_call* c) { ((float*)c->outputs[0].data)[0] = (float)++n; return 0; }\n"),
      "cpu", dir.path());
  RunnerOptions o;
  o.worker = default_worker_path(Settings{});
  o.workdir = dir.path();
  o.canary_key = 99;
  Runner runner(cand, o);
  const Contract& softmax = *find_contract("softmax");
  Rng rng(5);
  Case c = gates::single_call_case("count", softmax, {{"M", 2}, {"N", 3}}, rng);
  c.calls.push_back(c.calls[0]);
  c.calls[1].calls_before = 1234;
  const auto runs = runner.run({c});
  ASSERT_EQ(runs.size(), 1u);
  ASSERT_EQ(runs[0].status, RunStatus::ok) << runs[0].detail;
  EXPECT_EQ(runs[0].calls[0].outputs[0].get(0), 1.0);
  EXPECT_EQ(runs[0].calls[1].outputs[0].get(0), 1236.0);
  // The judged call starts from poison again: what the unjudged calls left is gone.
  EXPECT_TRUE(std::isnan(runs[0].calls[1].outputs[0].get(1)));
}

// A cpu candidate right for 200 calls and wrong after: only the long runs see it.
TEST(ProductionCalls, ACallCountBombFailsStatelessAndPassesTheShortGates) {
  test::TempDir dir;
  const std::string bomb = dir.file(
      "bomb.c", test::softmax_source("if (++g_calls > 200) for (long k = 0; k < M * N; ++k) yp[k] *= 1.0009765625f;",
                                     "static long g_calls;"));
  std::string out;
  EXPECT_EQ(test::run_kcv({"verify", "--op", "softmax", "--candidate", bomb, "--gates", "stateless,numerics", "--seed", "11",
                           "--json", dir.path() + "/bomb.json"},
                          out),
            1)
      << out;
  const nlohmann::json j = nlohmann::json::parse(std::ifstream(dir.path() + "/bomb.json"));
  for (const auto& g : j["gates"]) {
    if (g["id"] == "numerics") {
      EXPECT_EQ(g["verdict"], "PASS") << g.dump();
    }
    if (g["id"] == "stateless") {
      EXPECT_EQ(g["verdict"], "FAIL") << g.dump();
      EXPECT_NE(g["evidence"].get<std::string>().find("long run"), std::string::npos) << g.dump();
    }
  }
  out.clear();
  const std::string ok = dir.file("ok.c", test::softmax_source());
  EXPECT_EQ(test::run_kcv({"verify", "--op", "softmax", "--candidate", ok, "--gates", "stateless", "--seed", "11"}, out), 0)
      << out;
}

}  // namespace
}  // namespace kcv
