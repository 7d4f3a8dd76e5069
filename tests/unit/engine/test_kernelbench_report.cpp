// The report's KernelBench section as a type (kcv/kernelbench_door.hpp, issue 23): the JSON of
// kcv.report/1 unchanged through it, and the lines kcv verify prints of it.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "kcv/engine.hpp"
#include "kcv/kernelbench_door.hpp"
#include "kcv/report.hpp"

namespace kcv {
namespace {

// A section as a verification with --baseline kernelbench, a reference cache, a build cache and a
// session pool writes it (the keys of every part the door fills).
nlohmann::json full_section() {
  return nlohmann::json::parse(R"({
    "problem": "/p/problem.py", "solution": "/p/solution.py", "python": "/usr/bin/python3",
    "compile_seconds": 1.25, "fresh_model": true, "reduced_sizes": "batch_size 4096 -> 1024",
    "baseline": {"verdict": "fail", "detail": "trial 2: output 0 element 7: got 1, Model gives 2",
                 "trials": 5, "atol": 0.01, "rtol": 0.01, "max_abs_diff": 0.5},
    "bound": {"mode": "derived", "references": 41,
              "outputs": [{"output": "out0", "judged_by": "mixed", "elements": 100, "derived": 90,
                           "calibrated": 6, "free": 4, "eager_over": 1}],
              "unruled": ["aten::foo"]},
    "standby_workers": {"started": 2, "used": 1, "not_used": ["sanitizer"]},
    "pool": {"offered": 3, "taken": 3, "used": 2, "main_started_s_before": 0.5},
    "reference_cache": {"dir": "/c", "read": 3, "written": 1, "rejected": 0},
    "build_cache": {"variants": {"plain": {"key": "ab", "entry": "hit"}}, "dir": "/b"}})");
}

TEST(KernelBenchReport, EveryFieldGoesThroughTheTypeUnchanged) {
  const nlohmann::json j = full_section();
  const KernelBenchReport r = j.get<KernelBenchReport>();
  EXPECT_EQ(r.solution, "/p/solution.py");
  EXPECT_DOUBLE_EQ(r.compile_seconds, 1.25);
  ASSERT_TRUE(r.baseline);
  EXPECT_EQ(r.baseline->verdict, "fail");
  EXPECT_DOUBLE_EQ(r.baseline->max_abs_diff, 0.5);
  ASSERT_TRUE(r.bound);
  ASSERT_EQ(r.bound->outputs.size(), 1u);
  EXPECT_EQ(r.bound->outputs[0].calibrated, 6);
  EXPECT_EQ(nlohmann::json(r), j) << nlohmann::json(r).dump(1);
}

TEST(KernelBenchReport, AbsentPartsStayAbsent) {
  // A verification without baseline, caches, pool or reduced sizes; a calibrated bound.
  const nlohmann::json j = {{"problem", "p.py"}, {"solution", "s.py"}, {"python", "py"}, {"compile_seconds", 0.0},
                            {"fresh_model", false},
                            {"bound", {{"mode", "calibrated"}, {"detail", "calibrated on fp32 eager's error"}}},
                            {"standby_workers", {{"started", 0}, {"used", 0}}}};
  const KernelBenchReport r = j.get<KernelBenchReport>();
  EXPECT_FALSE(r.baseline);
  EXPECT_TRUE(r.pool.is_null());
  EXPECT_EQ(nlohmann::json(r), j) << nlohmann::json(r).dump(1);
}

TEST(KernelBenchReport, AReportReadBackHasTheSection) {
  Report rep;
  rep.op = "kernelbench_problem";
  rep.candidate = "/p/solution.py";
  rep.backend = "cpu";
  rep.kernelbench = full_section().get<KernelBenchReport>();
  const nlohmann::json written = report_to_json(rep);
  EXPECT_EQ(written.at("kernelbench"), full_section());
  const Report back = report_from_json(written);
  ASSERT_TRUE(back.kernelbench);
  EXPECT_EQ(nlohmann::json(*back.kernelbench), full_section());
  rep.kernelbench.reset();  // another door's report has no section
  EXPECT_FALSE(report_to_json(rep).contains("kernelbench"));
  EXPECT_FALSE(report_from_json(report_to_json(rep)).kernelbench);
}

TEST(KernelBenchReport, TheLinesKcvVerifyPrints) {
  const std::vector<std::string> lines = kernelbench_summary_lines(full_section().get<KernelBenchReport>());
  ASSERT_EQ(lines.size(), 3u);
  EXPECT_EQ(lines[0], "kernelbench sizes: batch_size 4096 -> 1024");
  EXPECT_EQ(lines[1], "kernelbench bound: derived; out0 mixed (90 derived, 6 calibrated, 4 free in class); "
                      "ops without a rule (calibrated floor): aten::foo");
  EXPECT_EQ(lines[2], "kernelbench baseline (5 trials, allclose atol=rtol=1e-2): fail: trial 2: output 0 element 7: "
                      "got 1, Model gives 2");
  EXPECT_TRUE(kernelbench_summary_lines(KernelBenchReport{}).empty());
}

}  // namespace
}  // namespace kcv
