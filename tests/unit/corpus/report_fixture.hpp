// A synthetic corpus journal for the report tests, with its counts worked out by hand.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "kcv/stats.hpp"

namespace kcv::testing {

struct Worst {
  double error, bound;
};

/// A kcv.report/1 document: every gate passes except those in `verdicts`. Gates 4..12 (nonfinite
/// on) are tolerance-independent, as the engine writes them. baseline: "pass"/"fail"/"error", or none.
inline nlohmann::json make_report(const std::map<std::string, std::string>& verdicts,
                                  std::optional<std::string> baseline, std::optional<Worst> worst = std::nullopt,
                                  const std::map<std::string, std::string>& evidence = {},
                                  const std::map<std::string, std::string>& conventions = {}) {
  nlohmann::json gates = nlohmann::json::array();
  bool pass = true;
  int index = 0;
  for (const char* id : corpus_gate_ids()) {
    auto it = verdicts.find(id);
    const std::string v = it == verdicts.end() ? "pass" : it->second;
    if (v != "pass" && v != "skipped") pass = false;
    auto ev = evidence.find(id);
    nlohmann::json g = {{"id", id}, {"verdict", v}, {"tolerance_independent", index >= 3}, {"cases", 10},
                        {"seconds", 0.25}, {"evidence", ev == evidence.end() ? "" : ev->second}, {"seed", "7"},
                        {"failing_case", v == "pass" ? -1 : 0}};
    if (worst && std::string(id) == "numerics") g["worst"] = {{"error", worst->error}, {"bound", worst->bound}};
    // Issue 21 item 4: "own" / "library" as the engine writes it on a gate that did not pass.
    if (auto c = conventions.find(id); c != conventions.end()) g["convention"] = c->second;
    gates.push_back(g);
    ++index;
  }
  nlohmann::json r = {{"schema", "kcv.report/1"}, {"op", "kernelbench"}, {"candidate", "s.py"}, {"backend", "cuda"},
                      {"seed", "42"}, {"verdict", pass ? "pass" : "fail"}, {"gates", gates}};
  nlohmann::json kb = {{"problem", "p.py"}, {"solution", "s.py"}, {"compile_seconds", 1.5}};
  if (baseline)
    kb["baseline"] = {{"verdict", *baseline}, {"trials", 5}, {"atol", 0.01}, {"rtol", 0.01}, {"max_abs_diff", 0.001},
                      {"detail", ""}};
  r["kernelbench"] = kb;
  return r;
}

inline nlohmann::json result(const std::string& key, const std::string& status, nlohmann::json report,
                             const std::string& error = "") {
  return {{"kind", "result"}, {"key", key}, {"problem", "p.py"}, {"solution", key}, {"status", status},
          {"exit_code", !report.is_object() ? 2 : report.value("verdict", "") == "pass" ? 0 : 1},
          {"error", error}, {"wall_seconds", 3.0}, {"report", report}};
}

inline nlohmann::json run_record(const std::string& baseline) {
  return {{"kind", "run"}, {"started", "2025-01-01T00:00:00Z"}, {"corpus", "corpus/level1"}, {"backend", "cuda"},
          {"baseline", baseline}, {"shard", "0/1"}, {"jobs", 1}};
}

/// Eight keys a..h, one repeat of a, one record of an unknown kind. Expected counts:
///   a all pass, baseline pass              -> both pass
///   b numerics fail, baseline pass         -> b (accepted, fails a gate, none tolerance-independent)
///   c concurrency fail + sanitizer crash   -> b (accepted, fails a tolerance-independent gate)
///   d all pass, baseline fail              -> c
///   e setup_error, f timeout               -> both fail (no report)
///   g layout refused, no baseline          -> excluded (baseline missing)
///   h determinism timeout, values skipped, baseline error -> both fail
inline std::vector<nlohmann::json> synthetic_journal() {
  return {
      run_record("kernelbench"),
      result("a/solution_ok.py", "verified", make_report({}, "pass", Worst{1e-6, 1e-4})),
      result("b/solution_num.py", "verified",
             make_report({{"numerics", "fail"}}, "pass", Worst{3e-2, 1e-4}, {{"numerics", "case 0 index 5: got 1 expected 0"}})),
      result("c/solution_race.py", "verified",
             make_report({{"concurrency", "fail"}, {"sanitizer", "crash"}}, "pass", Worst{2e-7, 1e-4},
                         {{"concurrency", "stream race at index 3"}})),
      result("d/solution_tol.py", "verified", make_report({}, "fail")),
      result("e/solution_build.py", "setup_error", nullptr, "nvcc: error: expected ';'"),
      result("f/solution_hang.py", "timeout", nullptr, "killed after 600 s"),
      result("g/solution_nobase.py", "verified", make_report({{"layout", "refused"}}, std::nullopt)),
      result("h/solution_err.py", "verified",
             make_report({{"determinism", "timeout"}, {"values", "skipped"}}, "error")),
      result("a/solution_ok.py", "verified", make_report({{"numerics", "fail"}}, "fail")),  // a repeat: not counted
      {{"kind", "note"}, {"text", "ignored"}},
  };
}

}  // namespace kcv::testing
