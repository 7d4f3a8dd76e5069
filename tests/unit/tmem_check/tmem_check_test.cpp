// kcv's static TMEM check (src/kcv/tmem_check.hpp, issue 20 item 4), without a GPU: the residency
// arithmetic against hand-computed occupancy, the path rules on hand-written PTX (including the
// cases where correlating branches would be wrong), the compile-only controls under
// tests/tmem/candidates/ (compiled here for sm_100a: nvcc -ptx + ptxas -v), and glr's own sm100
// backward as the build keeps it (build/sm100/).
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <set>
#include <string>

#include <gtest/gtest.h>

#include "kcv/backends/host_backend.hpp"
#include "kcv/candidate.hpp"
#include "kcv/gate.hpp"
#include "kcv/gate_run.hpp"
#include "kcv/runner.hpp"
#include "kcv/tmem_check.hpp"

namespace fs = std::filesystem;
using kcv::tmem::Outcome;

namespace {

bool have_nvcc() {
  std::string out;
  return kcv::run_capture({"nvcc", "--version"}, out) == 0;
}

kcv::tmem::Report check_control(const std::string& name, const std::vector<std::string>& extra_flags = {}) {
  const fs::path src = fs::path(KCV_SOURCE_DIR) / "tests/tmem/candidates" / name;
  const fs::path dir = fs::temp_directory_path() / ("kcv-tmem-test-" + std::to_string(::getpid())) / name;
  if (extra_flags.empty()) return kcv::tmem::check_source(src.string(), dir.string(), {});
  // A variant of the same control: the source copied behind a #define.
  fs::create_directories(dir);
  const fs::path variant = dir / ("variant_" + name);
  std::ofstream out(variant);
  for (const auto& f : extra_flags) out << "#define " << f << "\n";
  out << "#include \"" << src.string() << "\"\n";
  out.close();
  return kcv::tmem::check_source(variant.string(), (dir / "v").string(), {src.parent_path().string()});
}

std::string read(const fs::path& p) {
  std::ifstream in(p);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

/// A one-entry module around `body` (registers declared; labels as nvcc writes them).
std::string module(const std::string& body, const std::string& directives = ".maxntid 128") {
  return ".version 9.0\n.target sm_100a\n.address_size 64\n.visible .entry k(\n .param .u32 k_param_0\n)\n" +
         directives + "\n{\n .reg .pred %p<9>;\n .reg .b32 %r<32>;\n" + body + "\n}\n";
}

const char* kAllocWarp0 =
    " mov.u32 %r1, %tid.x;\n setp.gt.u32 %p1, %r1, 31;\n @%p1 bra $L__BB0_2;\n mov.b32 %r3, 32;\n"
    " tcgen05.alloc.cta_group::1.sync.aligned.shared::cta.b32 [%r2], %r3;\n"
    " tcgen05.relinquish_alloc_permit.cta_group::1.sync.aligned;\n$L__BB0_2:\n bar.sync 0;\n";

}  // namespace

TEST(TmemCheck, ResidencyFollowsTheOccupancyRules) {
  using kcv::tmem::resident_ctas;
  EXPECT_EQ(resident_ctas(1024, 11, 4), 2);     // threads: 2048 / 1024 (registers allow 4, smem 202)
  EXPECT_EQ(resident_ctas(128, 9, 4), 16);      // threads: 2048 / 128
  EXPECT_EQ(resident_ctas(256, 128, 0), 2);     // 128 x 32 = 4096 per warp: 4 warps per sub-partition, 16 / 8
  EXPECT_EQ(resident_ctas(256, 215, 0), 1);     // 215 x 32 -> 6912 per warp: 2 per sub-partition, 8 / 8
  EXPECT_EQ(resident_ctas(32, 0, 0), 32);       // the CTA cap
  EXPECT_EQ(resident_ctas(128, 32, 116000), 1);  // 116000 + 1024 -> 117120: 233472 / 117120 = 1.99
  EXPECT_EQ(resident_ctas(128, 32, 115000), 2);  // 115000 + 1024 -> 116096: 2.01
  EXPECT_EQ(resident_ctas(128, 32, 232449), 0);  // over the 227 KiB a CTA can have
}

TEST(TmemCheck, PathRulesOnHandWrittenPtx) {
  // Correlated branches: alloc and dealloc under the same warp-0 condition, recomputed: proven.
  const std::string ok = module(std::string(kAllocWarp0) +
                                " setp.gt.u32 %p2, %r1, 31;\n @%p2 bra $L__BB0_4;\n mov.b32 %r4, 32;\n"
                                " tcgen05.dealloc.cta_group::1.sync.aligned.b32 %r5, %r4;\n$L__BB0_4:\n ret;");
  auto r = kcv::tmem::check_ptx(ok, "");
  EXPECT_EQ(r.outcome, Outcome::pass) << r.evidence;
  EXPECT_NE(r.evidence.find("every path deallocates and relinquishes"), std::string::npos) << r.evidence;

  // The same, but %r1 is rewritten between the two tests: the conditions are not the same fact.
  const std::string rewritten = module(std::string(kAllocWarp0) +
                                       " mov.u32 %r1, %laneid;\n setp.gt.u32 %p2, %r1, 31;\n @%p2 bra $L__BB0_4;\n"
                                       " mov.b32 %r4, 32;\n tcgen05.dealloc.cta_group::1.sync.aligned.b32 %r5, %r4;\n"
                                       "$L__BB0_4:\n ret;");
  r = kcv::tmem::check_ptx(rewritten, "");
  EXPECT_EQ(r.outcome, Outcome::fail) << r.evidence;
  EXPECT_NE(r.evidence.find("without tcgen05.dealloc"), std::string::npos) << r.evidence;

  // A dealloc predicated on an unrelated condition: a path skips it.
  const std::string predicated = module(std::string(kAllocWarp0) +
                                        " ld.param.u32 %r6, [k_param_0];\n setp.eq.s32 %p3, %r6, 7;\n"
                                        " @%p3 tcgen05.dealloc.cta_group::1.sync.aligned.b32 %r5, 32;\n ret;");
  r = kcv::tmem::check_ptx(predicated, "");
  EXPECT_EQ(r.outcome, Outcome::fail) << r.evidence;

  // An alloc after relinquish (illegal in the PTX ISA), and an allocation that is not a power of two.
  const std::string realloc = module(std::string(kAllocWarp0) +
                                     " tcgen05.alloc.cta_group::1.sync.aligned.shared::cta.b32 [%r2], 48;\n"
                                     " tcgen05.dealloc.cta_group::1.sync.aligned.b32 %r5, 32;\n"
                                     " tcgen05.dealloc.cta_group::1.sync.aligned.b32 %r5, 48;\n ret;");
  r = kcv::tmem::check_ptx(realloc, "");
  EXPECT_EQ(r.outcome, Outcome::fail) << r.evidence;
  EXPECT_NE(r.evidence.find("after tcgen05.relinquish_alloc_permit"), std::string::npos) << r.evidence;
  EXPECT_NE(r.evidence.find("48 columns"), std::string::npos) << r.evidence;

  // Columns from a kernel parameter, no launch bound, no ptxas report: up to 32 CTAs, not determined.
  const std::string param = module(
      " ld.param.u32 %r3, [k_param_0];\n tcgen05.alloc.cta_group::1.sync.aligned.shared::cta.b32 [%r2], %r3;\n"
      " tcgen05.relinquish_alloc_permit.cta_group::1.sync.aligned;\n"
      " tcgen05.dealloc.cta_group::1.sync.aligned.b32 %r5, %r3;\n ret;",
      "");
  r = kcv::tmem::check_ptx(param, "");
  EXPECT_EQ(r.outcome, Outcome::open) << r.evidence;
  EXPECT_NE(r.evidence.find("columns not determined"), std::string::npos) << r.evidence;
  EXPECT_NE(r.evidence.find("up to 32 CTAs/SM"), std::string::npos) << r.evidence;

  // An alloc/dealloc pair in a loop, relinquished after it: 32 columns at a time, proven. Without
  // the dealloc, the allocations pile up along the loop: FAIL.
  const std::string loop_body =
      " mov.u32 %r1, 0;\n$L__BB0_1:\n tcgen05.alloc.cta_group::1.sync.aligned.shared::cta.b32 [%r2], 32;\n"
      "DEALLOC add.s32 %r1, %r1, 1;\n setp.lt.s32 %p1, %r1, 4;\n @%p1 bra $L__BB0_1;\n"
      " tcgen05.relinquish_alloc_permit.cta_group::1.sync.aligned;\n ret;";
  std::string with = loop_body, without = loop_body;
  with.replace(with.find("DEALLOC"), 7, " tcgen05.dealloc.cta_group::1.sync.aligned.b32 %r5, 32;\n");
  without.replace(without.find("DEALLOC"), 7, "");
  r = kcv::tmem::check_ptx(module(with), "");
  EXPECT_EQ(r.outcome, Outcome::pass) << r.evidence;
  ASSERT_EQ(r.kernels.size(), 1u);
  EXPECT_EQ(r.kernels[0].columns, 32);
  r = kcv::tmem::check_ptx(module(without), "");
  EXPECT_EQ(r.outcome, Outcome::fail) << r.evidence;

  // No TMEM at all.
  r = kcv::tmem::check_ptx(module(" ret;"), "");
  EXPECT_EQ(r.outcome, Outcome::pass);
  EXPECT_TRUE(r.kernels.empty());
}

TEST(TmemCheck, AppliesOnlyToSm100OrTcgen05) {
  EXPECT_TRUE(kcv::tmem::applies("__global__ void k() {}", "100a"));
  EXPECT_TRUE(kcv::tmem::applies("asm(\"tcgen05.alloc...\")", "90a"));
  EXPECT_FALSE(kcv::tmem::applies("__global__ void k() {}", "90a"));
}

TEST(TmemCheck, ControlOverBudget512ColumnsAtTwoCtas) {
  if (!have_nvcc()) GTEST_SKIP() << "no nvcc";
  const auto r = check_control("over_budget_512x2.cu");
  EXPECT_EQ(r.outcome, Outcome::fail) << r.evidence;
  ASSERT_EQ(r.kernels.size(), 1u);
  EXPECT_EQ(r.kernels[0].columns, 512);
  EXPECT_EQ(r.kernels[0].ctas_min, 2);
  EXPECT_EQ(r.kernels[0].threads, 1024);
  EXPECT_NE(r.evidence.find("512 columns x 2 CTAs/SM = 1024 > 512"), std::string::npos) << r.evidence;
}

TEST(TmemCheck, ControlMissingDeallocOnOnePath) {
  if (!have_nvcc()) GTEST_SKIP() << "no nvcc";
  const auto r = check_control("missing_dealloc.cu");
  EXPECT_EQ(r.outcome, Outcome::fail) << r.evidence;
  EXPECT_NE(r.evidence.find("32 columns x 16 CTAs/SM = 512 <= 512"), std::string::npos) << r.evidence;
  EXPECT_NE(r.evidence.find("reaches the exit"), std::string::npos) << r.evidence;
  EXPECT_NE(r.evidence.find("without tcgen05.dealloc"), std::string::npos) << r.evidence;
  EXPECT_EQ(r.evidence.find("relinquish_alloc_permit"), std::string::npos) << r.evidence;
}

TEST(TmemCheck, ControlMissingRelinquish) {
  if (!have_nvcc()) GTEST_SKIP() << "no nvcc";
  const auto r = check_control("missing_relinquish.cu");
  EXPECT_EQ(r.outcome, Outcome::fail) << r.evidence;
  EXPECT_NE(r.evidence.find("without tcgen05.relinquish_alloc_permit"), std::string::npos) << r.evidence;
  EXPECT_EQ(r.evidence.find("without tcgen05.dealloc"), std::string::npos) << r.evidence;
}

TEST(TmemCheck, ControlPairDeallocBeforePeerAlloc) {
  if (!have_nvcc()) GTEST_SKIP() << "no nvcc";
  auto r = check_control("pair_dealloc_before_peer_alloc.cu");
  EXPECT_EQ(r.outcome, Outcome::fail) << r.evidence;
  ASSERT_EQ(r.kernels.size(), 1u);
  EXPECT_EQ(r.kernels[0].cta_group, 2);
  EXPECT_NE(r.evidence.find("no barrier.cluster.wait since tcgen05.alloc"), std::string::npos) << r.evidence;
  // The same kernel with the cluster barriers: passes (the rule is not vacuous).
  r = check_control("pair_dealloc_before_peer_alloc.cu", {"PAIR_SYNCED"});
  EXPECT_EQ(r.outcome, Outcome::pass) << r.evidence;
}

TEST(TmemCheck, ControlInBudgetPasses) {
  if (!have_nvcc()) GTEST_SKIP() << "no nvcc";
  const auto r = check_control("in_budget.cu");
  EXPECT_EQ(r.outcome, Outcome::pass) << r.evidence;
  EXPECT_NE(r.evidence.find("64 columns x 8 CTAs/SM = 512 <= 512"), std::string::npos) << r.evidence;
}

TEST(TmemCheck, GlrSm100BackwardAsBuilt) {
  const fs::path dir = GLR_SM100_DIR;
  if (!fs::exists(dir / "glr_bwd_sm100.ptx")) GTEST_SKIP() << "no " << dir << "/glr_bwd_sm100.ptx (no nvcc at build)";
  const auto r = kcv::tmem::check_ptx(read(dir / "glr_bwd_sm100.ptx"), read(dir / "glr_bwd_sm100.ptxas.txt"));
  // Every entry proven: the allocation is the kernel's template argument (kRunAllocColumns), so
  // the check reads its columns from the binary and bounds them by the residency.
  EXPECT_EQ(r.outcome, Outcome::pass) << r.evidence;
  ASSERT_EQ(r.kernels.size(), 8u) << r.evidence;  // bf16/f16 x vector/scalar gate x 32/64 columns
  std::set<int> columns;
  for (const auto& k : r.kernels) {
    SCOPED_TRACE(k.evidence);
    EXPECT_EQ(k.outcome, Outcome::pass);
    EXPECT_NE(k.evidence.find("every path deallocates and relinquishes"), std::string::npos);
    const bool c64 = k.name.find("ELi64EE") != std::string::npos;
    EXPECT_EQ(k.columns, c64 ? 64 : 32);
    columns.insert(k.columns);
    EXPECT_EQ(k.threads, 256);
    EXPECT_TRUE(k.dynamic_smem);
    EXPECT_LE(k.columns * k.ctas_max, 512);
  }
  EXPECT_EQ(columns, (std::set<int>{32, 64}));
}

namespace {

/// The candidate built for `arch` (Settings::cuda_arch, KCV_CUDA_ARCH to the CLI; "" = kcv's
/// default, 90a), as kcv verify would build it.
kcv::Candidate prepare_cu(const fs::path& src, const fs::path& dir, const std::string& arch) {
  fs::create_directories(dir);
  kcv::Settings settings;
  settings.cuda_arch = arch;
  return kcv::Candidate::prepare(src.string(), "cuda", dir.string(), kcv::default_compile_limits(), settings);
}

}  // namespace

TEST(TmemCheck, SanitizerGateFailsAnSm100CandidateOverBudgetWithoutRunningIt) {
  if (!have_nvcc()) GTEST_SKIP() << "no nvcc";
  const fs::path dir = fs::temp_directory_path() / ("kcv-tmem-gate-" + std::to_string(::getpid()));
  // built for sm_100a, as on a Blackwell machine
  const kcv::Candidate cand =
      prepare_cu(fs::path(KCV_SOURCE_DIR) / "tests/tmem/candidates/over_budget_512x2.cu", dir / "over", "100a");
  const kcv::GateContext ctx{*kcv::find_contract("add"), kcv::backend_named("cuda"), cand};
  const kcv::Gate* g = kcv::find_gate("sanitizer");
  ASSERT_NE(g, nullptr);
  const kcv::CaseJudgement j = g->static_check(ctx);
  EXPECT_EQ(j.verdict, kcv::Verdict::fail) << j.evidence;
  EXPECT_NE(j.evidence.find("512 columns x 2 CTAs/SM = 1024 > 512"), std::string::npos) << j.evidence;
  EXPECT_TRUE(fs::exists(dir / "over" / "tmem" / "tmem.ptx"));
  // The engine: the static FAIL is the gate's verdict, and no case runs (the runner is never used:
  // there is no worker at this path).
  kcv::RunnerOptions ro;
  ro.backend = "cuda";
  ro.worker = "/nonexistent/kcv-worker";
  ro.workdir = dir.string();
  kcv::Runner runner(cand, ro);
  const kcv::GateRun run = kcv::run_gate(*g, ctx, runner, 1, std::nullopt);
  EXPECT_EQ(run.report.verdict, kcv::Verdict::fail);
  EXPECT_EQ(run.report.cases, 0);
  EXPECT_NE(run.report.evidence.find("static check: TMEM fail"), std::string::npos) << run.report.evidence;
  EXPECT_NE(run.report.evidence.find("cases were not run"), std::string::npos) << run.report.evidence;
  fs::remove_all(dir);
}

TEST(TmemCheck, SanitizerGateSaysOneLineForACandidateWithoutTcgen05) {
  if (!have_nvcc()) GTEST_SKIP() << "no nvcc";
  const fs::path dir = fs::temp_directory_path() / ("kcv-tmem-gate-plain-" + std::to_string(::getpid()));
  const kcv::Candidate cand = prepare_cu(fs::path(KCV_SOURCE_DIR) / "controls/cuda/add/add_ok.cu", dir, "");
  const kcv::GateContext ctx{*kcv::find_contract("add"), kcv::backend_named("cuda"), cand};
  const kcv::CaseJudgement j = kcv::find_gate("sanitizer")->static_check(ctx);
  EXPECT_EQ(j.verdict, kcv::Verdict::pass);
  EXPECT_EQ(j.evidence, "TMEM check: no tcgen05 in the candidate and not built for sm_100");
  EXPECT_FALSE(fs::exists(dir / "tmem"));  // nothing compiled for it
  fs::remove_all(dir);
}
