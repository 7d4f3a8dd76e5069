/// Statistics for corpus reports: McNemar's exact test on paired pass/fail verdicts, and the
/// counts over a corpus journal (docs/kernelbench.md, "The report").
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace kcv {

/// McNemar's exact test on the discordant pairs of a 2x2 table.
struct McNemar {
  int64_t b = 0;   // first check passes, second fails
  int64_t c = 0;   // first check fails, second passes
  int64_t n = 0;   // b + c
  double p = 1;    // exact two-sided p-value
};

/// p = min(1, 2·Σ_{i=0}^{min(b,c)} C(n,i) / 2^n), n = b + c; p = 1 when n = 0.
/// Computed in log space, so it stays right for n in the millions; a p below the smallest
/// double comes back as 0 (or a subnormal), never NaN. Throws std::invalid_argument if b or c < 0.
McNemar mcnemar_exact(int64_t b, int64_t c);

/// How many gates (or kernels) ended in each verdict.
struct VerdictCounts {
  int64_t pass = 0, fail = 0, crash = 0, timeout = 0, refused = 0, skipped = 0;
  /// Every outcome that rejects: fail, crash, timeout, refused. A skip is neither pass nor fail.
  int64_t failures() const { return fail + crash + timeout + refused; }
};

struct GateSummary {
  std::string id;
  bool tolerance_independent = false;  // as the reports say
  VerdictCounts counts;                // over verified results only
  /// Issue 21 item 4. Of the kernels whose failures this gate counts: how many failed it in the
  /// problem's own calling convention, and how many only as a library op (its "convention").
  int64_t own_convention = 0, library_only = 0;
  /// Kernels that fail this gate and no other (a kernel that crashes in every gate is a crash,
  /// counted in no gate's only_this_gate).
  int64_t only_this_gate = 0;
};

/// Issue 21 item 4, the headline split of a kernel the strict check rejects (KernelRow::split):
/// "own": it fails some gate in the problem's own calling convention (default stream, contiguous
/// inputs as get_inputs() makes them, one caller); "library": it fails only as a library op is
/// called (strided views, the caller's non-default stream, two callers at once); "crash": every gate
/// that ran ended CRASH or TIMEOUT (the sanitizer gate, whose tool reports a crash as a FAIL, need
/// only not pass), counted once; "unknown": a failing gate's report does not say
/// (a kcv before the split wrote it). Empty for a kernel that passed or has no report.
inline constexpr const char* kSplitOwn = "own";
inline constexpr const char* kSplitLibrary = "library";
inline constexpr const char* kSplitCrash = "crash";
inline constexpr const char* kSplitUnknown = "unknown";

/// The split of a kcv.report/1 document that did not pass (see kSplitOwn). Lenient like the rest.
std::string verdict_split(const nlohmann::json& report);

/// Counts of the split over some kernels.
struct SplitCounts {
  int64_t own = 0, library = 0, crash = 0, unknown = 0;
  void add(const std::string& split);
};

/// One result record, reduced to what the page shows.
struct KernelRow {
  std::string key;
  std::string status;      // verified | setup_error | timeout | verifier_crash
  std::string retried;        // why the pair ran again ("" when it did not; corpus.hpp)
  int retried_beside_at_most = 0;  // how many pairs could run beside it then (0: alone)
  std::string reduced_sizes;  // why it was judged at clipped sizes ("" when at its own; kernelbench.hpp)
  /// Where the derived bound left elements to the calibrated floor (an op without a rule, or one
  /// fed by it): how many, and the ops the report names; "" when it judged every element itself
  /// (or the bound was not derived: a builtin contract, KCV_TORCH_BOUND=calibrated).
  std::string bound_calibrated;
  /// How many elements the derived bound left free in class (any class and value accepted: some
  /// legitimate fp32 order overflows or leaves a function's domain there, DESIGN §4 (c)), of how
  /// many; "" when none. All of them free: the values gates cannot fail that pair.
  std::string bound_free;
  bool strict_pass = false;
  std::string baseline;    // pass | fail | error | missing
  int64_t failing_gates = 0;       // gates that did not pass and were not skipped
  bool fails_tolerance_independent = false;
  std::string first_failing_gate;  // empty when none; for a result not verified, its status
  std::string evidence;            // that gate's evidence, or the record's error
  std::optional<double> compile_seconds;
  double gate_seconds = 0;         // sum over the gates
  double wall_seconds = 0;
  std::optional<double> cpu_seconds;  // the verifier's and its processes' (journals before session 8 lack it)
  std::optional<std::string> numerics_verdict;
  std::optional<double> worst_error, worst_bound;  // the numerics gate's "worst", when it has one
  std::string split;                      // verdict_split of a verified strict fail, else ""
  std::vector<std::string> failing_gate_ids;  // in report order
  nlohmann::json gates;                   // the report's gates, as written (the drill-down)
  nlohmann::json provenance;              // the report's provenance (null when it has none)
};

struct CorpusSummary {
  std::vector<nlohmann::json> runs;  // the "kind":"run" records, as written
  int64_t results = 0;               // distinct keys
  int64_t duplicates = 0;            // later records of a key already seen (not counted)
  int64_t retries = 0;               // "retry" records: a pair to run again alone (corpus.hpp)
  int64_t other_records = 0;         // records of another kind
  int64_t verified = 0, setup_error = 0, timeout = 0, verifier_crash = 0, other_status = 0;
  int64_t reports = 0;               // results that carry a report: the gate counts cover these
  int64_t reduced_sizes = 0;         // of those, judged at clipped sizes (over KCV_MAX_ELEMENTS)
  int64_t bound_calibrated = 0;      // of those, the derived bound left some elements to the calibrated floor
  int64_t bound_free = 0;            // of those, the derived bound left some elements free in class

  int64_t strict_pass = 0, strict_fail = 0;
  /// NOTES: a result that was not verified (no report) counts as rejected by both checks: it did
  /// not build, hung, or crashed, and KernelBench would not accept it either. It counts against
  /// the baseline only when the corpus ran the baseline at all (baseline_in_use).
  bool baseline_in_use = false;
  int64_t baseline_pass = 0, baseline_fail = 0;  // baseline_fail includes baseline_error
  int64_t baseline_error = 0, baseline_missing = 0;

  /// Among baseline-accepted kernels: how many fail at least one gate, and at least one
  /// tolerance-independent gate.
  int64_t accepted = 0, accepted_fail_any = 0, accepted_fail_tolerance_independent = 0;
  /// Issue 21 item 4: the split of the verified kernels that fail, over all of them and over the
  /// baseline-accepted ones (accepted_split sums to accepted_fail_any).
  SplitCounts split, accepted_split;

  /// baseline × strict over results with a baseline verdict; b and c are the discordant cells.
  int64_t both_pass = 0, baseline_pass_strict_fail = 0, baseline_fail_strict_pass = 0, both_fail = 0;
  McNemar mcnemar;

  std::vector<GateSummary> gates;  // the 12 gates in DESIGN order, then any unknown ids
  std::vector<KernelRow> kernels;  // in key order
};

/// The 12 gate ids in DESIGN order.
const std::array<const char*, 12>& corpus_gate_ids();

/// Counts over the journal's records. Lenient: a field a record lacks counts as absent.
CorpusSummary summarize_corpus(const std::vector<nlohmann::json>& journal_records);

}  // namespace kcv
