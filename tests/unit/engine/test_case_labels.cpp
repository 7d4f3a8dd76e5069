// summarize_cases (issue 21 item 5): the labels of every failing case, compactly, so that a
// pattern bug reads as its pattern.
#include <gtest/gtest.h>

#include "kcv/gate_run.hpp"

namespace kcv {
namespace {

TEST(CaseLabels, ShapeSweepsReadAsTheSymbolAndItsSizes) {
  // A tail bug in N: N not divisible by 4 fails, every other shape passes.
  std::vector<std::string> failing, passing;
  for (int n : {1, 3, 7, 13, 127, 1021}) failing.push_back("K=128, M=128, N=" + std::to_string(n));
  for (int n : {2, 4, 8, 64, 1024}) passing.push_back("K=128, M=128, N=" + std::to_string(n));
  for (int m : {1, 3, 7}) passing.push_back("K=128, M=" + std::to_string(m) + ", N=128");
  failing.push_back("K=7, M=7, N=7");
  passing.push_back("K=128, M=128, N=128");
  const std::string s = summarize_cases(failing, passing);
  EXPECT_EQ(s, "N ∈ {1, 3, 7, 13, 127, 1021}, passes {2, 4, 8, 64, 1024}; K=M=N=7") << s;
}

TEST(CaseLabels, EverySizeOfASymbolFailing) {
  const std::string s = summarize_cases({"M=1, N=4 [null stream]", "M=3, N=4"}, {"M=4, N=1", "M=4, N=4"});
  EXPECT_EQ(s, "M ∈ {1, 3} (every M swept)") << s;
}

TEST(CaseLabels, AOneSymbolSweepHasNoBaseShape) {
  // add's shapes gate: every case a different N, none of them the nominal one.
  const std::string s = summarize_cases({"N=1", "N=3", "N=7"}, {"N=2", "N=4"});
  EXPECT_EQ(s, "N ∈ {1, 3, 7}, passes {2, 4}") << s;
  EXPECT_EQ(summarize_cases({"N=8", "N=8"}, {}), "the base shape");
}

TEST(CaseLabels, InjectionsGroupedByWhat) {
  const std::string s = summarize_cases({"NaN in 'q' at [0,0,0,0]", "NaN in 'q' at [0,64,0,0]", "+Inf in 'v' at [1,3]"}, {});
  EXPECT_EQ(s, "NaN in 'q' at {[0,0,0,0], [0,64,0,0]}; +Inf in 'v' at [1,3]") << s;
}

TEST(CaseLabels, OtherLabelsListedAndTheWholeCappedAtABoundary) {
  EXPECT_EQ(summarize_cases({"5 runs", "2 thread(s)"}, {"1 thread(s)"}), "5 runs; 2 thread(s)");
  EXPECT_EQ(summarize_cases({}, {"a"}), "");
  std::vector<std::string> many;
  for (int i = 0; i < 100; ++i) many.push_back("case number " + std::to_string(i));
  const std::string s = summarize_cases(many, {}, 80);
  EXPECT_LE(s.size(), 85u);  // the budget, then "; …" (5 bytes)
  EXPECT_EQ(s.substr(s.size() - 5), "; …") << s;
  EXPECT_EQ(s.substr(0, 14), "case number 0;") << s;
}

}  // namespace
}  // namespace kcv
