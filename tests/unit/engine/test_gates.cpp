// The gate set itself: DESIGN ids and order, no gate vacuous on any built-in contract, cases
// reproducible from their seed.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <set>
#include <tuple>

#include "kcv/backends/host_backend.hpp"
#include "kcv/candidate.hpp"
#include "kcv/gate.hpp"
#include "kcv/gates/common.hpp"
#include "test_support.hpp"

namespace kcv {
namespace {

TEST(Gates, TwelveInDesignOrder) {
  const char* ids[] = {"numerics", "shapes",      "values", "nonfinite", "bounds",      "inputs_intact",
                       "coverage", "determinism", "layout", "stateless", "concurrency", "sanitizer"};
  ASSERT_EQ(all_gates().size(), 12u);
  for (std::size_t i = 0; i < 12; ++i) {
    EXPECT_EQ(all_gates()[i]->id(), ids[i]);
    EXPECT_EQ(all_gates()[i]->tolerance_independent(), i >= 3) << ids[i];
  }
}

TEST(Gates, EveryGateHasCasesForEveryBuiltinContract) {
  test::TempDir dir;
  const Candidate cand = Candidate::prepare(dir.file("c.c", "int kcv_run(const void* c) { return 0; }"), "cpu", dir.path());
  for (const auto& contract : builtin_contracts()) {
    // NOTES: the bf16/f16 variants share their f32 twin's case code; skipping them keeps this quick.
    if (contract->name.ends_with("_bf16") || contract->name.ends_with("_f16")) continue;
    const GateContext ctx{*contract, backend_named("cpu"), cand};
    for (const auto& gate : all_gates()) {
      const auto cases = gate->cases(ctx, 99);
      EXPECT_FALSE(cases.empty()) << gate->id() << " on " << contract->name;
      for (const auto& c : cases) EXPECT_FALSE(c.calls.empty()) << gate->id() << " " << c.label;
    }
  }
}

// NOTES: the engine starts the workers a gate declares before its cases are made (standby
// workers, docs/architecture.md); a declared set that drifts from the cases' would start workers
// nobody uses, or leave one to start late. Exactly the non-default options the cases use, for
// every gate, two seeds, both backends and both kinds of candidate.
TEST(Gates, DeclaredWorkerOptionsAreExactlyThoseTheCasesUse) {
  test::TempDir dir;
  const Candidate abi = Candidate::prepare(dir.file("c.c", "int kcv_run(const void* c) { return 0; }"), "cpu", dir.path());
  const std::string py = dir.file("solution.py", "class ModelNew: pass\n");
  const Candidate torch = Candidate::kernelbench(py, py, "/usr/bin/python3", "");
  auto key = [](const WorkerOptions& w) { return std::tuple(w.threads, w.sanitized, w.sanitizer_tool, w.tag); };
  int declared_somewhere = 0;
  for (const Candidate* cand : {&abi, &torch})
    for (const char* backend : {"cpu", "cuda"})
      for (const char* op : {"add"}) {  // (no gate's workers depend on the op; its cases are the cheapest)
        const GateContext ctx{*find_contract(op), backend_named(backend), *cand};
        for (const auto& gate : all_gates()) {
          std::set<std::tuple<int, bool, std::string, int>> declared, used;
          for (const WorkerOptions& w : gate->worker_options(ctx)) {
            EXPECT_FALSE(w == WorkerOptions{}) << gate->id() << ": the default worker is the main one";
            EXPECT_TRUE(declared.insert(key(w)).second) << gate->id() << ": declared twice";
          }
          for (uint64_t seed : {1u, 99u})
            for (const Case& c : gate->cases(ctx, seed))
              if (!(c.worker == WorkerOptions{})) used.insert(key(c.worker));
          EXPECT_EQ(declared, used) << gate->id() << " on " << op << ", " << backend << ", " << cand->kind();
          declared_somewhere += static_cast<int>(declared.size());
        }
      }
  EXPECT_GT(declared_somewhere, 0);  // not vacuous: determinism and sanitizer declare theirs
}

TEST(Gates, CasesAreReproducibleFromTheSeed) {
  test::TempDir dir;
  const Candidate cand = Candidate::prepare(dir.file("c.c", "int kcv_run(const void* c) { return 0; }"), "cpu", dir.path());
  const GateContext ctx{*find_contract("matmul"), backend_named("cpu"), cand};
  for (const auto& gate : all_gates()) {
    const auto a = gate->cases(ctx, 5), b = gate->cases(ctx, 5), c = gate->cases(ctx, 6);
    ASSERT_EQ(a.size(), b.size());
    bool differs_with_seed = false;
    for (std::size_t i = 0; i < a.size(); ++i) {
      EXPECT_EQ(a[i].label, b[i].label);
      for (std::size_t k = 0; k < a[i].calls.size(); ++k)
        for (std::size_t t = 0; t < a[i].calls[k].inputs.size(); ++t) {
          EXPECT_EQ(a[i].calls[k].inputs[t].storage, b[i].calls[k].inputs[t].storage) << gate->id();
          differs_with_seed |= a[i].calls[k].inputs[t].storage != c[i].calls[k].inputs[t].storage;
        }
    }
    EXPECT_TRUE(differs_with_seed) << gate->id() << ": inputs do not depend on the seed";
  }
}

TEST(Gates, InPlaceContractSkipsInputsIntactWithAReason) {
  struct InPlace : Contract {
    std::vector<RefTensor> reference(const std::vector<HostTensor>&, const std::vector<double>&, const Bindings&,
                                     SumOrder) const override {
      return {};
    }
  } contract;
  contract.name = "inplace";
  contract.inplace_allowed = true;
  contract.inputs = {{"x", DType::f32, {"N"}}};
  contract.outputs = {{"y", DType::f32, {"N"}}};
  contract.symbols = {{"N", 1, 64, 8, 64, {}}};
  test::TempDir dir;
  const Candidate cand = Candidate::prepare(dir.file("c.c", "int kcv_run(const void* c) { return 0; }"), "cpu", dir.path());
  const GateContext ctx{contract, backend_named("cpu"), cand};
  const Gate* g = find_gate("inputs_intact");
  EXPECT_TRUE(g->cases(ctx, 1).empty());
  EXPECT_NE(g->skip_reason(ctx).find("in-place"), std::string::npos);
}

}  // namespace
}  // namespace kcv

#include "kcv/engine.hpp"

namespace kcv {
namespace {

/// Softmax that refuses any non-contiguous input, with or without saying why.
std::string refusing_softmax(bool with_message) {
  return test::softmax_source("", std::string(R"(
static int contiguous(const kcv_tensor* t) { return t->stride[1] == 1 && t->stride[0] == t->shape[1]; }
#define REFUSE_STRIDED if (!contiguous(&c->inputs[0])) { )") +
                                  (with_message ? "snprintf(c->error, c->error_len, \"strided x unsupported\"); " : "") +
                                  "return 1; }\n") ;
}

TEST(Gates, LayoutAcceptsACleanRefusalOnlyWithAMessage) {
  for (bool with_message : {true, false}) {
    test::TempDir dir;
    std::string src = refusing_softmax(with_message);
    src.replace(src.find("  const kcv_tensor *x"), 0, "  REFUSE_STRIDED\n");
    VerifyOptions o;
    o.op = "softmax";
    o.candidate = dir.file("refuse.c", src);
    o.gates = {"layout"};
    o.seed = 3;
    const Report r = verify(o);
    const GateReport& layout = r.gates[8];
    ASSERT_EQ(layout.id, "layout");
    if (with_message) {
      EXPECT_EQ(layout.verdict, Verdict::pass) << layout.evidence;
      EXPECT_NE(layout.evidence.find("passed without a strict comparison"), std::string::npos) << layout.evidence;
      EXPECT_NE(layout.evidence.find("refused cleanly"), std::string::npos) << layout.evidence;
    } else {
      EXPECT_EQ(layout.verdict, Verdict::fail) << layout.evidence;
      EXPECT_NE(layout.evidence.find("no message"), std::string::npos) << layout.evidence;
    }
  }
}

}  // namespace
}  // namespace kcv

namespace kcv {
namespace {

TEST(Gates, ShapesAddsTheLargeTierOnlyOnCuda) {
  test::TempDir dir;
  const Candidate cand = Candidate::prepare(dir.file("c.c", "int kcv_run(const void* c) { return 0; }"), "cpu", dir.path());
  const Contract& softmax = *find_contract("softmax");
  const Gate& shapes = *find_gate("shapes");
  const auto cpu = shapes.cases({softmax, backend_named("cpu"), cand}, 1), cuda = shapes.cases({softmax, backend_named("cuda"), cand}, 1);
  ASSERT_EQ(cuda.size(), cpu.size() + 1);
  const CallSpec& large = cuda.back().calls[0];
  ASSERT_TRUE(large.large);
  ASSERT_EQ(large.inputs.size(), 1u);
  EXPECT_GT(large.inputs[0].numel(), int64_t{1} << 31);
  EXPECT_TRUE(large.inputs[0].storage.empty());
  EXPECT_EQ(large.inputs[0].stride, contiguous_strides(large.inputs[0].shape));
  EXPECT_EQ(large.outputs[0].shape, large.inputs[0].shape);
  EXPECT_FALSE(large.samples.empty());
  for (int64_t i : large.samples) EXPECT_LT(i, large.outputs[0].numel());
}

TEST(Gates, ShapesRunsCommonSizesAndSizesDrawnFromTheSeed) {
  // Issue 25, class 4: softmax never ran N = 768, 1024, 2048 or 4096, and every size was known
  // ahead. Now those run, and beside them one size per symbol that changes with the seed.
  test::TempDir dir;
  const Candidate cand = Candidate::prepare(dir.file("c.c", "int kcv_run(const void* c) { return 0; }"), "cpu", dir.path());
  const Contract& softmax = *find_contract("softmax");
  auto sizes_of = [&](uint64_t seed) {
    std::set<int64_t> n;
    for (const Case& c : find_gate("shapes")->cases({softmax, backend_named("cpu"), cand}, seed)) n.insert(c.shape.at("N"));
    return n;
  };
  const std::set<int64_t> a = sizes_of(1);
  for (int64_t v : {768, 1024, 2048, 4096}) EXPECT_TRUE(a.count(v)) << v;
  std::set<int64_t> drawn;
  for (uint64_t seed = 1; seed <= 8; ++seed)
    for (int64_t v : sizes_of(seed)) drawn.insert(v);
  EXPECT_GE(drawn.size(), a.size() + 2) << "seeded sizes vary from run to run";
  for (int64_t v : drawn) EXPECT_TRUE(v >= 1 && v <= 65536) << v;
}

TEST(Gates, ShapesReachPastTheSweepUpToTheContractsRange) {
  // Issue 25, class 4: softmax's N was swept up to 8192 while the contract promises 65536; a
  // kernel with a row buffer of 8192 passed (controls/cpu/hostile/fixed_row_buffer.c). Now each
  // symbol gets one seeded size past its sweep, the others shrunk so the call stays small.
  test::TempDir dir;
  const Candidate cand = Candidate::prepare(dir.file("c.c", "int kcv_run(const void* c) { return 0; }"), "cpu", dir.path());
  for (const char* op : {"softmax", "add", "matmul", "layernorm"}) {
    const Contract& k = *find_contract(op);
    std::set<int64_t> beyond;
    for (uint64_t seed = 1; seed <= 3; ++seed) {
      int64_t past = 0;
      for (const Case& c : find_gate("shapes")->cases({k, backend_named("cpu"), cand}, seed)) {
        // The contract's own deep reductions (matmul K = 16384) are not the draw's.
        if (std::find(k.extra_shapes.begin(), k.extra_shapes.end(), c.shape) != k.extra_shapes.end()) continue;
        int64_t elements = 0;
        for (const auto& t : c.calls[0].inputs) elements += t.numel();
        for (const auto& t : c.calls[0].outputs) elements += t.numel();
        for (const auto& s : k.symbols) {
          const int64_t v = c.shape.at(s.name);
          EXPECT_LE(v, s.max) << op;
          if (v > std::min(s.max, s.sweep_max)) {
            ++past;
            beyond.insert(v);
            EXPECT_LE(elements, int64_t{1} << 23) << op << " " << c.label;
          }
        }
      }
      int64_t reachable = 0;
      for (const auto& s : k.symbols) reachable += s.max > std::min(s.max, s.sweep_max) ? 1 : 0;
      EXPECT_EQ(past, reachable) << op << ": one size past the sweep per symbol that has room";
    }
    EXPECT_GE(beyond.size(), 3u) << op << ": the sizes change with the seed";
  }
}

TEST(Gates, PrefillVariesAndStaleDataHoldsTheInputsValues) {
  // Issue 25, class 3: outputs always started as a poison, zeros, random bytes or one byte, each
  // told apart from real data by a candidate that skipped its work on real-looking outputs
  // (controls/cpu/hostile/skips_computed_output.c). Stale data: the case's own input values.
  test::TempDir dir;
  const Candidate cand = Candidate::prepare(dir.file("c.c", "int kcv_run(const void* c) { return 0; }"), "cpu", dir.path());
  const Contract& softmax = *find_contract("softmax");
  int poison = 0, stale = 0, other = 0;
  for (uint64_t seed = 1; seed <= 12; ++seed)
    for (const Case& c : find_gate("numerics")->cases({softmax, backend_named("cpu"), cand}, seed)) {
      const HostTensor& y = c.calls[0].outputs[0];
      const HostTensor& x = c.calls[0].inputs[0];
      const bool all_ff = std::all_of(y.storage.begin(), y.storage.end(), [](std::byte b) { return b == std::byte{0xFF}; });
      if (all_ff) { ++poison; continue; }
      const std::vector<double> xs = x.values(), ys = y.values();
      const std::set<double> in(xs.begin(), xs.end());
      const bool from_inputs = std::all_of(ys.begin(), ys.end(), [&](double v) { return in.count(v) > 0; });
      const bool varied = std::set<double>(ys.begin(), ys.end()).size() > 1;
      if (from_inputs && varied) {
        ++stale;
        EXPECT_NE(ys, xs) << "from a seeded place on, not the input itself";
      } else {
        ++other;
      }
    }
  EXPECT_GT(poison, 15);
  EXPECT_GT(stale, 2);
  EXPECT_GT(other, 8);
}

TEST(Gates, StatelessChangesAnInteriorElementAtASeededPosition) {
  // A cache keyed on a few elements a cheater can predict (the ends, the middle) passed when only
  // the last element changed; controls/cpu/add/add_caches_by_ends.c is that cheater.
  test::TempDir dir;
  const Candidate cand = Candidate::prepare(dir.file("c.c", "int kcv_run(const void* c) { return 0; }"), "cpu", dir.path());
  const GateContext ctx{*find_contract("add"), backend_named("cpu"), cand};
  std::set<int64_t> positions;
  for (uint64_t seed = 1; seed <= 6; ++seed) {
    const auto cases = find_gate("stateless")->cases(ctx, seed);
    const auto it = std::find_if(cases.begin(), cases.end(),
                                 [](const Case& c) { return c.label.find("seeded interior position") != std::string::npos; });
    ASSERT_NE(it, cases.end());
    const HostTensor &before = it->calls[0].inputs[0], &after = it->calls[1].inputs[0];
    std::vector<int64_t> changed;
    for (int64_t i = 0; i < before.numel(); ++i)
      if (before.get(i) != after.get(i)) changed.push_back(i);
    ASSERT_EQ(changed.size(), 1u);
    EXPECT_GT(changed[0], 0);
    EXPECT_LT(changed[0], before.numel() - 1);
    positions.insert(changed[0]);
    EXPECT_EQ(it->calls[1].reuse_buffers_of, 0) << "same addresses";
  }
  EXPECT_GE(positions.size(), 5u) << "the position changes with the seed";
}

TEST(Gates, SanitizerCallsANonZeroExitWithNoReportACrashAndAReportAFailure) {
  test::TempDir dir;
  const Candidate cand = Candidate::prepare(dir.file("c.c", "int kcv_run(const void* c) { return 0; }"), "cpu", dir.path());
  const GateContext ctx{*find_contract("add"), backend_named("cuda"), cand};
  const Gate* g = find_gate("sanitizer");
  ASSERT_NE(g, nullptr);
  const std::vector<Case> cases = g->cases(ctx, 1);
  ASSERT_FALSE(cases.empty());
  // What compute-sanitizer printed for three KernelBench LSTM reference controls under racecheck
  // (H200, 2026-11-30): the program exited non-zero after its calls, and no hazard.
  const std::string exit_only =
      "========= Error: process didn't terminate successfully\n"
      "========= Target application returned an error\n"
      "========= RACECHECK SUMMARY: 0 hazards displayed (0 errors, 0 warnings)\n";
  CaseRun run;
  run.status = RunStatus::crash;
  run.detail = "worker exited with status 1 after its calls (its log ends: RuntimeError: boom)";
  run.log = "RuntimeError: boom\n" + exit_only;
  CaseJudgement j = g->judge_abnormal(ctx, cases[0], run);
  EXPECT_EQ(j.verdict, Verdict::crash) << j.evidence;
  EXPECT_NE(j.evidence.find("after its calls (its log ends: RuntimeError: boom)"), std::string::npos) << j.evidence;
  // A hazard is a report, whatever the exit.
  run.log = "========= Error: Race reported between Write access at 0x10 in k(float*)\n"
            "=========     and Read access at 0x20 in k(float*) [8 hazards]\n" + exit_only;
  j = g->judge_abnormal(ctx, cases[0], run);
  EXPECT_EQ(j.verdict, Verdict::fail);
  EXPECT_NE(j.evidence.find("Race reported between Write access"), std::string::npos) << j.evidence;
  // So is a non-zero summary.
  run.log = "========= ERROR SUMMARY: 2 errors\n";
  EXPECT_EQ(g->judge_abnormal(ctx, cases[0], run).verdict, Verdict::fail);
}

// docs/tolerance-independence.md: layout, stateless and concurrency judge the setting. An error the
// candidate makes in the plain setting too passes them (numerics fails it); a setting bug on top
// of it still fails its gate.
TEST(Gates, StructuralGatesJudgeTheSettingNotThePrecision) {
  const std::string off = "for (long k = 0; k < M * N; ++k) yp[k] *= 1.001f;";  // ~30 × the bound
  // Strided x read as contiguous: the layout bug of softmax_ignores_strides.c, on top.
  const std::string strided = "if (x->stride[1] != 1 || x->stride[0] != N) for (long k = 0; k < M * N; ++k) yp[k] = xp[k];";
  for (bool layout_bug : {false, true}) {
    test::TempDir dir;
    VerifyOptions o;
    o.op = "softmax";
    o.candidate = dir.file("off.c", test::softmax_source(off + (layout_bug ? "\n  " + strided : "")));
    o.gates = {"numerics", "layout", "stateless", "concurrency"};
    o.seed = 11;
    const Report r = verify(o);
    for (const GateReport& g : r.gates) {
      if (g.id == "numerics") {
        EXPECT_EQ(g.verdict, Verdict::fail) << g.evidence;
      } else if (g.id == "layout" && layout_bug) {
        EXPECT_EQ(g.verdict, Verdict::fail) << g.evidence;
      } else if (g.id == "layout" || g.id == "stateless" || g.id == "concurrency") {
        EXPECT_EQ(g.verdict, Verdict::pass) << g.id << ": " << g.evidence;
        EXPECT_NE(g.evidence.find("none further from it than the plain call on the same inputs"), std::string::npos) << g.evidence;
      }
    }
  }
}

}  // namespace
}  // namespace kcv

namespace kcv {
namespace {

/// Softmax that dithers every element by -1, 0 or +1 ulp from a call-to-call random stream (like
/// stochastic rounding): within the error model, never the same bits twice. Its last row:
/// computed (`full`), never written (`skipped`: the poison stays), or garbage from the same
/// stream (`garbage`, as an output allocation of the candidate's own holds where it is not written).
enum class LastRow { full, skipped, garbage };
std::string dithering_softmax(LastRow last) {
  std::string src = test::softmax_source(std::string(R"(
  for (long i = 0; i < ROWS * N; ++i) {
    lcg = lcg * 1103515245u + 12345u;
    const unsigned r = (lcg >> 16) % 3u;
    if (r == 1) yp[i] = nextafterf(yp[i], INFINITY);
    if (r == 2) yp[i] = nextafterf(yp[i], -INFINITY);
  })") + (last == LastRow::garbage ? R"(
  for (long i = (M - 1) * N; i < M * N; ++i) { lcg = lcg * 1103515245u + 12345u; yp[i] = (float)(lcg >> 8); })" : ""),
                                         std::string("static unsigned lcg = 7u;\n#define ROWS ") +
                                             (last == LastRow::full ? "M" : "(M - 1)") + "\n");
  const std::string loop = "for (long i = 0; i < M; ++i) {";
  src.replace(src.find(loop), loop.size(), "for (long i = 0; i < ROWS; ++i) {");
  return src;
}

GateReport gate_of(const Report& r, const std::string& id) {
  for (const GateReport& g : r.gates)
    if (g.id == id) return g;
  ADD_FAILURE() << "no gate " << id;
  return {};
}

TEST(Gates, CoverageTellsNondeterministicOutputFromUnwrittenOutput) {
  // Issue 27: Inductor's cumsum is not reproducible, and coverage blamed the prefill ("element not
  // written, or poison read"). Two runs under the same poison that differ say nondeterminism.
  test::TempDir dir;
  VerifyOptions o;
  o.op = "softmax";
  o.gates = {"coverage", "determinism", "numerics"};
  o.seed = 11;
  o.candidate = dir.file("dither.c", dithering_softmax(LastRow::full));
  const Report dither = verify(o);
  const GateReport cov = gate_of(dither, "coverage");
  EXPECT_EQ(cov.verdict, Verdict::pass) << cov.evidence;
  EXPECT_NE(cov.evidence.find("nondeterministic output, not an unwritten one"), std::string::npos) << cov.evidence;
  EXPECT_NE(cov.evidence.find("determinism gate"), std::string::npos) << cov.evidence;
  EXPECT_EQ(gate_of(dither, "determinism").verdict, Verdict::fail);
  EXPECT_EQ(gate_of(dither, "numerics").verdict, Verdict::pass) << gate_of(dither, "numerics").evidence;

  // Nondeterministic and a row never written: the row holds each run's poison.
  o.candidate = dir.file("dither_skip.c", dithering_softmax(LastRow::skipped));
  const GateReport both = gate_of(verify(o), "coverage");
  EXPECT_EQ(both.verdict, Verdict::fail) << both.evidence;
  EXPECT_NE(both.evidence.find("holds each run's poison"), std::string::npos) << both.evidence;

  // Nondeterministic and a row of garbage that varies too: not an order's rounding.
  o.candidate = dir.file("dither_garbage.c", dithering_softmax(LastRow::garbage));
  const GateReport garbage = gate_of(verify(o), "coverage");
  EXPECT_EQ(garbage.verdict, Verdict::fail) << garbage.evidence;
  EXPECT_NE(garbage.evidence.find("beyond an evaluation order's rounding"), std::string::npos) << garbage.evidence;

  // Deterministic with a row never written: the poisons' runs differ where the same poison's agree.
  o.candidate = dir.file("skip.c", [] {
    std::string src = test::softmax_source();
    const std::string loop = "for (long i = 0; i < M; ++i) {";
    return src.replace(src.find(loop), loop.size(), "for (long i = 0; i < M - 1; ++i) {");
  }());
  const GateReport skip = gate_of(verify(o), "coverage");
  EXPECT_EQ(skip.verdict, Verdict::fail) << skip.evidence;
  EXPECT_NE(skip.evidence.find("element not written, or poison read"), std::string::npos) << skip.evidence;
  EXPECT_NE(skip.evidence.find("same poison agree"), std::string::npos) << skip.evidence;
}

/// C = triu(A·B) in fp64, every product formed (IEEE: 0·NaN is NaN), A and B N x N with `promise`.
class TriangularMatmul final : public Contract {
 public:
  explicit TriangularMatmul(Structure promise) {
    name = "triangular_matmul";
    inputs = {{"A", DType::f32, {"N", "N"}, Domain::real, promise},
              {"B", DType::f32, {"N", "N"}, Domain::real, promise}};
    outputs = {{"C", DType::f32, {"N", "N"}, Domain::real}};
    symbols = {{"N", 1, 64, 6, 64, {}}};
  }
  std::vector<RefTensor> reference(const std::vector<HostTensor>& in, const std::vector<double>&, const Bindings& b,
                                   SumOrder order) const override {
    const int64_t n = b.at("N");
    const std::vector<double> a = in[0].values(), bb = in[1].values();
    RefTensor r;
    r.resize(static_cast<std::size_t>(n * n));
    for (int64_t i = 0; i < n; ++i)
      for (int64_t j = i; j < n; ++j) {
        double s = 0, m = 0;
        for (int64_t t = 0; t < n; ++t) {
          const int64_t k = order == SumOrder::forward ? t : n - 1 - t;
          s += a[i * n + k] * bb[k * n + j];
          m += std::abs(a[i * n + k] * bb[k * n + j]);
        }
        r.value[i * n + j] = s;
        r.mag[i * n + j] = m;
        r.depth[i * n + j] = static_cast<double>(n);
      }
    return {r};
  }
};

TEST(Gates, ProductsWithPromisedZerosMayBeSkippedButNaNMayNotBeLaundered) {
  // Issue 27, found on the H200: KernelBench's level1/14 kernels sum C[i][j] over k = i..j only,
  // as A and B are promised upper triangular. A NaN at A[0][3] reaches C[0][j < 3] in the dense
  // reference only through B[3][j] = 0 (0·NaN); skipping those products is legitimate, reading the
  // NaN as 0 is not (docs/nonfinite-classes.md, "Structural zeros").
  constexpr int64_t n = 6;
  std::vector<double> a(n * n, 0.0), b(n * n, 0.0);
  for (int64_t i = 0; i < n; ++i)
    for (int64_t j = i; j < n; ++j) {
      a[i * n + j] = 0.5 + 0.25 * double((i * 7 + j * 3) % 5);
      b[i * n + j] = -0.75 + 0.5 * double((i * 5 + j) % 4);
    }
  a[0 * n + 3] = std::numeric_limits<double>::quiet_NaN();
  CallSpec spec;
  spec.inputs = {HostTensor::from_values(DType::f32, {n, n}, a), HostTensor::from_values(DType::f32, {n, n}, b)};
  spec.outputs = {HostTensor::from_values(DType::f32, {n, n}, std::vector<double>(n * n, 0.0))};
  // C by one of three kernels: every product (as torch), k = i..j only, or k = i..j with NaN read as 0.
  enum class Kernel { dense, skips_zeros, launders };
  auto run = [&](Kernel kind) {
    std::vector<double> c(n * n, 0.0);
    for (int64_t i = 0; i < n; ++i)
      for (int64_t j = i; j < n; ++j) {
        double s = 0;
        for (int64_t k = kind == Kernel::dense ? 0 : i; k <= (kind == Kernel::dense ? n - 1 : j); ++k) {
          const double x = kind == Kernel::launders && std::isnan(a[i * n + k]) ? 0.0 : a[i * n + k];
          s += x * b[k * n + j];
        }
        c[i * n + j] = s;
      }
    CallResult r;
    r.ran = true;
    r.outputs = {HostTensor::from_values(DType::f32, {n, n}, c)};
    return r;
  };
  const Bindings shape{{"N", n}};
  const gates::JudgeOptions classes{.classes_only = true, .two_orders = true};
  const TriangularMatmul promised(Structure::upper), dense(Structure::none);
  auto judge = [&](const Contract& k, Kernel kind) { return gates::judge_call(k, shape, spec, run(kind), classes); };

  EXPECT_EQ(judge(promised, Kernel::dense).verdict, Verdict::pass) << judge(promised, Kernel::dense).evidence;
  const CaseJudgement skips = judge(promised, Kernel::skips_zeros);
  EXPECT_EQ(skips.verdict, Verdict::pass) << skips.evidence;
  // Laundered: C[0][3..5] reach the NaN through B[3][3..5] != 0 and must be NaN.
  const CaseJudgement launders = judge(promised, Kernel::launders);
  EXPECT_EQ(launders.verdict, Verdict::fail);
  EXPECT_NE(launders.evidence.find("expected NaN"), std::string::npos) << launders.evidence;
  EXPECT_NE(launders.evidence.find("3 of 36"), std::string::npos) << launders.evidence;
  // Without the promise the zeros are data: 0·NaN is the op's NaN, and skipping them fails.
  const CaseJudgement unpromised = judge(dense, Kernel::skips_zeros);
  EXPECT_EQ(unpromised.verdict, Verdict::fail);
  EXPECT_NE(unpromised.evidence.find("3 of 36"), std::string::npos) << unpromised.evidence;
  // Values are judged against the domain's value where only it allows a finite result.
  CallResult off = run(Kernel::skips_zeros);
  off.outputs[0].set(0 * n + 1, off.outputs[0].get(0 * n + 1) + 1.0);
  const CaseJudgement wrong = gates::judge_call(promised, shape, spec, off, {.two_orders = true});
  EXPECT_EQ(wrong.verdict, Verdict::fail);
  EXPECT_NE(wrong.evidence.find("[0,1]"), std::string::npos) << wrong.evidence;
}

}  // namespace
}  // namespace kcv
