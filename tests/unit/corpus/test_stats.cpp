// McNemar's exact test against exact rationals, and the corpus counts on a hand-counted journal.
#include <gtest/gtest.h>

#include <cmath>

#include "kcv/corpus.hpp"
#include "kcv/corpus_report.hpp"
#include "kcv/stats.hpp"
#include "report_fixture.hpp"

namespace kcv::testing {
namespace {

// p values below are exact rationals: 2·Σ_{i≤k} C(n,i) / 2^n, summed by hand (or by Python's
// integers for the large cases) and reduced.
void expect_p(int64_t b, int64_t c, double expected, double rel = 1e-12) {
  const McNemar m = mcnemar_exact(b, c);
  EXPECT_EQ(m.b, b);
  EXPECT_EQ(m.c, c);
  EXPECT_EQ(m.n, b + c);
  EXPECT_NEAR(m.p, expected, expected * rel) << "b=" << b << " c=" << c;
}

TEST(McNemarExact, SmallTablesMatchExactRationals) {
  expect_p(0, 5, 0.0625);                     // 2·1/32
  expect_p(1, 9, 0.021484375);                // 2·11/1024 = 11/512
  expect_p(2, 8, 0.109375);                   // 2·(1+10+45)/1024 = 7/64
  expect_p(3, 12, 0.03515625);                // 2·576/32768 = 9/256
  expect_p(12, 3, 0.03515625);                // symmetric in b and c
  expect_p(5, 20, 34203.0 / 8388608.0);       // 2·68406/2^25
  expect_p(7, 30, 820667.0 / 4294967296.0);   // 2·(Σ_{i≤7} C(37,i))/2^37
}

TEST(McNemarExact, NoDiscordanceOrBalancedIsOne) {
  EXPECT_EQ(mcnemar_exact(0, 0).p, 1.0);
  EXPECT_EQ(mcnemar_exact(0, 0).n, 0);
  EXPECT_EQ(mcnemar_exact(10, 10).p, 1.0);
  EXPECT_EQ(mcnemar_exact(0, 1).p, 1.0);      // 2·1/2 = 1
  EXPECT_EQ(mcnemar_exact(1, 2).p, 1.0);      // 2·4/8 = 1
  EXPECT_EQ(mcnemar_exact(50000, 50000).p, 1.0);
  EXPECT_EQ(mcnemar_exact(49999, 50000).p, 1.0);   // n odd: the tail is exactly half
  EXPECT_EQ(mcnemar_exact(1000000, 1000001).p, 1.0);
}

TEST(McNemarExact, LargeNIsRight) {
  // Exact by Python integers: n = 10^5.
  expect_p(49800, 50200, 0.20703897176422484, 1e-8);
  expect_p(49000, 51000, 2.588716038346898e-10, 1e-8);
  expect_p(49999, 50001, 0.9974768737858033, 1e-8);  // 1 - C(n, n/2)/2^n, just below 1
}

TEST(McNemarExact, TinyPUnderflowsGracefully) {
  const double p1074 = mcnemar_exact(0, 1074).p;  // 2^-1073: a subnormal
  EXPECT_GT(p1074, 0.0);
  EXPECT_LT(p1074, 1e-320);
  for (auto [b, c] : {std::pair<int64_t, int64_t>{0, 100000}, {40000, 60000}, {3, 5000000}}) {
    const double p = mcnemar_exact(b, c).p;
    EXPECT_TRUE(std::isfinite(p));
    EXPECT_GE(p, 0.0);
    EXPECT_LT(p, 1e-300);
  }
  EXPECT_THROW(mcnemar_exact(-1, 3), std::invalid_argument);
}

TEST(CorpusSummary, CountsTheSyntheticJournal) {
  const CorpusSummary s = summarize_corpus(synthetic_journal());
  EXPECT_EQ(s.runs.size(), 1u);
  EXPECT_EQ(s.results, 8);
  EXPECT_EQ(s.duplicates, 1);
  EXPECT_EQ(s.other_records, 1);
  EXPECT_EQ(s.verified, 6);
  EXPECT_EQ(s.setup_error, 1);
  EXPECT_EQ(s.timeout, 1);
  EXPECT_EQ(s.verifier_crash, 0);
  EXPECT_EQ(s.reports, 6);

  EXPECT_EQ(s.strict_pass, 2);  // a, d
  EXPECT_EQ(s.strict_fail, 6);
  EXPECT_TRUE(s.baseline_in_use);
  EXPECT_EQ(s.baseline_pass, 3);     // a, b, c
  EXPECT_EQ(s.baseline_fail, 4);     // d, e, f, h
  EXPECT_EQ(s.baseline_error, 1);    // h
  EXPECT_EQ(s.baseline_missing, 1);  // g

  EXPECT_EQ(s.accepted, 3);
  EXPECT_EQ(s.accepted_fail_any, 2);                     // b, c
  EXPECT_EQ(s.accepted_fail_tolerance_independent, 1);  // c

  EXPECT_EQ(s.both_pass, 1);                  // a
  EXPECT_EQ(s.baseline_pass_strict_fail, 2);  // b, c
  EXPECT_EQ(s.baseline_fail_strict_pass, 1);  // d
  EXPECT_EQ(s.both_fail, 3);                  // e, f, h
  EXPECT_EQ(s.mcnemar.b, 2);
  EXPECT_EQ(s.mcnemar.c, 1);
  EXPECT_EQ(s.mcnemar.p, 1.0);  // 2·(1+3)/8

  ASSERT_EQ(s.gates.size(), 12u);
  auto gate = [&](const std::string& id) -> const GateSummary& {
    for (const auto& g : s.gates)
      if (g.id == id) return g;
    ADD_FAILURE() << "no gate " << id;
    return s.gates[0];
  };
  EXPECT_EQ(s.gates[0].id, "numerics");
  EXPECT_EQ(s.gates[11].id, "sanitizer");
  EXPECT_EQ(gate("numerics").counts.pass, 5);
  EXPECT_EQ(gate("numerics").counts.fail, 1);
  EXPECT_FALSE(gate("numerics").tolerance_independent);
  EXPECT_EQ(gate("values").counts.skipped, 1);
  EXPECT_EQ(gate("values").counts.failures(), 0);
  EXPECT_EQ(gate("concurrency").counts.fail, 1);
  EXPECT_TRUE(gate("concurrency").tolerance_independent);
  EXPECT_EQ(gate("sanitizer").counts.crash, 1);
  EXPECT_EQ(gate("layout").counts.refused, 1);
  EXPECT_EQ(gate("determinism").counts.timeout, 1);
  EXPECT_EQ(gate("shapes").counts.pass, 6);
  EXPECT_EQ(gate("shapes").counts.failures(), 0);

  ASSERT_EQ(s.kernels.size(), 8u);
  const KernelRow& a = s.kernels[0];
  EXPECT_EQ(a.key, "a/solution_ok.py");
  EXPECT_TRUE(a.strict_pass);  // the first record of the key, not the repeat
  EXPECT_EQ(a.baseline, "pass");
  EXPECT_DOUBLE_EQ(a.gate_seconds, 12 * 0.25);
  EXPECT_DOUBLE_EQ(a.compile_seconds.value_or(-1), 1.5);
  EXPECT_DOUBLE_EQ(a.wall_seconds, 3.0);
  EXPECT_DOUBLE_EQ(a.worst_error.value_or(-1), 1e-6);
  const KernelRow& c = s.kernels[2];
  EXPECT_EQ(c.first_failing_gate, "concurrency (fail)");
  EXPECT_EQ(c.evidence, "stream race at index 3");
  EXPECT_EQ(c.failing_gates, 2);
  EXPECT_TRUE(c.fails_tolerance_independent);
  const KernelRow& e = s.kernels[4];
  EXPECT_EQ(e.first_failing_gate, "setup_error");
  EXPECT_EQ(e.evidence, "nvcc: error: expected ';'");
  EXPECT_EQ(e.baseline, "fail");
  EXPECT_FALSE(e.compile_seconds.has_value());
  EXPECT_EQ(s.kernels[6].baseline, "missing");
}

// Issue 21 item 4: the split of each failing kernel, and the kernels that fail one gate alone.
TEST(CorpusSummary, SplitsOwnConventionLibraryOnlyAndCrashes) {
  std::map<std::string, std::string> all_crash, all_timeout;
  for (const char* id : corpus_gate_ids()) all_crash[id] = "crash", all_timeout[id] = "timeout";
  all_timeout["sanitizer"] = "skipped";  // not run: still every gate that ran
  std::map<std::string, std::string> almost = all_crash;
  almost["bounds"] = "pass";             // one gate passed: not a crash in every gate
  std::map<std::string, std::string> asan = all_crash;
  asan["sanitizer"] = "fail";            // its tool reports the crash: still a crash everywhere
  std::map<std::string, std::string> asan_pass = all_crash;
  asan_pass["sanitizer"] = "pass";       // the instrumented build runs: not a crash everywhere
  const std::vector<nlohmann::json> journal = {
      run_record("kernelbench"),
      result("own", "verified", make_report({{"numerics", "fail"}}, "pass", std::nullopt, {}, {{"numerics", "own"}})),
      result("mixed", "verified",
             make_report({{"layout", "fail"}, {"concurrency", "fail"}}, "pass", std::nullopt, {},
                         {{"layout", "library"}, {"concurrency", "own"}})),
      result("lib", "verified",
             make_report({{"layout", "fail"}, {"concurrency", "fail"}}, "pass", std::nullopt, {},
                         {{"layout", "library"}, {"concurrency", "library"}})),
      result("lib-alone", "verified", make_report({{"concurrency", "fail"}}, "fail", std::nullopt, {}, {{"concurrency", "library"}})),
      result("crash", "verified", make_report(all_crash, "pass")),
      result("hang", "verified", make_report(all_timeout, "pass")),
      result("almost", "verified", make_report(almost, "pass", std::nullopt, {}, {{"numerics", "library"}})),
      result("old", "verified", make_report({{"values", "fail"}}, "pass")),  // a report before the split
      result("asan", "verified", make_report(asan, "fail", std::nullopt, {}, {{"sanitizer", "own"}})),
      result("asan-pass", "verified", make_report(asan_pass, "fail", std::nullopt, {}, {{"numerics", "own"}})),
      result("ok", "verified", make_report({}, "pass")),
      result("nobuild", "setup_error", nullptr, "does not build"),
  };
  const CorpusSummary s = summarize_corpus(journal);
  std::map<std::string, std::string> split;
  for (const auto& k : s.kernels) split[k.key] = k.split;
  EXPECT_EQ(split["own"], "own");
  EXPECT_EQ(split["mixed"], "own");
  EXPECT_EQ(split["lib"], "library");
  EXPECT_EQ(split["lib-alone"], "library");
  EXPECT_EQ(split["crash"], "crash");
  EXPECT_EQ(split["hang"], "crash");
  EXPECT_EQ(split["almost"], "unknown");  // 11 crashed gates whose reports do not say, one that says library
  EXPECT_EQ(split["old"], "unknown");
  EXPECT_EQ(split["asan"], "crash");
  EXPECT_EQ(split["asan-pass"], "own");
  EXPECT_EQ(split["ok"], "");
  EXPECT_EQ(split["nobuild"], "");
  EXPECT_EQ(s.split.own, 3);
  EXPECT_EQ(s.split.library, 2);
  EXPECT_EQ(s.split.crash, 3);
  EXPECT_EQ(s.split.unknown, 2);
  // Accepted (baseline pass) and failing: all but lib-alone (baseline fail), ok and nobuild.
  EXPECT_EQ(s.accepted_fail_any, 7);
  EXPECT_EQ(s.accepted_split.own, 2);
  EXPECT_EQ(s.accepted_split.library, 1);
  EXPECT_EQ(s.accepted_split.crash, 2);
  EXPECT_EQ(s.accepted_split.unknown, 2);
  auto gate = [&](const std::string& id) -> const GateSummary& {
    for (const auto& g : s.gates)
      if (g.id == id) return g;
    throw std::runtime_error("no gate " + id);
  };
  EXPECT_EQ(gate("numerics").only_this_gate, 1);     // own
  EXPECT_EQ(gate("concurrency").only_this_gate, 1);  // lib-alone
  EXPECT_EQ(gate("values").only_this_gate, 1);       // old
  EXPECT_EQ(gate("layout").only_this_gate, 0);
  EXPECT_EQ(gate("concurrency").own_convention, 1);  // mixed
  EXPECT_EQ(gate("concurrency").library_only, 2);    // lib, lib-alone
  EXPECT_EQ(gate("layout").library_only, 2);
  EXPECT_EQ(gate("numerics").own_convention, 2);     // own, asan-pass
  EXPECT_EQ(gate("numerics").library_only, 1);       // almost's
  EXPECT_EQ(verdict_split(nlohmann::json("not a report")), "unknown");
}

TEST(CorpusSummary, TheRunSummaryCountsAsTheReportDoes) {
  // The same journal: the first result of key a (a pass) counts in both, not its repeat.
  const CorpusRunSummary r = summarize_results(synthetic_journal());
  const CorpusSummary s = summarize_corpus(synthetic_journal());
  EXPECT_EQ(r.pairs, 8);
  EXPECT_EQ(r.verified_pass, 2);  // a, d
  EXPECT_EQ(r.verified_fail, 4);  // b, c, g, h
  EXPECT_EQ(r.setup_errors, 1);
  EXPECT_EQ(r.timeouts, 1);
  EXPECT_EQ(r.crashes, 0);
  EXPECT_EQ(r.verified_pass + r.verified_fail, s.verified);
  ASSERT_EQ(r.gates.size(), 12u);
  EXPECT_EQ(r.gates[0].gate, "numerics");
  EXPECT_EQ(r.gates[0].not_passed, 1);  // b only: a's repeat fails numerics but does not count
  EXPECT_EQ(r.gates[0].by_verdict.at("FAIL"), 1);
  const auto& sanitizer = r.gates[11];
  EXPECT_EQ(sanitizer.gate, "sanitizer");
  EXPECT_EQ(sanitizer.by_verdict.at("CRASH"), 1);
  const auto& values = r.gates[2];
  EXPECT_EQ(values.not_passed, 0);
  EXPECT_EQ(values.by_verdict.at("SKIPPED"), 1);

  EXPECT_EQ(r.clipped_sizes, 0);
  auto journal = synthetic_journal();
  journal[1]["report"]["kernelbench"]["reduced_sizes"] = "judged at n=8, not the problem's own n=9: ...";
  EXPECT_EQ(summarize_results(journal).clipped_sizes, 1);
  EXPECT_EQ(summarize_corpus(journal).reduced_sizes, 1);

  // Pairs whose derived bound left elements to the calibrated floor are counted and named; one it
  // judged whole, or a calibrated run (not derived), is not.
  EXPECT_EQ(r.bound_calibrated, 0);
  journal[1]["report"]["kernelbench"]["bound"] = {
      {"mode", "derived"},
      {"outputs", {{{"output", "o0"}, {"derived", 90}, {"calibrated", 10}, {"free", 0}}}},
      {"unruled", {"aten.foo.default"}}};
  journal[2]["report"]["kernelbench"]["bound"] = {{"mode", "derived"},
                                                  {"outputs", {{{"output", "o0"}, {"derived", 100}, {"calibrated", 0}}}},
                                                  {"unruled", nlohmann::json::array()}};
  journal[3]["report"]["kernelbench"]["bound"] = {{"mode", "calibrated"}};
  EXPECT_EQ(summarize_results(journal).bound_calibrated, 1);
  const CorpusSummary c = summarize_corpus(journal);
  EXPECT_EQ(c.bound_calibrated, 1);
  int named = 0;
  for (const KernelRow& k : c.kernels)
    if (!k.bound_calibrated.empty()) {
      ++named;
      EXPECT_NE(k.bound_calibrated.find("10 elements judged by the calibrated floor"), std::string::npos)
          << k.bound_calibrated;
      EXPECT_NE(k.bound_calibrated.find("aten.foo.default"), std::string::npos) << k.bound_calibrated;
    }
  EXPECT_EQ(named, 1);
  EXPECT_EQ(corpus_summary_json(c).value("bound_calibrated", -1), 1);
  // Free elements likewise, and a pair with every element free says so.
  EXPECT_EQ(c.bound_free, 0);
  journal[2]["report"]["kernelbench"]["bound"]["outputs"] = {
      {{"output", "o0"}, {"elements", 100}, {"derived", 0}, {"calibrated", 0}, {"free", 100}}};
  const CorpusSummary f = summarize_corpus(journal);
  EXPECT_EQ(f.bound_free, 1);
  EXPECT_EQ(summarize_results(journal).bound_free, 1);
  for (const KernelRow& k : f.kernels)
    if (!k.bound_free.empty())
      EXPECT_NE(k.bound_free.find("100 of 100 elements free in class (any value accepted there): every element"),
                std::string::npos) << k.bound_free;
  EXPECT_EQ(corpus_summary_json(f).value("bound_free", -1), 1);

  // Only the keys asked for.
  const CorpusRunSummary some = summarize_results(synthetic_journal(), {"e/solution_build.py", "z/missing.py"});
  EXPECT_EQ(some.pairs, 2);
  EXPECT_EQ(some.setup_errors, 1);
  EXPECT_EQ(some.verified_pass + some.verified_fail, 0);
  EXPECT_TRUE(some.gates.empty());
}

TEST(CorpusSummary, WithoutBaselineNothingCountsAgainstIt) {
  const std::vector<nlohmann::json> journal = {
      run_record(""),
      result("a.py", "verified", make_report({}, std::nullopt)),
      result("b.py", "setup_error", nullptr, "does not build"),
      result("c.py", "verifier_crash", nullptr, "signal 11"),
  };
  const CorpusSummary s = summarize_corpus(journal);
  EXPECT_FALSE(s.baseline_in_use);
  EXPECT_EQ(s.verifier_crash, 1);
  EXPECT_EQ(s.strict_pass, 1);
  EXPECT_EQ(s.strict_fail, 2);
  EXPECT_EQ(s.baseline_missing, 3);
  EXPECT_EQ(s.baseline_fail, 0);
  EXPECT_EQ(s.accepted, 0);
  EXPECT_EQ(s.mcnemar.n, 0);
  EXPECT_EQ(s.mcnemar.p, 1.0);
}

TEST(CorpusSummary, ToleranceIndependenceIsReadFromTheReport) {
  nlohmann::json lying = make_report({{"concurrency", "fail"}}, "pass");
  lying["gates"][10]["tolerance_independent"] = false;  // the report's word, not the gate's index
  const std::vector<nlohmann::json> journal = {
      result("nonfinite.py", "verified", make_report({{"nonfinite", "fail"}}, "pass")),  // gate 4: independent
      result("values.py", "verified", make_report({{"values", "crash"}}, "pass")),       // gate 3: not
      result("lying.py", "verified", lying),
  };
  const CorpusSummary s = summarize_corpus(journal);
  EXPECT_EQ(s.accepted, 3);
  EXPECT_EQ(s.accepted_fail_any, 3);
  EXPECT_EQ(s.accepted_fail_tolerance_independent, 1);
  EXPECT_TRUE(s.gates[3].tolerance_independent);
  EXPECT_FALSE(s.gates[2].tolerance_independent);
}

TEST(CorpusSummary, MalformedFieldsReadAsAbsent) {
  const std::vector<nlohmann::json> journal = {
      {{"kind", "result"}, {"key", "x.py"}, {"status", 3}, {"report", {{"verdict", "pass"}, {"gates", "nope"}}}},
      {{"kind", "result"}, {"key", "y.py"}, {"status", "verified"},
       {"report", {{"verdict", "fail"}, {"gates", {{{"id", "numerics"}, {"verdict", "fail"}, {"worst", nullptr}}}}}}},
  };
  const CorpusSummary s = summarize_corpus(journal);
  EXPECT_EQ(s.results, 2);
  EXPECT_EQ(s.other_status, 1);
  EXPECT_EQ(s.strict_pass, 1);
  EXPECT_EQ(s.gates[0].counts.fail, 1);
  EXPECT_FALSE(s.kernels[1].worst_error.has_value());
}

}  // namespace
}  // namespace kcv::testing
