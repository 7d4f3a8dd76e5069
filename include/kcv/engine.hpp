/// The verifier: runs the 12 gates of DESIGN §5 over a candidate and returns the report.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "kcv/gate.hpp"

namespace kcv {

/// A case of a gate that did not pass.
struct FailingCase {
  int64_t index = 0;
  std::string label;
  Verdict verdict = Verdict::fail;
  /// The case calls the candidate only as a library op is called (library_convention, gate.hpp):
  /// a strided view, the caller's non-default stream, two callers at once. JSON "convention":
  /// "library"; otherwise "own" (the problem's own calling convention).
  bool library_convention = false;
};

struct GateReport {
  std::string id;
  Verdict verdict = Verdict::skipped;
  bool tolerance_independent = false;
  int64_t cases = 0;          // cases run
  double seconds = 0;
  std::string evidence;       // failures: case, index, got, expected, bound; skips: the reason
  uint64_t seed = 0;          // the gate's seed: (gate, case, seed) replays a case
  int64_t failing_case = -1;  // index of the first case that did not pass
  std::vector<FailingCase> failing;  // every case that did not pass, in case order
  /// Over the cases judged against the error model: the element with the largest error/bound.
  std::optional<WorstElement> worst;
  /// A case that did not pass ran out of device or host memory (its worker log, or the
  /// judgement's evidence, says so; mentions_out_of_memory): the verdict may depend on what else
  /// ran on the machine at the time.
  bool out_of_memory = false;
  /// Calls that outlasted the per-call timeout within their compile grace (first at their shape
  /// in their worker); the evidence names the first.
  int64_t compile_grace_calls = 0;

  /// Whether the gate did not pass (and was not skipped) in the problem's own calling convention:
  /// some failing case is not library_convention, or it failed across cases (no failing case).
  /// False for a gate that failed only in library-convention cases, or that did not fail.
  bool fails_own_convention() const {
    if (verdict == Verdict::pass || verdict == Verdict::skipped) return false;
    if (failing.empty()) return true;
    for (const FailingCase& f : failing)
      if (!f.library_convention) return true;
    return false;
  }
};

struct Report {
  std::string schema = "kcv.report/1";
  std::string op, candidate, backend;
  uint64_t seed = 0;
  Verdict verdict = Verdict::fail;   // pass or fail
  std::vector<GateReport> gates;     // all 12, DESIGN order
  /// KernelBench candidates: {problem, solution, python, compile_seconds, baseline?}; null otherwise.
  nlohmann::json kernelbench;
  /// The sandbox the workers ran in (the weakest of them; docs/security.md): what was in force,
  /// what the platform refused, and whether a PASS could stand. Null when no worker ran.
  nlohmann::json sandbox;
  /// Why every gate passed and the verdict is still FAIL (the sandbox could not exclude
  /// tampering, docs/security.md); empty otherwise.
  std::string pass_withheld;
  /// Honest timing (VerifyOptions::timing; docs/timing.md): {"timed": true, candidate,
  /// reference_eager, reference_compiled, speedup, ...} or {"timed": false, "reason"}; null when
  /// not asked.
  nlohmann::json timing;
  /// Where and from what the report came (issue 21 item 8; provenance.hpp): kcv_version,
  /// kcv_commit, host, backend, on cuda gpu/driver/cuda, for KernelBench torch/torch_cuda, and
  /// candidate_sha256 and candidate_path (absolute) of the judged file (KernelBench: the solution;
  /// also problem_sha256): once kcv made its private copy, the copy's hash, the bytes every build
  /// and worker used, and candidate_copy, what that copy holds ("its directory: N files", or the
  /// file alone and why; docs/security.md). Null in a report read from a kcv that did not write it.
  nlohmann::json provenance;
};

/// KernelBench candidates' compile grace unless --compile-grace says otherwise (seconds): a
/// torch.compile'd Model compiles at each new shape, minutes for a large network.
inline constexpr double kDefaultCompileGrace = 300;

struct VerifyOptions {
  std::string op;
  std::string candidate;
  std::string backend = "cpu";
  std::vector<std::string> gates;    // empty: all
  std::optional<uint64_t> seed;      // empty: drawn fresh
  double timeout_s = 10;             // per call
  /// The first call at each shape signature in a worker may take this long instead (a JIT
  /// compiles there: Inductor, Triton, NVRTC). Empty: kDefaultCompileGrace for KernelBench
  /// candidates, none (timeout_s) for ABI candidates.
  std::optional<double> compile_grace_s;
  std::string workdir;               // empty: a fresh temp dir, removed afterwards
  // KernelBench candidates (docs/kernelbench.md): set both files instead of op and candidate.
  std::string kernelbench_problem, kernelbench_solution;
  std::string python;                // interpreter with torch (empty: resolve_python's default)
  bool baseline = false;             // also run KernelBench's own check (--baseline kernelbench)
  double max_time_s = 0;             // the whole verification, wall clock (0: no limit)
  double compile_timeout_s = 300;    // the candidate's compile (each build), wall clock
  bool sandbox = true;               // false: --no-sandbox (a PASS is then withheld)
  /// KernelBench: a directory for the reference's answers, content-addressed, shared by every
  /// verification of the problem under the same seed (a corpus run's solutions, a resumed or
  /// sharded run; docs/kernelbench.md "Reference cache"). Empty: none. Needs kcv to run as root.
  std::string reference_cache;
  /// KernelBench candidates: once every selected gate passed, time the candidate and the
  /// reference (`kcv time`, docs/timing.md) into Report::timing; otherwise the section says why not.
  bool timing = false;
  int timing_reps = 30;              // timed repetitions per model, kMinTimingReps..kMaxTimingReps
};

/// Called after each gate finishes (for progress output).
using GateCallback = std::function<void(const GateReport&)>;

/// Runs the verification. Throws SetupError for usage/setup problems.
Report verify(const VerifyOptions& options, const GateCallback& on_gate = {});

/// One KernelBench problem kept warm across candidates (issue 22, docs/python-api.md): its reference
/// server starts once, and its answers are kept by case under one session seed, so the N-th
/// candidate costs its own build and calls. Candidates run in workers as in verify(); verify may
/// be called from several threads at once (the gates of each run side by side; a verification
/// being timed runs alone). Throws SetupError as verify does.
class KernelBenchSession {
 public:
  /// seed: the session's (every candidate's) run seed; empty: drawn fresh. cache_bytes: reference
  /// answers kept (0: KCV_REFERENCE_CACHE_BYTES, default a quarter of physical memory).
  KernelBenchSession(const std::string& problem, const std::string& backend, const std::string& python = "",
                     std::optional<uint64_t> seed = std::nullopt, std::size_t cache_bytes = 0);
  ~KernelBenchSession();
  KernelBenchSession(const KernelBenchSession&) = delete;
  KernelBenchSession& operator=(const KernelBenchSession&) = delete;
  /// The gates on `solution` against the session's problem; the options' problem, backend, python
  /// and seed are the session's (set there; others as given).
  Report verify(const std::string& solution, VerifyOptions options = {}, const GateCallback& on_gate = {});
  uint64_t seed() const;
  /// Reference answers served from the session's cache, and computed, so far; bytes kept.
  int64_t reference_hits() const;
  int64_t reference_misses() const;

 private:
  struct State;
  std::unique_ptr<State> s_;
};

/// Reruns one case of one gate exactly (same seed → same inputs) and returns its judgement.
struct ReplayResult {
  std::string label;
  CaseJudgement judgement;
};
ReplayResult replay(const std::string& op, const std::string& candidate, const std::string& backend,
                    const std::string& gate, uint64_t gate_seed, int64_t case_index, double timeout_s);
/// The same for a KernelBench candidate (the report's kernelbench.problem / .solution).
ReplayResult replay_kernelbench(const std::string& problem, const std::string& solution, const std::string& python,
                                const std::string& backend, const std::string& gate, uint64_t gate_seed,
                                int64_t case_index, double timeout_s);

/// Whether text (a worker log, a judgement's evidence, a verifier's error) says the device or the
/// host ran out of memory: torch's "CUDA out of memory" (torch.OutOfMemoryError), the runtime's
/// "CUDA error: out of memory", "cudaErrorMemoryAllocation" (e.g. compute-sanitizer's report of a
/// failed cudaMalloc), cuBLAS/cuDNN's "_STATUS_ALLOC_FAILED", and kUnsentSigkill (runner.hpp: the
/// kernel's out-of-memory killer). Plain case-sensitive substring searches, linear in the text
/// (fine on multi-MB logs).
bool mentions_out_of_memory(std::string_view text);

/// The seed of a gate within a run.
uint64_t gate_seed(uint64_t run_seed, std::string_view gate_id);
/// The key of a run's canaries and of its seeded buffer placements (RunnerOptions::canary_key).
uint64_t run_canary_key(uint64_t run_seed);

}  // namespace kcv
