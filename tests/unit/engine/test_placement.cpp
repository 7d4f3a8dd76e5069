// Where kcv-worker's cuda backend puts guarded buffers (issue 25 class 3), checked without a GPU:
// the plan's seeded offsets (isolation/stage.cpp, placement, with the cuda backend's rule), the
// allocation the worker makes from them (backend.hpp, cuda_guarded_lead / cuda_guarded_reserved:
// the very functions cuda_worker_backend.cu calls), and what the cuda controls
// softmax_fixed_offset_tell.cu and softmax_skips_computed_output.cu meet at their ctest seed.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <set>
#include <string>
#include <vector>

#include "kcv/backends/host_backend.hpp"
#include "kcv/backends/backend.hpp"
#include "kcv/candidate.hpp"
#include "kcv/engine.hpp"
#include "kcv/gate.hpp"
#include "kcv/isolation/isolation.hpp"
#include "test_support.hpp"

namespace kcv {
namespace {

using nlohmann::json;

/// The run seed the cuda controls' ctests pass (controls/cuda/softmax/controls.cmake: --seed 1).
constexpr uint64_t kControlSeed = 1;
/// A cudaMalloc'd base: 2 MiB aligned, as the driver's large allocations are.
constexpr uintptr_t kBase = uintptr_t(0x7f3a00000000);

/// One gate's cases as the engine makes them in a run, and their plan as the runner lays it out.
struct Planned {
  std::vector<Case> cases;
  isolation::Layout layout;
};

Planned plan_gate(const GateContext& ctx, const std::string& gate, uint64_t run_seed, const PlacementRule& rule) {
  Planned p;
  const Gate* g = find_gate(gate);
  EXPECT_NE(g, nullptr) << gate;
  for (CasePlan& cp : g->plan(ctx, gate_seed(run_seed, gate))) p.cases.push_back(cp.make());
  std::vector<const Case*> batch;
  for (const Case& c : p.cases) batch.push_back(&c);
  p.layout = isolation::lay_out(batch, run_canary_key(run_seed), /*recheck_outputs=*/true, rule);
  return p;
}

/// The placement the worker applies to a plan entry of a call (BufferPlacement, as worker_main.cpp
/// builds it): exact calls have their own cudaMalloc, the rest a guarded one.
BufferPlacement where_of(const json& call, const json& tensor) {
  return {call.value("exact", false), tensor.value("at", int64_t(-1)), false, tensor.value("tail", int64_t(0))};
}

/// Output a's distance from its allocation's base in global call i (a call reusing an earlier
/// call's buffers has that call's).
int64_t output_offset(const json& calls, std::size_t i, std::size_t a, uintptr_t base) {
  while (calls[i].at("reuse").get<int>() >= 0) i = static_cast<std::size_t>(calls[i]["reuse"].get<int>());
  const BufferPlacement where = where_of(calls[i], calls[i]["outputs"][a]);
  return where.exact ? 0 : cuda_guarded_lead(base, where);
}

/// softmax_fixed_offset_tell.cu's test: where kcv's fixed placement put every output (4096 bytes
/// into a guarded allocation, or the base of an exact one). True: it computes softmax_ok.cu's result.
bool at_old_fixed_place(int64_t offset) { return offset == 0 || offset == protocol::kGuardBytes; }

struct CudaContext {
  test::TempDir dir;
  Candidate cand = Candidate::prepare(dir.file("c.c", "int kcv_run(const void* c) { return 0; }"), "cpu", dir.path());
  GateContext ctx{*find_contract("softmax"), backend_named("cuda"), cand};
};

TEST(CudaPlacement, TheAllocationKeepsBothGuardBandsAndA512ByteAlignedStart) {
  const int64_t g = protocol::kGuardBytes;
  // kcv's fixed placement (the bounds gate's; every gate's before issue 25 on cuda).
  for (int64_t span : {int64_t(0), int64_t(4), int64_t(132), int64_t(12292)}) {
    EXPECT_EQ(cuda_guarded_lead(kBase + 256, BufferPlacement{}), g);
    EXPECT_EQ(cuda_guarded_reserved(span, BufferPlacement{}), g + span + g);
  }
  // Placed: cudaMalloc guarantees 256 bytes; the first data byte is 512-aligned whatever the base.
  for (uintptr_t base : {kBase, kBase + 256, kBase + 1536, kBase + 0x1fff00})
    for (int64_t span : {int64_t(0), int64_t(4), int64_t(132), int64_t(12292)})
      for (int64_t at : {int64_t(0), int64_t(512), int64_t(65024)})
        for (int64_t tail : {int64_t(0), int64_t(512), int64_t(65024)}) {
          const BufferPlacement where{false, at, false, tail};
          const int64_t lead = cuda_guarded_lead(base, where), reserved = cuda_guarded_reserved(span, where);
          EXPECT_EQ((base + static_cast<uintptr_t>(lead)) % kCudaPlacedAlign, 0u) << base << " " << at;
          EXPECT_GE(lead, g + at) << "the whole leading guard band before the data";
          EXPECT_LT(lead, g + at + kCudaPlacedAlign);
          EXPECT_GE(reserved - lead - span, g + tail) << "the whole trailing guard band and the tail after it";
        }
}

TEST(CudaPlacement, EveryGuardedBufferButTheBoundsGatesSitsAtASeededReplayableOffset) {
  CudaContext t;
  const PlacementRule rule = backend_named("cuda").placement_rule();
  ASSERT_TRUE(rule.varies);
  EXPECT_EQ(rule.align, kCudaPlacedAlign);
  std::set<int64_t> offsets;
  for (const auto& gate : all_gates()) {
    const std::string id(gate->id());
    const Planned p = plan_gate(t.ctx, id, kControlSeed, rule);
    int placed = 0, exact = 0;
    for (const json& call : p.layout.calls)
      for (const char* side : {"inputs", "outputs"})
        for (const json& tensor : call[side]) {
          if (call.value("exact", false) || id == "bounds" || tensor.contains("gen") || tensor.contains("fill")) {
            EXPECT_FALSE(tensor.contains("at")) << id << ": exact buffers, the large tier and bounds keep their place";
            EXPECT_FALSE(tensor.contains("tail")) << id;
            exact += call.value("exact", false) ? 1 : 0;
            continue;
          }
          ASSERT_TRUE(tensor.contains("at") && tensor.contains("tail")) << id << " " << tensor.dump();
          const int64_t at = tensor["at"].get<int64_t>(), tail = tensor["tail"].get<int64_t>();
          EXPECT_EQ(at % 512, 0) << id;
          EXPECT_EQ(tail % 512, 0) << id;
          EXPECT_LT(at, int64_t(64) << 10) << id;
          EXPECT_LT(tail, int64_t(64) << 10) << id;
          offsets.insert(at);
          ++placed;
        }
    // Gates whose every call has exact buffers at this seed (sanitizer always on cuda; the two
    // cases of determinism here) have nothing guarded to place.
    if (id == "bounds") {
      EXPECT_EQ(placed, 0);
    } else {
      EXPECT_TRUE(placed > 0 || exact > 0) << id;
    }
    if (id == "numerics" || id == "shapes" || id == "values") {
      EXPECT_GT(placed, 0) << id;
    }
    // A failing case's evidence says where its buffers were.
    int said = 0;
    for (std::size_t ci = 0; ci < p.cases.size(); ++ci) {
      if (!p.layout.placement[ci].empty()) {
        EXPECT_NE(p.layout.placement[ci].find("past their 4096-byte leading guard band"), std::string::npos)
            << p.layout.placement[ci];
        ++said;
      }
    }
    EXPECT_EQ(said > 0, placed > 0) << id;
    // Replay: the same seed places them again where they were; another seed elsewhere.
    if (id == "numerics" || id == "values") {
      EXPECT_EQ(plan_gate(t.ctx, id, kControlSeed, rule).layout.calls, p.layout.calls) << id;
      EXPECT_NE(plan_gate(t.ctx, id, kControlSeed + 1, rule).layout.calls, p.layout.calls) << id;
    }
  }
  EXPECT_GE(offsets.size(), 40u) << "offsets vary over the 128 multiples of 512 below 64 KiB";
}

TEST(CudaPlacement, TheFixedOffsetTellHeldInEveryGateBeforeAndFailsInTheValueGatesNow) {
  // controls/cuda/softmax/softmax_fixed_offset_tell.cu computes correctly exactly where its output
  // sits 0 or 4096 bytes into its allocation. Before, the cuda backend had no placement rule
  // (PlacementRule{}): every output of every call of all 12 gates sat there, so the candidate was
  // softmax_ok.cu everywhere and passed every gate. Now numerics, shapes and values each hand it
  // an output elsewhere at the ctest's seed (--seed 1), and bounds still never does.
  CudaContext t;
  const PlacementRule now = backend_named("cuda").placement_rule();
  for (uintptr_t base : {kBase, kBase + 256})
    for (const auto& gate : all_gates()) {
      const std::string id(gate->id());
      auto elsewhere = [&](const PlacementRule& rule) {
        const Planned p = plan_gate(t.ctx, id, kControlSeed, rule);
        int n = 0;
        for (std::size_t i = 0; i < p.layout.calls.size(); ++i)
          for (std::size_t a = 0; a < p.layout.calls[i]["outputs"].size(); ++a)
            n += at_old_fixed_place(output_offset(p.layout.calls, i, a, base)) ? 0 : 1;
        return n;
      };
      EXPECT_EQ(elsewhere(PlacementRule{}), 0) << id << ": the old placement";
      if (id == "bounds") {
        EXPECT_EQ(elsewhere(now), 0) << "bounds keeps kcv's fixed placement";
      }
      if (id == "numerics" || id == "shapes" || id == "values") {
        EXPECT_GE(elsewhere(now), 1) << id;
      }
    }
}

/// softmax_skips_computed_output.cu's test of y before its call: false (it skips its work) when
/// y's elements differ and every one is plausible data (finite, at most 1e30 in magnitude).
bool looks_like_a_verifiers_prefill(const HostTensor& y) {
  if (y.numel() == 0) return true;
  uint32_t first = 0;
  bool differ = false;
  for (int64_t i = 0; i < y.numel(); ++i) {
    const float v = static_cast<float>(y.get(i));
    uint32_t bits = 0;
    std::memcpy(&bits, &v, sizeof bits);
    if (i == 0) first = bits;
    differ = differ || bits != first;
    if (!(std::fabs(v) <= 1e30f)) return true;
  }
  return !differ;
}

TEST(CudaPlacement, StalePrefillReachesCudaOutputsInEveryValueGate) {
  // The prefill (gates::vary_prefill) is drawn by the gate, not the backend: on cuda too the
  // numerics, shapes and values cases stage their outputs' varied bytes ("src"), which the cuda
  // worker uploads into the output buffer (upload) exactly as it uploads an input. Only the large
  // tier's outputs are filled on the device ("fill", the NaN poison). At the ctest's seed each gate
  // has a case whose output holds stale data: softmax_skips_computed_output.cu skips it and fails.
  CudaContext t;
  const PlacementRule rule = backend_named("cuda").placement_rule();
  for (const std::string id : {"numerics", "shapes", "values"}) {
    const Planned p = plan_gate(t.ctx, id, kControlSeed, rule);
    int skipped = 0;
    for (std::size_t ci = 0; ci < p.cases.size(); ++ci) {
      const Case& c = p.cases[ci];
      for (std::size_t k = 0; k < c.calls.size(); ++k) {
        const json& call = p.layout.calls[static_cast<std::size_t>(p.layout.first_call_of_case[ci]) + k];
        const json& y = call["outputs"][0];
        if (c.calls[k].large) {
          EXPECT_TRUE(y.contains("fill")) << id;
          continue;
        }
        EXPECT_FALSE(y.contains("fill")) << id << ": the staged prefill is what the worker uploads";
        EXPECT_GE(y.at("src").get<int64_t>(), 0);
        skipped += looks_like_a_verifiers_prefill(c.calls[k].outputs[0]) ? 0 : 1;
      }
    }
    EXPECT_GE(skipped, 1) << id;
  }
}

}  // namespace
}  // namespace kcv
