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
#include "kcv/kernelbench_door.hpp"
#include "kcv/settings.hpp"

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
  /// Where the seconds went (src/kcv/part_clock.hpp): making the cases (inputs drawn, staged),
  /// running them in workers (the calls, transfers included), getting the reference's answers
  /// (KernelBench: server, disk cache, decoding; a builtin contract's fp64 reference is judging),
  /// and judging. The rest of `seconds` is planning and the static check.
  double make_seconds = 0, calls_seconds = 0, reference_seconds = 0, judging_seconds = 0;
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
  /// A case that did not pass was stopped by the overall limit (--max-time), not by its own calls
  /// (CaseRun::out_of_time): the gate's TIMEOUT says how long the run was allowed, not how long
  /// the candidate takes. A corpus run retries a per-call TIMEOUT beside other pairs, never this.
  bool stopped_at_max_time = false;
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
  /// The KernelBench front door's section (kernelbench_door.hpp); empty for another door's candidate.
  std::optional<KernelBenchReport> kernelbench;
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
  double max_time_s = 0;             // the whole verification, wall clock (0: no limit)
  double compile_timeout_s = 300;    // the candidate's compile (each build), wall clock
  bool sandbox = true;               // false: --no-sandbox (a PASS is then withheld)
  /// A KernelBench pair instead of op and candidate (kernelbench_door.hpp, docs/kernelbench.md).
  KernelBenchOptions kernelbench;
  /// Once every selected gate passed, time the candidate and the reference (`kcv time`,
  /// docs/timing.md) into Report::timing; otherwise the section says why not. Only a door with a
  /// reference to time against (KernelBench) takes it.
  bool timing = false;
  int timing_reps = 30;              // timed repetitions per model, kMinTimingReps..kMaxTimingReps
  /// Worker, paths, threads, sandbox switches, ... (settings.hpp; the CLI maps the environment's
  /// KCV_* onto them). Default: kcv's defaults, whatever the environment says.
  Settings settings;
};

/// Called after each gate finishes (for progress output).
using GateCallback = std::function<void(const GateReport&)>;

/// Runs the verification. Throws SetupError for usage/setup problems.
Report verify(const VerifyOptions& options, const GateCallback& on_gate = {});

/// Reruns one case of one gate exactly (same seed → same inputs) and returns its judgement.
struct ReplayResult {
  std::string label;
  CaseJudgement judgement;
};
ReplayResult replay(const std::string& op, const std::string& candidate, const std::string& backend,
                    const std::string& gate, uint64_t gate_seed, int64_t case_index, double timeout_s,
                    const Settings& settings = {});
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
