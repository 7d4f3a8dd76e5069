// Large KernelBench problems (docs/kernelbench.md, "Large problems"): the size-independent gates
// run at a clipped shape under kStructuralElements, say so, and still catch what they catch;
// numerics, shapes and values keep the problem's own sizes. Real torch, cpu backend.
#include <gtest/gtest.h>

#include "corpus_test_support.hpp"
#include "kcv/candidate.hpp"
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
  setup.python = resolve_python("");
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

TEST(KernelBenchStructural, TheSanitizerRunsWithinItsBudgetAndSaysSo) {
  TempDir tmp;
  const auto k = contract_for(tmp, big_rowsum());
  const Candidate cand = Candidate::kernelbench(tmp / "problem.py", tmp / "problem.py", resolve_python(""));
  for (const std::string backend : {"cpu", "cuda"}) {
    const GateContext ctx{*k, backend, cand};
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

}  // namespace
}  // namespace kcv::corpus_test
