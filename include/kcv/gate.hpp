/// Gates: each is a small class that makes its cases (deterministically from a seed, so that any
/// case replays) and judges what the candidate did with them. The engine runs the cases in an
/// isolated worker and never lets a gate see the candidate's process.
#pragma once

#include <cmath>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "kcv/contract.hpp"
#include "kcv/error_model.hpp"
#include "kcv/tensor.hpp"

namespace kcv {

enum class Verdict { pass, fail, crash, timeout, refused, skipped };
const char* verdict_name(Verdict v);

/// One kcv_run invocation.
struct CallSpec {
  std::vector<HostTensor> inputs;      // values and layout exactly as the candidate sees them
  std::vector<HostTensor> outputs;     // layout and initial contents (poison) of the outputs
  std::vector<double> scalars;
  int reuse_buffers_of = -1;           // an earlier call of the same case: same addresses, new contents
  /// Tolerance-independent gates (docs/tolerance-independence.md): a call of the same case with
  /// the same input values in the plain setting (contiguous, fresh addresses, no writer kernel,
  /// alone; a plain call names itself). An element the model rejects still passes when it is no
  /// further from the model than the twin's worst element. -1: judged against the model alone.
  int plain_twin = -1;
  bool concurrent_with_next = false;   // cpu: this call and the next run at once on two threads
  bool writer_kernel = false;          // cuda: a kernel on the caller's stream writes the inputs just before
  bool background_load = false;        // cuda: a load kernel on another stream runs during the call
  /// How production calls (issue 26; gates/common.hpp, vary_calling). cuda: the candidate gets the
  /// null stream handle (the legacy default stream) instead of kcv's own non-blocking stream; the
  /// writer kernel, when there is one, runs on it too.
  bool null_stream = false;
  /// cuda: every buffer of the call is its own cudaMalloc of exactly its span: no guard bands (their
  /// guard reports say intact), nothing that tells it from a plain allocation; compute-sanitizer
  /// memcheck sees an access one element past it as out of bounds.
  bool exact_buffers = false;
  /// kcv's fixed placement of every buffer (the bounds gate's): cpu, outputs start on a page
  /// boundary after their leading guard band, inputs end flush against their PROT_NONE page; cuda,
  /// every buffer starts 4 KiB past its cudaMalloc'd base and ends 4 KiB before its end. Otherwise
  /// the runner places each buffer at an offset drawn from the run's key and the case's label (cpu:
  /// within its page, and in a share of the cases the outputs end against a PROT_NONE page; cuda: a
  /// multiple of 512 bytes up to 64 KiB past its leading guard band, the allocation ending a drawn
  /// distance past the trailing one) (issue 25 class 3; isolation/stage.cpp, placement; the
  /// backend's PlacementRule). Torch workers keep their own placement.
  bool fixed_placement = false;
  /// A long run: before this call the worker makes this many unjudged calls of it (same buffers,
  /// same inputs, same stream; none synchronized on its own), then uploads the inputs and the
  /// output poison again and makes the call that comes back. One worker makes them all.
  int64_t calls_before = 0;
  /// Large tier (shapes gate, cuda): the tensors carry shape and strides but no storage; input k
  /// holds protocol::large_tier_value(large_seed + k, i), outputs are poisoned on the device, and
  /// only the logical output indices in samples (plus every guard band) come back.
  bool large = false;
  uint64_t large_seed = 0;
  std::vector<int64_t> samples;
};

/// How the worker process that runs a case is set up.
struct WorkerOptions {
  int threads = 0;         // OMP_NUM_THREADS etc. for the candidate; 0 = the machine's cores
  bool sanitized = false;  // sanitizer build of the candidate (cpu) / compute-sanitizer (cuda)
  std::string sanitizer_tool;  // cuda: memcheck, racecheck, initcheck, synccheck
  /// Cases of different tags never share a worker (a long run counts its calls from the first).
  int tag = 0;
  bool operator==(const WorkerOptions&) const = default;
};

struct Case {
  std::string label;               // what is special about it: "N=1021", "scaled 1e4", ...
  Bindings shape;
  std::vector<CallSpec> calls;
  WorkerOptions worker;
  /// The inputs are independent random draws (value_kind::is_random): numerics, shapes and values
  /// also run the population test on such cases (docs/population-test.md).
  bool random_inputs = false;
};

struct GuardReport {
  bool intact = true;
  int64_t first_bad = 0;    // byte offset from the buffer's first byte (negative: before it)
  int64_t bad_bytes = 0;
};

struct CallResult {
  bool ran = false;                     // the worker reported the call finished
  int rc = 0;                           // kcv_run's return value
  std::string message;                  // the candidate's error text (refusals)
  double seconds = 0;
  /// Wall seconds (the parent's clock) of a call that outlasted the per-call timeout as the first
  /// at its shape signature in its worker, within the compile grace; 0 for every other call.
  double compile_grace_seconds = 0;
  std::vector<HostTensor> inputs_after;   // input storage as it was after the call
  std::vector<HostTensor> outputs;        // output storage as it was after the call
  std::vector<GuardReport> input_guards, output_guards;
};

/// side_effect: the call left something behind (a process, a file outside the worker's cwd, an
/// output still being written after it returned) or changed what it must leave alone (a fault
/// signal's handler, the inaccessible page after an input).
enum class RunStatus { ok, crash, timeout, side_effect };

/// Where a cpu worker's SIGSEGV/SIGBUS hit, when the address lies in one of the case's buffers
/// (guard bands and the inaccessible page after each input included).
struct Fault {
  bool known = false;
  bool input = false;
  int call = 0, arg = 0;
  int64_t offset = 0;    // bytes from the buffer's first data byte (negative: before it)
};

struct CaseRun {
  RunStatus status = RunStatus::ok;
  Fault fault;
  std::string detail;               // for crash/timeout: signal, exit status, the call it died in
  std::vector<CallResult> calls;    // one per CallSpec (calls after a crash have ran == false)
  std::string log;                  // the worker's stderr (candidate output, sanitizer reports), capped
  /// Where the runner placed the case's buffers when it varied them (CallSpec::fixed_placement),
  /// for the evidence of a failing case; empty when it did not.
  std::string placement;
  /// A timeout that was the overall limit (--max-time) running out, not the case's own calls
  /// outlasting the per-call timeout: the run's budget, not a fact about the candidate.
  bool out_of_time = false;
};

/// The element closest to (or furthest past) its bound in a comparison: error and bound.
struct WorstElement {
  double error = 0, bound = 0;
  double ratio() const { return bound > 0 ? error / bound : (error > 0 ? INFINITY : 0.0); }
};

struct CaseJudgement {
  // NOTES: a constructor, not an aggregate: most judgements are {verdict, evidence}, and an
  // aggregate initialized so warns (-Wmissing-field-initializers) for the worst element.
  CaseJudgement() = default;
  CaseJudgement(Verdict v, std::string e, std::optional<WorstElement> w = std::nullopt)
      : verdict(v), evidence(std::move(e)), worst(std::move(w)) {}

  Verdict verdict = Verdict::pass;
  std::string evidence;             // empty on pass
  std::optional<WorstElement> worst;  // judged against the error model: the worst element
};

/// A case not made yet. The engine makes a gate's cases a chunk at a time (runner.hpp,
/// kBatchBytes), runs and judges the chunk, and frees it before making the next: a gate whose
/// cases hold full-size tensors of a large problem never holds them all at once.
struct CasePlan {
  std::string label;
  std::function<Case()> make;
  int64_t staged_bytes = 0;  // what staging the made case takes (runner.hpp, staged_bytes), known ahead
};

/// Whether a case calls the candidate only as a library op is called, not as the problem's own
/// caller does (issue 21 item 4; docs/architecture.md "Own calling convention"): one of its calls
/// takes an input as a strided or offset view (layout), has its inputs written on the caller's
/// non-default stream just before it (concurrency on cuda, not the null-stream rounds), or runs
/// beside another caller at once (concurrency on cpu). Every other case is the problem's own
/// convention: contiguous inputs, the default stream (or the stream the ABI hands over), one caller.
bool library_convention(const Case& c);

/// Plans that make cases one by one: plan i makes cases[i] (each plan called at most once).
std::vector<CasePlan> plans_of(std::vector<Case> cases);
/// Every planned case made, in order.
std::vector<Case> make_all(const std::vector<CasePlan>& plans);

class Candidate;
class Backend;

struct GateContext {
  const Contract& contract;
  /// What the gates ask of the device (kcv/backends/host_backend.hpp): they compare no names.
  const Backend& backend;
  const Candidate& candidate;
};

class Gate {
 public:
  virtual ~Gate() = default;
  virtual std::string_view id() const = 0;
  virtual std::string_view summary() const = 0;
  virtual bool tolerance_independent() const = 0;
  /// Deterministic in (contract, backend, seed): replay regenerates the same cases.
  virtual std::vector<Case> cases(const GateContext& ctx, uint64_t seed) const = 0;
  /// The same cases, made only when the engine asks. Default: cases(), made at once. Gates whose
  /// cases are full-size override it (and make cases() from it).
  virtual std::vector<CasePlan> plan(const GateContext& ctx, uint64_t seed) const { return plans_of(cases(ctx, seed)); }
  /// The worker options its cases run under other than the default WorkerOptions{}, known before
  /// any case is made (the same for every seed): the engine starts those workers beside the main
  /// one (docs/architecture.md "Standby workers"). A test holds it equal to what cases() uses; one
  /// left out costs time, never a verdict. Default: none.
  virtual std::vector<WorkerOptions> worker_options(const GateContext&) const { return {}; }
  /// What the gate left out and why (e.g. shapes the contract rejects), said beside its verdict.
  virtual std::string note(const GateContext&) const { return {}; }
  /// A check of the candidate's build that runs nothing (sanitizer: the TMEM check of an sm_100
  /// candidate), made before the cases. FAIL ends the gate there, its cases not run; a pass's
  /// evidence is said beside the gate's verdict. Default: nothing to check.
  virtual CaseJudgement static_check(const GateContext&) const { return {}; }
  /// Why there are no cases here; reported as SKIPPED (never PASS).
  virtual std::string skip_reason(const GateContext&) const { return "no applicable cases"; }
  /// Judges a case the worker ran to the end (status ok).
  virtual CaseJudgement judge(const GateContext& ctx, const Case& c, const CaseRun& run) const = 0;
  /// Judges a case whose worker crashed or timed out. Default: CRASH / TIMEOUT with the detail.
  virtual CaseJudgement judge_abnormal(const GateContext& ctx, const Case& c, const CaseRun& run) const;
  /// True when the gate judges across cases: the engine then holds all of its cases and runs at
  /// once (one chunk) and calls judge_across. Such a gate's cases should stay small.
  virtual bool judges_across() const { return false; }
  /// Judges what only shows across cases (e.g. determinism across thread counts), after every case
  /// ran to the end and passed on its own; only called when judges_across(). Default: pass.
  virtual CaseJudgement judge_across(const GateContext& ctx, const std::vector<Case>& cases,
                                     const std::vector<CaseRun>& runs) const {
    return {};
  }
};

/// The 12 gates in DESIGN order.
const std::vector<std::unique_ptr<Gate>>& all_gates();
const Gate* find_gate(std::string_view id);

}  // namespace kcv
