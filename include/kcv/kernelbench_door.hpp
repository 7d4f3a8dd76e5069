/// What the KernelBench front door takes (VerifyOptions::kernelbench) and what it adds to a report
/// (Report::kernelbench, the JSON section "kernelbench"); docs/kernelbench.md. The door itself is
/// src/kcv/kernelbench/kernelbench_front_door.cpp; a session over one problem is
/// kcv/kernelbench_session.hpp.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace kcv {

/// A KernelBench pair instead of VerifyOptions::op and candidate (kcv verify --kernelbench).
struct KernelBenchOptions {
  std::string problem, solution;   // PROBLEM.py (Model) and SOLUTION.py (ModelNew)
  std::string python;              // interpreter with torch (empty: resolve_python's default)
  bool baseline = false;           // also run KernelBench's own check (--baseline kernelbench)
  /// A directory for the reference's answers, content-addressed, shared by every verification of
  /// the problem under the same seed (a corpus run's solutions, a resumed or sharded run;
  /// docs/kernelbench.md "Reference cache"). Empty: none. Needs kcv to run as root.
  std::string reference_cache;
  /// A directory for the candidate's extension builds, content-addressed by the solution's bytes
  /// and everything else a build depends on: a later verification of the same solution imports
  /// them instead of compiling (docs/kernelbench.md "Build cache"). Empty: none. Needs root.
  std::string build_cache;

  /// Whether a pair (or half of one) is given: the KernelBench door, whose checks say what is missing.
  bool given() const { return !problem.empty() || !solution.empty(); }
};

/// KernelBench's own acceptance check, beside the gates (--baseline kernelbench): the problem's
/// fixed shape, `trials` inputs from get_inputs(), torch.allclose(atol, rtol) against the float32
/// Model: NaN is never close, equal infinities are.
struct KernelBenchBaseline {
  std::string verdict;       // "pass" or "fail"
  std::string detail;        // the first trial that failed and why; empty on a pass
  int trials = 5;
  double atol = 1e-2, rtol = 1e-2;
  double max_abs_diff = 0;   // over the finite elements judged
};

/// One output's elements by the bound that judged them (docs/kernelbench.md, "The error bound, derived").
struct KernelBenchBoundOutput {
  std::string output;
  std::string judged_by;     // "derived", "calibrated" or "mixed"
  int64_t elements = 0, derived = 0, calibrated = 0, free = 0;
  int64_t eager_over = 0;    // elements where fp32 eager itself exceeded the derived bound
};

/// The error bound the gates judged by.
struct KernelBenchBound {
  std::string mode;          // "derived", or "calibrated" (KCV_TORCH_BOUND=calibrated)
  std::string detail;        // calibrated: what it was calibrated on
  int64_t references = 0;    // derived: reference answers computed
  std::vector<KernelBenchBoundOutput> outputs;  // derived: one per output
  std::vector<std::string> unruled;             // derived: ops without a rule (the calibrated floor)
};

/// The report's KernelBench section.
struct KernelBenchReport {
  std::string problem, solution;    // the files verified, as kcv read them (absolute)
  std::string python;               // the interpreter every worker and the reference ran
  double compile_seconds = 0;       // from the runner's start until the main worker had loaded the solution
  bool fresh_model = false;         // every case builds the solution's ModelNew afresh
  std::string reduced_sizes;        // the sizes the gates scaled the problem to; empty: its own
  std::string input_structure;      // the inputs kept in a matrix structure, e.g. "in0 upper triangular"; empty: none
  std::optional<KernelBenchBaseline> baseline;
  std::optional<KernelBenchBound> bound;
  /// Diagnostics as the parts that keep them write them (docs/kernelbench.md): the standby
  /// workers (started, used, not_used), a session's pool (offered, taken, used, ...), the
  /// reference cache's and the build cache's summaries. Null where there was none.
  nlohmann::json standby_workers, pool, reference_cache, build_cache;
};

/// JSON: the section as kcv.report/1 has it (absent fields left out); reading takes what a report
/// has and leaves the rest at its default.
void to_json(nlohmann::json& j, const KernelBenchReport& r);
void from_json(const nlohmann::json& j, KernelBenchReport& r);

/// What kcv verify prints of the section under the gate table: the scaled sizes, which bound
/// judged which output, KernelBench's own check. One string per line, no newline.
std::vector<std::string> kernelbench_summary_lines(const KernelBenchReport& r);

}  // namespace kcv
