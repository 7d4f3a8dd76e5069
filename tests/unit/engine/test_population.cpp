// The population test through the engine (docs/population-test.md, issue 21 item 3): the cpu
// matmul controls replayed case by case at the depths the gates reach — numerics at K = 128,
// shapes at K = 1000 (128 x 128), 4096 (64 x 64) and 16384 (32 x 32). TF32 (rounded, truncated)
// and bf16 operands fail at each; the fp32 orders (sequential, pairwise, blocked, split-K,
// Kahan) pass at each.
#include <gtest/gtest.h>

#include <cstdio>
#include <string>
#include <vector>

#include "kcv/backends/host_backend.hpp"
#include "kcv/candidate.hpp"
#include "kcv/engine.hpp"
#include "kcv/gate.hpp"
#include "test_support.hpp"

namespace kcv {
namespace {

constexpr uint64_t kSeed = 2121;

std::string control(const std::string& name) { return std::string(KCV_SOURCE_DIR) + "/controls/cpu/matmul/" + name; }

struct Depth {
  const char* gate;
  int64_t K;
  int64_t index = -1;  // the gate's case at this K
};

/// The case of each gate at each depth, from the gates' own plans (labels "K=1000, M=128, N=128").
std::vector<Depth> depths() {
  test::TempDir dir;
  const Candidate cand = Candidate::prepare(dir.file("c.c", "int kcv_run(const void* c) { return 0; }"), "cpu", dir.path());
  const GateContext ctx{*find_contract("matmul"), backend_named("cpu"), cand};
  std::vector<Depth> out = {{"numerics", 128}, {"shapes", 1000}, {"shapes", 4096}, {"shapes", 16384}};
  for (Depth& d : out) {
    const auto plans = find_gate(d.gate)->plan(ctx, kSeed);
    for (std::size_t i = 0; i < plans.size() && d.index < 0; ++i)
      if (plans[i].label.rfind("K=" + std::to_string(d.K) + ",", 0) == 0) d.index = static_cast<int64_t>(i);
    EXPECT_GE(d.index, 0) << d.gate << " has no case at K = " << d.K;
  }
  return out;
}

TEST(PopulationGates, MatmulControlsAtEveryDepth) {
  const std::vector<std::string> fail = {"matmul_tf32.c", "matmul_tf32_truncated.c", "matmul_bf16_operands.c"};
  const std::vector<std::string> pass = {"matmul_ok.c", "matmul_sum_pairwise.c", "matmul_sum_blocked.c",
                                         "matmul_split_k.c", "matmul_sum_kahan.c"};
  for (const Depth& d : depths()) {
    if (d.index < 0) continue;
    for (const std::string& name : fail) {
      const ReplayResult r = replay("matmul", control(name), "cpu", d.gate, kSeed, d.index, 60);
      EXPECT_EQ(r.judgement.verdict, Verdict::fail) << name << " at " << r.label << ": " << r.judgement.evidence;
      std::printf("  %-26s %-9s %-22s %s\n", name.c_str(), d.gate, r.label.c_str(),
                  r.judgement.evidence.substr(0, 110).c_str());
      // Past K ~ 1000 the worst-case bound no longer sees it: the population test does.
      if (d.K >= 4096) {
        EXPECT_NE(r.judgement.evidence.find("population test"), std::string::npos) << name << " at " << r.label
                                                                                   << ": " << r.judgement.evidence;
      }
    }
    for (const std::string& name : pass) {
      const ReplayResult r = replay("matmul", control(name), "cpu", d.gate, kSeed, d.index, 60);
      EXPECT_EQ(r.judgement.verdict, Verdict::pass) << name << " at " << r.label << ": " << r.judgement.evidence;
    }
    // The kernel: fp32 below K = 1000, TF32 from there on.
    const ReplayResult r = replay("matmul", control("matmul_tf32_large_k.c"), "cpu", d.gate, kSeed, d.index, 60);
    EXPECT_EQ(r.judgement.verdict, d.K >= 1000 ? Verdict::fail : Verdict::pass) << r.label << ": "
                                                                                 << r.judgement.evidence;
  }
}

}  // namespace
}  // namespace kcv
