// The corpus timing summary and the timing statistics (docs/timing.md): fast_p as KernelBench
// defines it (share of ALL pairs correct and faster than p), "correct" = every one of 12 gates
// passed; order statistics as numpy's default interpolation.
#include <gtest/gtest.h>

#include <cmath>

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "kcv/corpus.hpp"
#include "kcv/kernelbench.hpp"

namespace {

using nlohmann::json;

json report(bool all_pass, json timing, int skipped = 0) {
  json gates = json::array();
  for (int i = 0; i < 12; ++i) gates.push_back({{"id", "g" + std::to_string(i)}, {"verdict", i < skipped ? "SKIPPED" : all_pass ? "PASS" : i == 5 ? "FAIL" : "PASS"}});
  json r = {{"schema", "kcv.report/1"}, {"verdict", all_pass ? "PASS" : "FAIL"}, {"gates", gates}};
  if (!timing.is_null()) r["timing"] = timing;
  return r;
}

json result(const std::string& key, json rep) {
  return {{"kind", "result"}, {"key", key}, {"status", "verified"}, {"report", std::move(rep)}};
}

json timed(double speedup, json compiled = nullptr) {
  return {{"timed", true}, {"speedup", speedup}, {"speedup_vs_compiled", compiled}};
}

TEST(CorpusTiming, FastPCountsOnlyPairsPassingAll12GatesOverAllPairs) {
  std::vector<json> records = {
      {{"kind", "run"}},
      result("a", report(true, timed(2.5, 1.2))),
      result("b", report(true, timed(0.9))),
      result("c", report(false, {{"timed", false}, {"reason", "not timed"}})),  // fails a gate
      result("d", report(true, timed(3.0), /*skipped=*/1)),                    // a gate not run: not correct
      result("a", report(true, timed(0.1))),                                   // a key's first result counts
      {{"kind", "result"}, {"key", "e"}, {"status", "setup_error"}},           // no report: in the denominator
      result("f", report(true, {{"timed", false}, {"reason", "the candidate timing worker crashed"}})),
  };
  const json s = kcv::corpus_timing_summary(records);
  ASSERT_TRUE(s.is_object());
  EXPECT_EQ(s["pairs"], 6);
  EXPECT_EQ(s["correct"], 3);  // a, b, f
  EXPECT_EQ(s["timed"], 2);
  EXPECT_EQ(s["correct_not_timed"], 1);
  EXPECT_DOUBLE_EQ(s["fast_p"]["fast_0"].get<double>(), 2.0 / 6);
  EXPECT_DOUBLE_EQ(s["fast_p"]["fast_1"].get<double>(), 1.0 / 6);
  EXPECT_DOUBLE_EQ(s["fast_p"]["fast_2"].get<double>(), 1.0 / 6);
  EXPECT_DOUBLE_EQ(s["fast_p"]["fast_0.8"].get<double>(), 2.0 / 6);
  EXPECT_NEAR(s["speedup"]["geomean"].get<double>(), std::sqrt(2.5 * 0.9), 1e-12);
  EXPECT_DOUBLE_EQ(s["speedup"]["median"].get<double>(), (2.5 + 0.9) / 2);
  EXPECT_EQ(s["vs_compiled"]["timed"], 1);
  EXPECT_EQ(s["vs_compiled"]["not_compiled"], 1);
  EXPECT_DOUBLE_EQ(s["vs_compiled"]["fast_p"]["fast_1"].get<double>(), 1.0 / 6);
}

TEST(CorpusTiming, NullWhenNoPairWasAskedToBeTimed) {
  EXPECT_TRUE(kcv::corpus_timing_summary({result("a", report(true, nullptr))}).is_null());
}

TEST(TimingStats, OrderStatisticsInterpolateAsNumpy) {
  std::vector<double> v;
  for (int i = 20; i >= 1; --i) v.push_back(i);  // 1..20, unsorted
  const json s = kcv::timing_stats(v);
  EXPECT_EQ(s["reps"], 20);
  EXPECT_DOUBLE_EQ(s["min_ms"].get<double>(), 1);
  EXPECT_DOUBLE_EQ(s["max_ms"].get<double>(), 20);
  EXPECT_DOUBLE_EQ(s["median_ms"].get<double>(), 10.5);
  EXPECT_DOUBLE_EQ(s["p10_ms"].get<double>(), 2.9);   // numpy.percentile(range(1, 21), 10)
  EXPECT_DOUBLE_EQ(s["p90_ms"].get<double>(), 18.1);
  EXPECT_DOUBLE_EQ(s["mean_ms"].get<double>(), 10.5);
}

}  // namespace
