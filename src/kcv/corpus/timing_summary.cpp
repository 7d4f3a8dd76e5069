// The corpus's timing summary (issue 22 item 2, docs/timing.md): speedup and fast_p over a corpus
// run with --timing, as KernelBench defines fast_p (the share of all pairs that are correct AND
// faster than p times the reference), correct meaning here: every one of the 12 gates passed.
#include <algorithm>
#include <cmath>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "kcv/corpus.hpp"
#include "kcv/kernelbench.hpp"

using nlohmann::json;

namespace kcv {

namespace {

/// Every one of the report's gates ran and passed (none skipped), and its verdict stands.
bool passes_all_gates(const json& report) {
  if (!report.is_object() || report.value("verdict", std::string()) != "PASS") return false;
  if (!report.contains("gates") || !report["gates"].is_array() || report["gates"].size() != 12) return false;
  for (const auto& g : report["gates"])
    if (!g.is_object() || g.value("verdict", std::string()) != "PASS") return false;
  return true;
}

/// The share of n pairs (KernelBench's denominator: all of them) correct and faster than p.
json fast_p(const std::vector<double>& speedups, int64_t n) {
  json out = json::object();
  for (double p : kFastPThresholds) {
    const auto k = std::count_if(speedups.begin(), speedups.end(), [&](double s) { return s > p; });
    char name[32];
    std::snprintf(name, sizeof name, "fast_%g", p);
    out[name] = n > 0 ? static_cast<double>(k) / static_cast<double>(n) : 0.0;
  }
  return out;
}

json spread(std::vector<double> v) {
  if (v.empty()) return nullptr;
  std::sort(v.begin(), v.end());
  double logs = 0;
  for (double x : v) logs += std::log(x);
  return {{"geomean", std::exp(logs / static_cast<double>(v.size()))},
          {"median", quantile(v, 0.5)},
          {"min", v.front()},
          {"max", v.back()}};
}

}  // namespace

json corpus_timing_summary(const std::vector<json>& records) {
  std::set<std::string> seen;
  int64_t pairs = 0, asked = 0, correct = 0, timed = 0, correct_untimed = 0;
  std::vector<double> eager, compiled;
  int64_t no_compiled = 0;
  for (const auto& r : records) {
    if (r.value("kind", "") != "result" || !r.contains("key") || !r["key"].is_string()) continue;
    if (!seen.insert(r["key"].get<std::string>()).second) continue;  // the first result of a key counts
    ++pairs;
    const json report = r.value("report", json());
    const json t = report.is_object() ? report.value("timing", json()) : json();
    if (t.is_object()) ++asked;
    if (!passes_all_gates(report)) continue;
    ++correct;
    if (!t.is_object() || !t.value("timed", false) || !t.contains("speedup") || !t["speedup"].is_number()) {
      ++correct_untimed;
      continue;
    }
    ++timed;
    eager.push_back(t["speedup"].get<double>());
    if (t.contains("speedup_vs_compiled") && t["speedup_vs_compiled"].is_number())
      compiled.push_back(t["speedup_vs_compiled"].get<double>());
    else
      ++no_compiled;
  }
  if (asked == 0) return nullptr;
  return {{"pairs", pairs},
          {"correct", correct},
          {"timed", timed},
          {"correct_not_timed", correct_untimed},
          {"speedup", spread(eager)},
          {"fast_p", fast_p(eager, pairs)},
          {"vs_compiled",
           {{"timed", static_cast<int64_t>(compiled.size())},
            {"not_compiled", no_compiled},
            {"speedup", spread(compiled)},
            {"fast_p", fast_p(compiled, pairs)}}}};
}

}  // namespace kcv
