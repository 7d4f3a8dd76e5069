// Large KernelBench problems (docs/kernelbench.md, "Large problems"): the size-independent gates
// run at a clipped shape under kStructuralElements, say so, and still catch what they catch; the
// shapes gate sweeps each symbol with the others within kSweepElements; numerics and values keep
// the problem's own sizes. Real torch, cpu backend.
#include <algorithm>

#include <gtest/gtest.h>

#include "corpus_test_support.hpp"
#include "kcv/backends/host_backend.hpp"
#include "kcv/candidate.hpp"
#include "kcv/engine.hpp"
#include "kcv/gate.hpp"
#include "kcv/kernelbench.hpp"

namespace kcv::corpus_test {
namespace {

const std::string kRowsum = std::string(KCV_SOURCE_DIR) + "/controls/torch/rowsum";

/// rowsum's Model at sizes whose call moves 2·1030·1025 > 2^20 elements.
std::string big_rowsum(const std::string& sizes = "batch_size = 1030\ndim = 1025\n",
                       const std::string& inputs = "torch.randn(batch_size, dim)") {
  return problem_file("class Model(nn.Module):\n"
                      "    def forward(self, x):\n"
                      "        return torch.relu(x) * 2.0 + x.sum(dim=1, keepdim=True)\n",
                      sizes, "[" + inputs + "]");
}

std::unique_ptr<KernelBenchContract> contract_for(const TempDir& tmp, const std::string& text) {
  write_file(tmp / "problem.py", text);
  KernelBenchSetup setup;
  setup.problem = tmp / "problem.py";
  setup.python = resolve_python(torch_python(), Settings{});
  setup.workdir = tmp.path();
  return KernelBenchContract::create(setup);
}

TEST(KernelBenchStructural, ALargeProblemClipsItsSymbolsUnderTheBudget) {
  TempDir tmp;
  const auto k = contract_for(tmp, big_rowsum());
  const Bindings nominal = k->nominal();
  EXPECT_GT(k->elements_at(nominal), kStructuralElements);
  const Bindings s = k->structural_shape();
  EXPECT_NE(s, nominal);
  EXPECT_LE(k->elements_at(s), kStructuralElements);
  EXPECT_TRUE(k->valid(s));
  for (const auto& [name, v] : s) EXPECT_LE(v, nominal.at(name)) << name;
  EXPECT_EQ(s.at("batch_size"), 512);  // the largest power of two that fits: 2·512·512 ≤ 2^20
  // The sanitizer's smaller budget: 2·128·128 ≤ 2^16 < 2·256·256.
  const Bindings san = k->shape_within(kSanitizerElements);
  EXPECT_EQ(san, (Bindings{{"batch_size", 128}, {"dim", 128}}));
  EXPECT_EQ(k->sanitizer_elements, kSanitizerElements);
}

TEST(KernelBenchStructural, SizesTheUniformClipCannotKeepAreHalvedOneAtATime) {
  // Session 9 on the H200: KernelBench's ShuffleNetUnit (channels divisible by 3) and two
  // ConvTranspose3d+LayerNorm problems (the normalized width fixed by a module-level tuple) were
  // still refused: no power of two keeps them valid. Here channels must stay a multiple of 3.
  TempDir tmp;
  const auto k = contract_for(tmp, problem_file("class Model(nn.Module):\n"
                                                "    def forward(self, x):\n"
                                                "        assert x.shape[1] % 3 == 0, 'channels must be a multiple of 3'\n"
                                                "        return x * 2.0\n",
                                                "batch_size = 1030\nchannels = 1026\n",
                                                "[torch.randn(batch_size, channels)]"));
  const Bindings nominal = k->nominal();
  for (int64_t p = 1; p <= 1024; p *= 2) EXPECT_FALSE(k->valid({{"batch_size", p}, {"channels", p}})) << p;
  // The largest size halved first, each step one the Model accepts: 1030 -> 515, then
  // 1026 -> 513, and 2·515·513 ≤ 2^20.
  const Bindings s = k->structural_shape();
  EXPECT_EQ(s, (Bindings{{"batch_size", 515}, {"channels", 513}}));
  EXPECT_TRUE(k->valid(s));
  EXPECT_LE(k->elements_at(s), kStructuralElements);
  // Smaller budgets halve on, skipping the halvings the Model rejects (513 -> 256 is no multiple
  // of 3), and stay valid.
  const Bindings san = k->shape_within(kSanitizerElements);
  EXPECT_TRUE(k->valid(san));
  EXPECT_LE(k->elements_at(san), kSanitizerElements);
  EXPECT_EQ(san.at("channels") % 3, 0);
  for (const auto& [name, v] : san) EXPECT_LE(v, nominal.at(name)) << name;
  // A Model that accepts no smaller size of either keeps its own: nothing to judge it at.
  TempDir fixed;
  const auto k_fixed = contract_for(fixed, problem_file("class Model(nn.Module):\n"
                                                        "    def forward(self, x):\n"
                                                        "        assert x.shape == (1030, 1026)\n"
                                                        "        return x * 2.0\n",
                                                        "batch_size = 1030\nchannels = 1026\n",
                                                        "[torch.randn(batch_size, channels)]"));
  EXPECT_EQ(k_fixed->structural_shape(), k_fixed->nominal());
}

TEST(KernelBenchStructural, TheSanitizerRunsWithinItsBudgetAndSaysSo) {
  TempDir tmp;
  const auto k = contract_for(tmp, big_rowsum());
  const Candidate cand = Candidate::kernelbench(tmp / "problem.py", tmp / "problem.py", resolve_python(torch_python(), Settings{}));
  for (const std::string backend : {"cpu", "cuda"}) {
    const GateContext ctx{*k, backend_named(backend), cand};
    const Gate* g = find_gate("sanitizer");
    ASSERT_NE(g, nullptr);
    const auto cases = g->cases(ctx, 7);
    ASSERT_EQ(cases.size(), backend == "cpu" ? 2u : 8u);  // (nominal within budget, all 13) per tool
    EXPECT_EQ(cases[0].shape, (Bindings{{"batch_size", 128}, {"dim", 128}}));
    EXPECT_EQ(cases[1].shape, (Bindings{{"batch_size", 13}, {"dim", 13}}));
    const std::string note = g->note(ctx);
    EXPECT_NE(note.find("ran at batch_size=128, dim=128, not the problem's own batch_size=1030, dim=1025"),
              std::string::npos) << note;
    EXPECT_EQ(note.find("cuDNN") != std::string::npos, backend == "cuda") << note;
  }
}

TEST(KernelBenchStructural, SmallProblemsAndProblemsWithoutSymbolsKeepTheirOwnSizes) {
  TempDir small, fixed;
  const auto k_small = contract_for(small, big_rowsum("batch_size = 4\ndim = 33\n"));
  EXPECT_EQ(k_small->structural_shape(), k_small->nominal());
  const auto k_fixed = contract_for(fixed, big_rowsum("", "torch.randn(1030, 1025)"));
  EXPECT_TRUE(k_fixed->symbols.empty());
  EXPECT_EQ(k_fixed->structural_shape(), k_fixed->nominal());
}

TEST(KernelBenchStructural, OutOfMemoryAtASizeIsTheMachinesNotASizeTheModelRejects) {
  // Session 49 on an H100 beside 5 other pairs: the problem's own Model, asked for its shapes at
  // its own sizes, ran out of GPU memory, and kcv said "internal error: ... rejects"; at a swept
  // size the same answer was cached as a rejection and the size left the sweep unflagged.
  TempDir tmp;
  const auto k = contract_for(tmp, problem_file("class Model(nn.Module):\n"
                                                "    def forward(self, x):\n"
                                                "        if x.shape[0] == 3:\n"
                                                "            raise ValueError('rows must not be 3')\n"
                                                "        if x.shape[0] == 7:\n"
                                                "            raise RuntimeError('CUDA out of memory. Tried to allocate 2.00 GiB')\n"
                                                "        return x * 2.0\n",
                                                "batch_size = 16\ndim = 8\n", "[torch.randn(batch_size, dim)]"));
  // A size the Model rejects stays a rejection, with the Model's reason.
  EXPECT_FALSE(k->valid({{"batch_size", 3}, {"dim", 8}}));
  EXPECT_NE(k->rejection({{"batch_size", 3}, {"dim", 8}}).find("rows must not be 3"), std::string::npos);
  // Out of memory is a setup error that says so, every time it is asked (never cached as a rejection).
  for (int again = 0; again < 2; ++again) {
    try {
      (void)k->valid({{"batch_size", 7}, {"dim", 8}});
      ADD_FAILURE() << "out of memory taken for a rejection";
    } catch (const SetupError& e) {
      const std::string what = e.what();
      EXPECT_NE(what.find("ran out of memory at batch_size=7"), std::string::npos) << what;
      EXPECT_TRUE(mentions_out_of_memory(what)) << what;  // a corpus run reruns it beside fewer
    }
  }
  EXPECT_TRUE(k->valid({{"batch_size", 5}, {"dim", 8}}));

  // Nor is a size whose inputs could not be made for want of memory taken for a size that is no
  // symbol (the sweep would leave it out): the problem's setup fails and says why.
  TempDir tmp2;
  const std::string oom_inputs =
      "import torch\nimport torch.nn as nn\n\n\nclass Model(nn.Module):\n    def forward(self, x):\n"
      "        return x * 2.0\n\n\nbatch_size = 16\ndim = 8\n\n\ndef get_inputs():\n"
      "    if batch_size == 17:\n"
      "        raise RuntimeError('CUDA out of memory. Tried to allocate 2.00 GiB')\n"
      "    return [torch.randn(batch_size, dim)]\n\n\ndef get_init_inputs():\n    return []\n";
  try {
    (void)contract_for(tmp2, oom_inputs);
    ADD_FAILURE() << "out of memory while finding the symbols was taken for a size that is no symbol";
  } catch (const SetupError& e) {
    EXPECT_TRUE(mentions_out_of_memory(e.what())) << e.what();
  }
}

TEST(KernelBenchStructural, TheClippedGatesSaySoAndStillCatchAStridedRead) {
  TempDir tmp;
  write_file(tmp / "problem.py", big_rowsum());
  const std::string report = tmp / "r.json";
  const CliResult r = run_kcv({"verify", "--kernelbench", tmp / "problem.py", kRowsum + "/solution_assumes_contiguous.py",
                               "--gates", "numerics,layout", "--json", report}, "", tmp.path());
  EXPECT_EQ(r.rc, 1) << r.out << r.err;
  const nlohmann::json j = nlohmann::json::parse(read_text(report));
  for (const auto& g : j["gates"]) {
    const std::string ev = g["evidence"].get<std::string>();
    if (g["id"] == "layout") {
      EXPECT_EQ(g["verdict"], "FAIL");
      EXPECT_NE(ev.find("ran at batch_size=512, dim=512, not the problem's own batch_size=1030, dim=1025"),
                std::string::npos) << ev;
    }
    if (g["id"] == "numerics") {
      EXPECT_EQ(g["verdict"], "PASS");
      EXPECT_EQ(ev.find("ran at"), std::string::npos) << ev;
    }
  }
}

/// rowsum over 2·4100·4097 > 2^24 elements: the sweep's base is clipped to 2048 (2·2048·2048 ≤ 2^24).
std::string sweep_sized_rowsum() { return big_rowsum("batch_size = 4100\ndim = 4097\n"); }

TEST(KernelBenchStructural, ALargeProblemSweepsEachSymbolWithTheOthersWithinTheSweepBudget) {
  TempDir tmp;
  const auto k = contract_for(tmp, sweep_sized_rowsum());
  EXPECT_EQ(k->sweep_elements, kSweepElements);
  EXPECT_GT(k->elements_at(k->nominal()), kSweepElements);
  const Candidate cand = Candidate::kernelbench(tmp / "problem.py", tmp / "problem.py", resolve_python(torch_python(), Settings{}));
  const GateContext ctx{*k, backend_named("cpu"), cand};
  const Gate* g = find_gate("shapes");
  ASSERT_NE(g, nullptr);
  std::vector<Bindings> shapes;
  for (const CasePlan& p : g->plan(ctx, 7)) shapes.push_back(p.make().shape);
  // Each symbol's sweep (1, 3, 13, 127 and both neighbours of its own size) holds the other at 2048.
  for (int64_t v : {1, 3, 13, 127, 4099, 4101})
    EXPECT_NE(std::find(shapes.begin(), shapes.end(), Bindings{{"batch_size", v}, {"dim", 2048}}), shapes.end()) << v;
  for (int64_t v : {1, 3, 13, 127, 4096, 4098})
    EXPECT_NE(std::find(shapes.begin(), shapes.end(), Bindings{{"batch_size", 2048}, {"dim", v}}), shapes.end()) << v;
  for (const Bindings& b : shapes) EXPECT_FALSE(b.at("batch_size") > 2048 && b.at("dim") > 2048) << bindings_string(b);
  EXPECT_NE(g->note(ctx).find("each symbol swept with the others at batch_size=2048, dim=2048, not the problem's own "
                              "batch_size=4100, dim=4097"), std::string::npos) << g->note(ctx);
}

TEST(KernelBenchStructural, ASmallProblemSweepsEachSymbolWithTheOthersAtTheirOwnSizes) {
  TempDir tmp;
  const auto k = contract_for(tmp, big_rowsum("batch_size = 4\ndim = 33\n"));
  const Candidate cand = Candidate::kernelbench(tmp / "problem.py", tmp / "problem.py", resolve_python(torch_python(), Settings{}));
  const GateContext ctx{*k, backend_named("cpu"), cand};
  const Gate* g = find_gate("shapes");
  std::vector<Bindings> shapes;
  for (const CasePlan& p : g->plan(ctx, 7)) shapes.push_back(p.make().shape);
  EXPECT_NE(std::find(shapes.begin(), shapes.end(), Bindings{{"batch_size", 4}, {"dim", 34}}), shapes.end());
  EXPECT_NE(std::find(shapes.begin(), shapes.end(), Bindings{{"batch_size", 5}, {"dim", 33}}), shapes.end());
  EXPECT_EQ(g->note(ctx).find("swept with the others"), std::string::npos) << g->note(ctx);
}

TEST(KernelBenchStructural, TheSweepWithinItsBudgetStillCatchesATailDroppedOnlyAtLargeSizes) {
  // The solution drops the last dim % 32 columns once dim > 1024: only a case with dim a
  // neighbour of its own 4097 sees it, and the sweep holds batch_size at 2048 there.
  TempDir tmp;
  write_file(tmp / "problem.py", sweep_sized_rowsum());
  write_file(tmp / "solution.py",
             "import torch\nimport torch.nn as nn\n\n\nclass ModelNew(nn.Module):\n"
             "    def forward(self, x):\n"
             "        n = x.shape[1] if x.shape[1] <= 1024 else x.shape[1] // 32 * 32\n"
             "        return torch.relu(x) * 2.0 + x[:, :n].sum(dim=1, keepdim=True)\n");
  const std::string report = tmp / "r.json";
  const CliResult r = run_kcv({"verify", "--kernelbench", tmp / "problem.py", tmp / "solution.py", "--gates", "shapes",
                               "--json", report}, "", tmp.path());
  EXPECT_EQ(r.rc, 1) << r.out << r.err;
  const nlohmann::json j = nlohmann::json::parse(read_text(report));
  for (const auto& g : j["gates"]) {
    if (g["id"] != "shapes") continue;
    EXPECT_EQ(g["verdict"], "FAIL");
    const std::string ev = g["evidence"].get<std::string>();
    EXPECT_NE(ev.find("batch_size=2048, dim=4098"), std::string::npos) << ev;
  }
}

}  // namespace
}  // namespace kcv::corpus_test
