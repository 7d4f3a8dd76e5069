// McNemar's exact test, and the counts over a corpus journal that the report shows.
#include "kcv/stats.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <map>
#include <stdexcept>

#include <fmt/format.h>

#include "kcv/gate.hpp"

namespace kcv {

McNemar mcnemar_exact(int64_t b, int64_t c) {
  if (b < 0 || c < 0) throw std::invalid_argument("mcnemar_exact: negative count");
  McNemar m{b, c, b + c, 1.0};
  // |b - c| ≤ 1 means the tail holds at least half of all 2^n outcomes: p is exactly 1.
  if (m.n == 0 || (b - c <= 1 && c - b <= 1)) return m;
  const int64_t k = std::min(b, c);
  const double n = static_cast<double>(m.n);
  // NOTES: k ≤ n/2, so C(n,i) grows with i up to i = k: the last term is the largest. Write the
  // tail as C(n,k)/2^n · Σ r_i with r_k = 1 and r_{i-1} = r_i · i/(n-i+1) < r_i. The ratios
  // neither overflow nor underflow while they matter, and only the leading factor needs logs.
  double sum = 0, r = 1;
  for (int64_t i = k; i >= 0; --i) {
    sum += r;
    if (r < sum * 1e-18) break;  // the rest cannot change the double
    r *= static_cast<double>(i) / (n - static_cast<double>(i) + 1);
  }
  const double kd = static_cast<double>(k);
  const double log_lead = std::lgamma(n + 1) - std::lgamma(kd + 1) - std::lgamma(n - kd + 1) - n * std::log(2.0);
  const double log_p = std::log(2.0) + log_lead + std::log(sum);
  m.p = log_p >= 0 ? 1.0 : std::min(1.0, std::exp(log_p));
  return m;
}

const std::array<const char*, 12>& corpus_gate_ids() {
  // The registry's ids (gate.hpp all_gates()), in its order: the list exists once. A gate's id()
  // views a string literal, so its data() is a terminated C string for the program's life.
  static const std::array<const char*, 12> ids = [] {
    std::array<const char*, 12> out{};
    const auto& gates = all_gates();
    if (gates.size() != out.size())
      throw std::logic_error("kcv: corpus_gate_ids: the registry holds another number of gates than 12");
    for (std::size_t i = 0; i < out.size(); ++i) out[i] = gates[i]->id().data();
    return out;
  }();
  return ids;
}

namespace {

// Journal records are read leniently: a missing or mistyped field reads as absent.
std::string str_field(const nlohmann::json& j, const char* name) {
  if (!j.is_object()) return {};
  auto it = j.find(name);
  return it != j.end() && it->is_string() ? it->get<std::string>() : std::string{};
}

std::optional<double> num_field(const nlohmann::json& j, const char* name) {
  if (!j.is_object()) return std::nullopt;
  auto it = j.find(name);
  if (it == j.end() || !it->is_number()) return std::nullopt;
  return it->get<double>();
}

/// A verdict as the summary counts it: kcv.report/1 writes PASS, FAIL, ...; compared in lower case.
std::string verdict_field(const nlohmann::json& j, const char* name) {
  std::string v = str_field(j, name);
  for (char& ch : v) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
  return v;
}

const nlohmann::json& obj_field(const nlohmann::json& j, const char* name) {
  static const nlohmann::json none;
  if (!j.is_object()) return none;
  auto it = j.find(name);
  return it != j.end() && it->is_object() ? *it : none;
}

bool is_failure(const std::string& verdict) {
  return verdict == "fail" || verdict == "crash" || verdict == "timeout" || verdict == "refused";
}

void count(VerdictCounts& c, const std::string& verdict) {
  if (verdict == "pass") ++c.pass;
  else if (verdict == "fail") ++c.fail;
  else if (verdict == "crash") ++c.crash;
  else if (verdict == "timeout") ++c.timeout;
  else if (verdict == "refused") ++c.refused;
  else ++c.skipped;  // skipped, or a verdict this build does not know: not a pass, not a failure
}

GateSummary& gate_entry(std::vector<GateSummary>& gates, const std::string& id) {
  for (auto& g : gates)
    if (g.id == id) return g;
  gates.push_back(GateSummary{id, false, {}});
  return gates.back();
}

/// KernelRow::bound_calibrated and bound_free of a report's kernelbench.bound, in one reading
/// (leniently, as the rest of the journal: kernelbench_report.cpp's bound_from throws on a mistyped field).
void read_bound(const nlohmann::json& bound, KernelRow& row) {
  if (str_field(bound, "mode") != "derived") return;
  int64_t calibrated = 0, free = 0, elements = 0;
  std::string ops;
  if (auto it = bound.find("outputs"); it != bound.end() && it->is_array())
    for (const auto& o : *it) {
      calibrated += static_cast<int64_t>(num_field(o, "calibrated").value_or(0));
      free += static_cast<int64_t>(num_field(o, "free").value_or(0));
      elements += static_cast<int64_t>(num_field(o, "elements").value_or(0));
    }
  if (auto it = bound.find("unruled"); it != bound.end() && it->is_array())
    for (const auto& op : *it)
      if (op.is_string()) ops += (ops.empty() ? "" : "; ") + op.get<std::string>();
  if (calibrated != 0 || !ops.empty())
    row.bound_calibrated = fmt::format("{} element{} judged by the calibrated floor{}", calibrated,
                                       calibrated == 1 ? "" : "s", ops.empty() ? "" : " (ops without a rule: " + ops + ")");
  if (free > 0)
    row.bound_free = fmt::format("{} of {} elements free in class (any value accepted there){}", free, elements,
                                 free == elements ? ": every element" : "");
}

}  // namespace

void SplitCounts::add(const std::string& split) {
  if (split == kSplitOwn) ++own;
  else if (split == kSplitLibrary) ++library;
  else if (split == kSplitCrash) ++crash;
  else if (split == kSplitUnknown) ++unknown;
}

std::string verdict_split(const nlohmann::json& report) {
  auto gates = report.is_object() ? report.find("gates") : report.end();
  if (!report.is_object() || gates == report.end() || !gates->is_array()) return kSplitUnknown;
  int64_t ran = 0, failed = 0, abnormal = 0;
  bool own = false, unknown = false, sanitizer_passed = false;
  for (const auto& g : *gates) {
    const std::string verdict = verdict_field(g, "verdict");
    if (verdict == "skipped" || verdict.empty()) continue;
    // NOTES: the sanitizer gate reports a crash as its tool's finding (FAIL: "AddressSanitizer:
    // SEGV ..."), not as a CRASH: it is left out of "every gate crashed", unless it passed.
    const bool sanitizer = str_field(g, "id") == "sanitizer";
    if (sanitizer && !is_failure(verdict)) sanitizer_passed = true;
    if (!sanitizer) ++ran;
    if (!is_failure(verdict)) continue;
    ++failed;
    if (!sanitizer && (verdict == "crash" || verdict == "timeout")) ++abnormal;
    const std::string convention = str_field(g, "convention");
    if (convention == "own") own = true;
    else if (convention != "library") unknown = true;
  }
  // NOTES: a kernel that crashes (or hangs) in every gate it ran is one finding, not twelve, and
  // not a convention matter: it fails wherever it is called.
  if (ran > 0 && abnormal == ran && !sanitizer_passed) return kSplitCrash;
  if (own) return kSplitOwn;
  if (unknown || failed == 0) return kSplitUnknown;
  return kSplitLibrary;
}

CorpusSummary summarize_corpus(const std::vector<nlohmann::json>& journal_records) {
  CorpusSummary s;
  for (const char* id : corpus_gate_ids()) s.gates.push_back(GateSummary{id, false, {}});

  // The first result of a key is the one that counts: a resumed run never writes a second one,
  // so a later record of the same key comes from a bad merge and is counted apart.
  std::map<std::string, const nlohmann::json*> results;
  for (const auto& r : journal_records) {
    const std::string kind = str_field(r, "kind");
    if (kind == "run") {
      s.runs.push_back(r);
      if (str_field(r, "baseline") == "kernelbench") s.baseline_in_use = true;
    } else if (kind == "result") {
      if (!results.emplace(str_field(r, "key"), &r).second) ++s.duplicates;
    } else if (kind == "retry") {
      ++s.retries;
    } else {
      ++s.other_records;
    }
  }
  for (const auto& [key, r] : results)
    if (obj_field(obj_field(obj_field(*r, "report"), "kernelbench"), "baseline").is_object()) s.baseline_in_use = true;

  s.results = static_cast<int64_t>(results.size());
  for (const auto& [key, r] : results) {
    KernelRow row;
    row.key = key;
    row.status = str_field(*r, "status");
    // A journal of a kcv before the back-off says only retried_alone: it ran alone.
    row.retried = str_field(*r, "retried");
    if (row.retried.empty()) row.retried = str_field(*r, "retried_alone");
    row.retried_beside_at_most = static_cast<int>(num_field(*r, "retried_beside_at_most").value_or(0));
    row.wall_seconds = num_field(*r, "wall_seconds").value_or(0);
    row.cpu_seconds = num_field(*r, "cpu_seconds");
    if (row.status == "verified") ++s.verified;
    else if (row.status == "setup_error") ++s.setup_error;
    else if (row.status == "timeout") ++s.timeout;
    else if (row.status == "verifier_crash") ++s.verifier_crash;
    else ++s.other_status;

    const nlohmann::json& report = obj_field(*r, "report");
    bool baseline_known = false, baseline_pass = false;
    if (report.is_null()) {
      // Not verified: rejected by the strict check, and by the baseline when the corpus ran it.
      row.first_failing_gate = row.status.empty() ? "no report" : row.status;
      row.evidence = str_field(*r, "error");
      row.baseline = s.baseline_in_use ? "fail" : "missing";
      baseline_known = s.baseline_in_use;
    } else {
      ++s.reports;
      row.strict_pass = verdict_field(report, "verdict") == "pass";
      row.provenance = obj_field(report, "provenance");
      const nlohmann::json& kb = obj_field(report, "kernelbench");
      row.compile_seconds = num_field(kb, "compile_seconds");
      row.reduced_sizes = str_field(kb, "reduced_sizes");
      if (!row.reduced_sizes.empty()) ++s.reduced_sizes;
      read_bound(obj_field(kb, "bound"), row);
      if (!row.bound_calibrated.empty()) ++s.bound_calibrated;
      if (!row.bound_free.empty()) ++s.bound_free;
      const std::string bv = verdict_field(obj_field(kb, "baseline"), "verdict");
      if (bv == "pass" || bv == "fail" || bv == "error") {
        row.baseline = bv;
        baseline_known = true;
        baseline_pass = bv == "pass";
      } else {
        row.baseline = "missing";
      }
      auto gates = report.find("gates");
      if (gates != report.end() && gates->is_array()) {
        row.gates = *gates;
        for (const auto& g : *gates) {
          const std::string id = str_field(g, "id"), verdict = verdict_field(g, "verdict");
          GateSummary& gs = gate_entry(s.gates, id);
          auto ti = g.is_object() ? g.find("tolerance_independent") : g.end();
          const bool tolerance_independent = ti != g.end() && ti->is_boolean() && ti->get<bool>();
          gs.tolerance_independent = gs.tolerance_independent || tolerance_independent;
          count(gs.counts, verdict);
          row.gate_seconds += num_field(g, "seconds").value_or(0);
          if (is_failure(verdict)) {
            ++row.failing_gates;
            row.failing_gate_ids.push_back(id);
            const std::string convention = str_field(g, "convention");
            if (convention == "own") ++gs.own_convention;
            else if (convention == "library") ++gs.library_only;
            row.fails_tolerance_independent = row.fails_tolerance_independent || tolerance_independent;
            if (row.first_failing_gate.empty()) {
              row.first_failing_gate = id + " (" + verdict + ")";
              row.evidence = str_field(g, "evidence");
            }
          }
          if (id == "numerics") {
            row.numerics_verdict = verdict;
            const nlohmann::json& worst = obj_field(g, "worst");
            row.worst_error = num_field(worst, "error");
            row.worst_bound = num_field(worst, "bound");
          }
        }
      }
    }

    if (!report.is_null() && !row.strict_pass) {
      row.split = verdict_split(report);
      s.split.add(row.split);
      if (row.split != kSplitCrash && row.failing_gate_ids.size() == 1)
        ++gate_entry(s.gates, row.failing_gate_ids[0]).only_this_gate;
    }
    (row.strict_pass ? s.strict_pass : s.strict_fail)++;
    if (!baseline_known) {
      ++s.baseline_missing;
    } else {
      (baseline_pass ? s.baseline_pass : s.baseline_fail)++;
      if (row.baseline == "error") ++s.baseline_error;
      if (baseline_pass) {
        ++s.accepted;
        if (row.failing_gates > 0) ++s.accepted_fail_any;
        if (row.failing_gates > 0) s.accepted_split.add(row.split);
        if (row.fails_tolerance_independent) ++s.accepted_fail_tolerance_independent;
      }
      if (baseline_pass && row.strict_pass) ++s.both_pass;
      else if (baseline_pass) ++s.baseline_pass_strict_fail;
      else if (row.strict_pass) ++s.baseline_fail_strict_pass;
      else ++s.both_fail;
    }
    s.kernels.push_back(std::move(row));
  }
  s.mcnemar = mcnemar_exact(s.baseline_pass_strict_fail, s.baseline_fail_strict_pass);
  return s;
}

}  // namespace kcv
