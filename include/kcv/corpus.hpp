/// Corpus runs (docs/kernelbench.md "Corpus runs"): many (problem, solution) pairs, each verified in
/// a forked child process of the run that calls the library (verify_to_report_files, the code path
/// of `kcv verify --json`), every result appended to a crash-safe journal that a killed run resumes
/// from. The library does the work and throws SetupError; the CLI prints and picks exit codes.
#pragma once

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "kcv/settings.hpp"
#include "kcv/stats.hpp"

namespace kcv {

// ---- pairs ----

/// One verification: a KernelBench problem and a candidate solution.
struct CorpusPair {
  std::string key;       // the solution's path relative to the corpus directory ('/'-separated)
  std::string problem;   // absolute paths
  std::string solution;
};

/// Every directory under dir (dir included) holding a problem.py gives one pair per solution*.py
/// beside it; self_check: every *.py is a problem offered as its own candidate. Sorted by key.
/// Throws SetupError when dir is not a directory.
std::vector<CorpusPair> discover_pairs(const std::string& dir, bool self_check);

/// `--shard I/N`: this run takes the pairs whose index in key order is I mod N.
struct Shard {
  int index = 0;
  int count = 1;
  std::string text() const { return std::to_string(index) + "/" + std::to_string(count); }
};
/// Parses "I/N" with 0 <= I < N; throws SetupError otherwise.
Shard parse_shard(const std::string& text);
std::vector<CorpusPair> select_shard(const std::vector<CorpusPair>& pairs, const Shard& shard);

/// The order a run starts its pairs in: one solution of every problem (in key order), then the
/// second of every problem that has one, and so on. The solutions of one problem have the same
/// sizes, so a problem's host memory and GPU load do not pile up in --jobs verifications at once,
/// and a run cut short has reached more problems.
std::vector<CorpusPair> spread_by_problem(const std::vector<CorpusPair>& pairs);

/// What a run knows of one problem when it picks its next pair: how many of its pairs are
/// running, and the longest wall time among its pairs so far (finished ones, in this run or the
/// journal's, and running ones until now).
struct ProblemLoad {
  int running = 0;
  double longest_s = 0;
};

/// The index in `todo` (in spread_by_problem's order) of the pair a run starts next. First a
/// pair of a problem none of whose pairs has started (todo's order); then, among problems with
/// no pair running, the one whose pairs have taken longest, so that the long pairs do not start
/// last and hold the run's end; only then problems with a pair running, again the longest first.
/// Ties keep todo's order. `load` holds the problems that have started.
std::size_t next_pair(const std::vector<CorpusPair>& todo, const std::map<std::string, ProblemLoad>& load);

/// How many pairs a run lets run at once when it starts a pair, a first run or a retry: --jobs, less
/// after pairs run out of memory beside others. A pair that does so leaves the others running
/// holding the memory it lacked: the limit drops to how many still run (at least 1), so its place
/// is not refilled, and each pair that ends without running out of memory raises it by one, back
/// to --jobs. Without it a few large pairs holding the GPU sent every pair started beside them to
/// the retries, one after another within seconds (session 40: 96 of 161 KernelBench problems on an
/// 80 GB H100 at --jobs 14); retries outside it did the same (session 41: 32 retries in 40 s beside
/// one Model holding 50 GB). A retry also keeps its own limit (its beside_at_most).
class Admission {
 public:
  explicit Admission(int jobs) : jobs_(jobs < 1 ? 1 : jobs), limit_(jobs_) {}
  /// A pair ran out of memory beside others; `still_running` pairs run now.
  void ran_out_of_memory(std::size_t still_running) {
    limit_ = std::max(1, std::min(limit_, static_cast<int>(std::min<std::size_t>(still_running, jobs_))));
  }
  /// A pair ended without running out of memory.
  void ended() { limit_ = std::min(jobs_, limit_ + 1); }
  int limit() const { return limit_; }

 private:
  int jobs_, limit_;
};

// ---- the journal: OUT/journal.jsonl ----

/// The records of a journal, one per complete line. A last line without '\n' (a write cut short
/// by kill -9) is dropped. A missing file reads as empty. Throws SetupError naming the line when a
/// complete line is not a JSON object: data is never dropped silently.
std::vector<nlohmann::json> read_journal(const std::string& path);

/// An open journal for appending: O_APPEND, one write() per record, fsync() after each.
/// Holds an exclusive flock so two runs never append to one journal at once.
class Journal {
 public:
  /// Opens path (creating it). When the file does not end in '\n', it is first truncated back to
  /// just after its last '\n', so that the next record starts a line of its own.
  explicit Journal(const std::string& path);
  ~Journal();
  Journal(const Journal&) = delete;
  Journal& operator=(const Journal&) = delete;

  /// The records the file held when opened (after the cut line was dropped).
  const std::vector<nlohmann::json>& existing() const { return existing_; }
  /// Appends one record as one line; throws SetupError when the write or fsync fails.
  void append(const nlohmann::ordered_json& record);

 private:
  std::string path_;
  int fd_ = -1;
  std::vector<nlohmann::json> existing_;
};

// ---- run ----

struct CorpusOptions {
  std::string dir;                   // the corpus
  std::string out;                   // OUT: created if needed; holds journal.jsonl
  int jobs = 1;                      // pairs verified at once
  std::string backend = "cpu";       // passed to verify
  std::string baseline;              // "" or "kernelbench"
  /// verify --timing for every pair (docs/timing.md): the summary adds speedup and fast_p.
  bool timing = false;
  Shard shard;
  bool self_check = false;           // --self
  double timeout_s = 0;              // verify's per-call --timeout; 0: verify's default
  double compile_grace_s = -1;       // verify's --compile-grace; negative: verify's default
  double pair_timeout_s = 1800;      // wall clock per pair; then its process tree is killed
  std::string python;                // verify's --python; "" = not passed
  /// An executable started per pair instead of the forked library call: given `kcv verify`'s argv
  /// (--kernelbench P S --backend B --json FILE --seed N ... --quiet) and the run's settings as
  /// KCV_* variables (settings_variables). "" = settings.corpus_verifier, and when that is empty
  /// too (the default), each pair is a forked child of this process, which must then be
  /// single-threaded (run_corpus throws SetupError otherwise).
  std::string verifier;
  /// Stop requests, read as the run goes (a signal handler may raise it): 1, start no new pair and
  /// let the running ones finish and be journaled; 2, also kill the running ones, unjournaled.
  const std::atomic<int>* stop = nullptr;
  /// Build a precompiled torch/extension.h first (adapters/torch/kcv_torch_pch.py, for the
  /// backend, beside the pairs in OUT/torch-pch) and pass it to every pair started once it is
  /// ready (its settings.torch_pch; an explicit verifier's env KCV_TORCH_PCH): the .cpp half of a load_inline build then skips parsing torch's
  /// headers. Never with self_check (a problem as its own candidate builds nothing).
  bool torch_pch = false;
  /// The run seed every pair is verified under (verify --seed), so that the solutions of one
  /// problem see the same cases. Empty: the journal's (a resumed run), else drawn fresh; it is
  /// journaled in the run record, and a resumed run given another one is refused.
  std::optional<uint64_t> seed;
  /// Where the pairs keep the reference's answers (verify --reference-cache): "" for
  /// OUT/reference-cache, "off" for none. Used only where kcv is root (reference_cache_refusal);
  /// otherwise off, and the summary says why.
  std::string reference_cache;
  /// Where the pairs keep their extension builds (verify --build-cache): "" for OUT/build-cache,
  /// "off" for none. Used only where kcv is root (build_cache_refusal), never with self_check;
  /// otherwise off, and the summary says why.
  std::string build_cache;
  /// The run's own (corpus_verifier, python, adapters_dir for the precompiled-header helper) and
  /// every pair's: a forked pair verifies with these (threads: these when positive, else
  /// cores/jobs; torch_pch: the run's header once ready); an explicit verifier gets them as its
  /// KCV_* variables (settings_variables), threads as KCV_THREADS.
  Settings settings;
};

/// The KCV_* variables that give a kcv process these settings, the inverse of the CLI's mapping
/// (settings_from_environment, tools/kcv/environment.cpp): every variable it reads, in the order
/// it documents them, each with its value or "" (unset: the default). A corpus run gives them to
/// an explicit verifier executable (CorpusOptions::verifier).
std::vector<std::pair<std::string, std::string>> settings_variables(const Settings& settings);

/// Counts of non-pass verdicts of one gate over the verified pairs.
struct GateFailureCount {
  std::string gate;
  std::map<std::string, int> by_verdict;   // "FAIL", "CRASH", "TIMEOUT", "REFUSED", "SKIPPED" -> pairs
  int not_passed = 0;                      // pairs where the gate neither passed nor was skipped
  /// Issue 21 item 4: of not_passed, in the problem's own calling convention / only as a library
  /// op; and the pairs that fail this gate and no other.
  int own_convention = 0, library_only = 0, only_this_gate = 0;
};

struct CorpusRunSummary {
  int pairs = 0;                 // in this shard
  int from_journal = 0;          // results found in the journal at start (skipped)
  int ran = 0;                   // verified by this invocation
  int verified_pass = 0, verified_fail = 0;
  int setup_errors = 0, timeouts = 0, crashes = 0;
  /// Results of pairs that ran out of memory or time beside other pairs and were run again, with
  /// at most half as many beside them (alone at last).
  int retried = 0;
  /// Verified pairs judged at clipped sizes (their problem is over KCV_MAX_ELEMENTS).
  int clipped_sizes = 0;
  /// Verified pairs whose derived bound left some elements to the calibrated floor
  /// (KernelRow::bound_calibrated).
  int bound_calibrated = 0;
  /// Verified pairs whose derived bound left some elements free in class (KernelRow::bound_free).
  int bound_free = 0;
  /// Pairs of the shard with no result when the run returned: 0, unless it was asked to stop.
  int not_run = 0;
  /// CPU seconds of this invocation's verifiers and every process each waited for (first runs of
  /// retried pairs included).
  double cpu_seconds = 0;
  /// What became of CorpusOptions::torch_pch: "" (not asked), "ready after N s for F flag sets,
  /// P pairs started with it", or "not built: <why>".
  std::string torch_pch;
  /// The run seed (CorpusOptions::seed) and the reference cache: "DIR: R answers read, W
  /// computed and written, X rejected" over the pairs run now, or "off: <why>".
  uint64_t seed = 0;
  std::string reference_cache;
  /// The build cache: "DIR: H entries used, S stored, R rejected, F refused, W write failures"
  /// over the pairs run now, or "off: <why>".
  std::string build_cache;
  std::vector<GateFailureCount> gates;   // in the reports' gate order
  /// Issue 21 item 4 (stats.hpp, verdict_split): the verified pairs that fail, split into own
  /// calling convention / library op only / crash in every gate / not said; and the same among
  /// the pairs KernelBench's check accepts, beside the "any gate" and "tolerance-independent" counts.
  SplitCounts split;
  int accepted = 0, accepted_fail_any = 0, accepted_fail_tolerance_independent = 0;
  SplitCounts accepted_split;
  /// corpus_timing_summary over the results; null when no pair was asked to be timed.
  nlohmann::json timing;
};

/// fast_p's thresholds p (KernelBench's fast_0, fast_1, ...).
inline constexpr double kFastPThresholds[] = {0.0, 0.5, 0.8, 1.0, 1.5, 2.0};

/// Speedup and fast_p over corpus result records (docs/timing.md): pairs (the first result of
/// each key), correct (every one of the 12 gates passed), timed, correct but not timed, the
/// speedup's geomean/median/min/max over the timed pairs, and fast_p = the share of ALL pairs that
/// are correct and faster than p times the reference (KernelBench's definition; its "correct" is
/// here all 12 gates); the same against torch.compile'd references. Null when no pair's report
/// has a timing section.
nlohmann::json corpus_timing_summary(const std::vector<nlohmann::json>& records);

/// Summarizes the result records whose key is in keys (all results when keys is empty).
CorpusRunSummary summarize_results(const std::vector<nlohmann::json>& records, const std::vector<std::string>& keys = {});

/// Progress after each finished pair.
struct CorpusProgress {
  int done = 0, total = 0;       // over the shard, results from the journal included
  int ok = 0, fail = 0, err = 0; // verified pass, verified fail, anything else (setup, timeout, crash)
  int retries = 0;               // pairs queued to run again by this run (its retry records so far)
  double eta_s = -1;             // mean wall time per pair run now x remaining / jobs; -1 unknown
  std::string key, status;       // the pair that just finished, its journal status ("retry": queued again)
  std::string verdict;           // its report's verdict ("PASS", "FAIL") when verified, else ""
  double wall_s = 0;
};
using CorpusProgressCallback = std::function<void(const CorpusProgress&)>;

/// Runs (or resumes) a corpus run: appends a "run" record, then one "result" record per pair of
/// the shard that the journal does not hold yet. A pair's failure (setup error, timeout, crash) is
/// its record, never the run's. A pair that ran out of GPU memory while other pairs ran gets a
/// "retry" record instead and runs again after all the others, beside at most half as many, and so
/// on while it still runs out beside any; the result it gets alone, or beside others without running
/// out, is final and says why (retried, retried_beside_at_most; retried_alone when it ran alone).
/// Throws SetupError for usage and setup problems, and when the pairs are to be forked (no
/// explicit verifier) but this process has more than one thread: fork without exec is safe only
/// from a single-threaded process (corpus_run.cpp, pair_child).
/// on_pair runs in this process between forks: it must not leave threads behind.
CorpusRunSummary run_corpus(const CorpusOptions& options, const CorpusProgressCallback& on_pair = {});

/// Writes out/journal.jsonl from the journals of dirs: one "run" record naming them, then every
/// result once (a key held twice with identical records counts once). Throws SetupError when a
/// key is held twice with different contents, when a journal is missing, or when
/// out/journal.jsonl already exists (it is never overwritten). Returns the number of results.
int merge_corpora(const std::vector<std::string>& dirs, const std::string& out);

}  // namespace kcv
