// The engine: contract + candidate + backend → 12 gate verdicts. Gates make cases, the runner
// runs them in isolated workers, gates judge in this (parent) process.
#include "kcv/engine.hpp"

#include <stdlib.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <thread>
#include <mutex>
#include <shared_mutex>

#include <fmt/format.h>

#include "kcv/backends/host_backend.hpp"
#include "kcv/candidate.hpp"
#include "kcv/front_door.hpp"
#include "kcv/engine_steps.hpp"
#include "kcv/gate_run.hpp"
#include "kcv/part_clock.hpp"
#include "kcv/provenance.hpp"
#include "kcv/runner.hpp"
#include "kcv/sandbox.hpp"

namespace fs = std::filesystem;

namespace kcv {
namespace {

uint64_t splitmix(uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

const Contract& require_contract(const std::string& op) {
  const Contract* c = find_contract(op);
  if (!c) throw SetupError(fmt::format("unknown op '{}' (`kcv contracts` lists the ops)", op));
  return *c;
}

}  // namespace

RunnerOptions runner_options(const std::string& backend, const std::string& workdir, double timeout_s, uint64_t seed,
                             const Settings& settings) {
  RunnerOptions ro;
  ro.backend = backend;
  ro.worker = default_worker_path(settings);
  ro.workdir = workdir;
  ro.timeout_s = timeout_s;
  ro.canary_key = run_canary_key(seed);
  // Protections switched off for diagnosis (settings.sandbox_off, docs/security.md): recorded, and
  // a PASS is withheld.
  ro.settings = settings;
  if (!fs::exists(ro.worker)) throw SetupError(fmt::format("kcv-worker not found at {} (set KCV_WORKER)", ro.worker));
  return ro;
}

uint64_t fresh_seed() {
  uint64_t s = 0;
  FILE* f = std::fopen("/dev/urandom", "rb");
  if (!f || std::fread(&s, sizeof s, 1, f) != 1)
    s = static_cast<uint64_t>(std::chrono::steady_clock::now().time_since_epoch().count());
  if (f) std::fclose(f);
  return s;
}

void probe_backend(const std::string& backend, const std::string& workdir, double timeout_s, const Settings& settings) {
  if (!backend_named(backend).probes_device()) return;
  const Candidate nothing;  // no library: the worker only starts its backend
  Runner(nothing, runner_options(backend, workdir, timeout_s, 0, settings)).probe();
}

namespace {

/// What run_gate counts over a gate's cases as they are judged.
struct CaseTally {
  int64_t failing = 0, passed_with_note = 0, ran = 0;
  std::string first_note, first_graced;
};

/// The gate's verdict and evidence once its cases ran: the cross-case judgement (or PASS) when no
/// case failed, every failing label when several did, and the notes a reader needs beside it.
void conclude(const Gate& gate, const GateContext& ctx, const Runner& runner, const CaseJudgement& static_result,
              std::size_t planned, bool one_case, const CaseTally& t, const std::vector<Case>& kept_cases,
              const std::vector<CaseRun>& kept_runs, GateRun& out) {
  GateReport& rep = out.report;
  rep.cases = t.ran;
  if (rep.failing_case < 0 && !one_case) {
    CaseJudgement j = gate.judges_across() ? gate.judge_across(ctx, kept_cases, kept_runs) : CaseJudgement{};
    rep.verdict = j.verdict;
    rep.evidence = j.evidence;
  } else if (rep.failing_case < 0) {
    rep.verdict = Verdict::pass;
  } else if (t.failing > 1) {
    // Every failing case's label, compactly: a pattern (which sizes, which inputs) is the
    // diagnosis more often than the first case is.
    std::vector<std::string> failed, passed;
    for (std::size_t i = 0; i < out.labels.size(); ++i)
      (out.judgements[i].verdict == Verdict::pass ? passed : failed).push_back(out.labels[i]);
    rep.evidence += fmt::format(" [{} of {} cases failed: {}]", t.failing, rep.cases, summarize_cases(failed, passed));
  }
  // A pass that rests on cases without a strict comparison says so (layout: "handles strides" vs
  // "refused them"; KernelBench: inputs the reference itself rejects; a precision matter the
  // plain twin shares, docs/tolerance-independence.md; coverage: output that varies between runs
  // under the same poison).
  if (rep.verdict == Verdict::pass && t.passed_with_note > 0)
    rep.evidence = fmt::format("{} of {} cases passed without a strict comparison (a clean refusal, inputs the "
                               "reference rejects, outputs no further from the model than the plain call's, or "
                               "nondeterministic outputs); {}",
                               t.passed_with_note, rep.cases, t.first_note);
  if (const std::string note = gate.note(ctx); !note.empty())
    rep.evidence = rep.evidence.empty() ? note : rep.evidence + "; " + note;
  if (!static_result.evidence.empty())
    rep.evidence = rep.evidence.empty() ? static_result.evidence : rep.evidence + "; " + static_result.evidence;
  if (rep.compile_grace_calls > 0) {
    const RunnerOptions& ro = runner.options();
    const std::string graced = fmt::format(
        "{} call(s) outlasted the per-call timeout ({:g} s) as the first at their shape in their worker, within the "
        "compile grace ({:g} s; a JIT compiles there): {}",
        rep.compile_grace_calls, ro.timeout_s, ro.compile_grace_s, t.first_graced);
    rep.evidence = rep.evidence.empty() ? graced : rep.evidence + "; " + graced;
  }
  if (t.ran < static_cast<int64_t>(planned))
    rep.evidence += fmt::format(" [stopped after case {} of {}]", t.ran, planned);
}

}  // namespace

GateRun run_gate(const Gate& gate, const GateContext& ctx, Runner& runner, uint64_t seed,
                 std::optional<int64_t> only_case, int64_t chunk_bytes) {
  GateRun out;
  GateReport& rep = out.report;
  rep.id = std::string(gate.id());
  rep.tolerance_independent = gate.tolerance_independent();
  rep.seed = seed;
  const auto t0 = std::chrono::steady_clock::now();
  auto finish = [&] {
    rep.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  };
  // NOTES: a static check reads the build only; when it fails the cases are not run (an sm_100
  // kernel over its TMEM budget would block in tcgen05.alloc under every tool until the timeout).
  const CaseJudgement static_result = gate.static_check(ctx);
  if (static_result.verdict != Verdict::pass) {
    rep.verdict = static_result.verdict;
    rep.evidence = fmt::format("static check: {} [the gate's cases were not run]", static_result.evidence);
    finish();
    return out;
  }
  std::vector<CasePlan> plans = gate.plan(ctx, seed);
  if (plans.empty()) {
    rep.verdict = Verdict::skipped;
    rep.evidence = gate.skip_reason(ctx);
    finish();
    return out;
  }
  if (only_case) {
    if (*only_case < 0 || *only_case >= static_cast<int64_t>(plans.size()))
      throw SetupError(fmt::format("gate {} has {} cases; no case {}", gate.id(), plans.size(), *only_case));
    plans = {plans[static_cast<std::size_t>(*only_case)]};
  }
  // NOTES: cases are made, run and judged a chunk (at most chunk_bytes of staging, or one case)
  // at a time, and freed before the next chunk is made: the full-size cases of a large problem
  // (numerics, shapes, values) are then on the host one at a time, not all at once. A gate that
  // judges across cases keeps them all, in one chunk.
  const bool across = gate.judges_across();
  std::vector<Case> chunk, kept_cases;
  std::vector<CaseRun> kept_runs;
  CaseTally t;
  using Clock = std::chrono::steady_clock;
  const auto since = [](Clock::time_point a) { return std::chrono::duration<double>(Clock::now() - a).count(); };
  // A judgement's seconds less what its reference took (part_clock.hpp).
  const auto judged = [&](auto&& judge) {
    const auto j0 = Clock::now();
    const double r0 = reference_seconds_on_this_thread();
    auto result = judge();
    const double reference = reference_seconds_on_this_thread() - r0;
    rep.reference_seconds += reference;
    rep.judging_seconds += std::max(0.0, since(j0) - reference);
    return result;
  };
  int64_t staged = 0;
  bool stopped = false;  // a worker crashed or hung: the gate's later cases do not run
  auto run_chunk = [&] {
    const auto c0 = Clock::now();
    std::vector<CaseRun> runs = runner.run(chunk);
    rep.calls_seconds += since(c0);
    stopped = runs.size() < chunk.size() || (!runs.empty() && runs.back().status != RunStatus::ok);
    for (std::size_t i = 0; i < runs.size(); ++i) {
      const int64_t index = only_case ? *only_case : t.ran + static_cast<int64_t>(i);
      const CaseRun& run = runs[i];
      CaseJudgement j = judged([&] {
        return run.status == RunStatus::ok ? gate.judge(ctx, chunk[i], run) : gate.judge_abnormal(ctx, chunk[i], run);
      });
      if (j.worst && (!rep.worst || j.worst->ratio() > rep.worst->ratio())) rep.worst = j.worst;
      // NOTES: the placement is drawn from the run's seed and the case's label (replay redraws
      // it); said with a failure, for whoever reads why a candidate behaves differently there.
      if (j.verdict != Verdict::pass && !run.placement.empty()) j.evidence += " [buffers: " + run.placement + "]";
      if (j.verdict != Verdict::pass) {
        rep.failing.push_back({index, chunk[i].label, j.verdict, library_convention(chunk[i])});
        if (mentions_out_of_memory(run.log) || mentions_out_of_memory(j.evidence))
          rep.out_of_memory = true;
        if (run.out_of_time) rep.stopped_at_max_time = true;
        if (rep.failing_case < 0) {
          rep.failing_case = index;
          rep.verdict = j.verdict;
          rep.evidence = fmt::format("case {} ({}): {}", index, chunk[i].label, j.evidence);
        }
        ++t.failing;
      } else if (!j.evidence.empty() && t.passed_with_note++ == 0) {
        t.first_note = fmt::format("case {} ({}): {}", index, chunk[i].label, j.evidence);
      }
      for (std::size_t k = 0; k < run.calls.size(); ++k) {
        const double graced = run.calls[k].compile_grace_seconds;
        if (graced <= 0) continue;
        if (rep.compile_grace_calls++ == 0)
          t.first_graced = fmt::format("case {} ({}) call {} took {:.1f} s", index, chunk[i].label, k, graced);
      }
      out.labels.push_back(chunk[i].label);
      out.judgements.push_back(std::move(j));
    }
    t.ran += static_cast<int64_t>(runs.size());
    if (across) {
      for (auto& c : chunk) kept_cases.push_back(std::move(c));
      for (auto& r : runs) kept_runs.push_back(std::move(r));
    }
    chunk.clear();
    staged = 0;
  };
  for (std::size_t p = 0; p < plans.size() && !stopped; ++p) {
    if (!across && !chunk.empty() && staged + plans[p].staged_bytes > chunk_bytes) {
      run_chunk();
      if (stopped) break;
    }
    const auto m0 = Clock::now();
    chunk.push_back(plans[p].make());
    rep.make_seconds += since(m0);
    staged += staged_bytes(chunk.back());
  }
  if (!chunk.empty() && !stopped) run_chunk();
  judged([&] {
    conclude(gate, ctx, runner, static_result, plans.size(), only_case.has_value(), t, kept_cases, kept_runs, out);
    return 0;
  });
  finish();
  return out;
}

bool mentions_out_of_memory(std::string_view text) {
  // NOTES: what the allocators print when the GPU is full (seen on an H200 shared by 14
  // verifications): torch "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate ...",
  // "RuntimeError: CUDA error: out of memory", compute-sanitizer "Program hit
  // cudaErrorMemoryAllocation (error 2) due to "out of memory" ...", and the libraries'
  // CUBLAS_STATUS_ALLOC_FAILED / CUDNN_STATUS_ALLOC_FAILED.
  // The host: the kernel's out-of-memory killer, whose SIGKILL the runner names (session 7: two
  // racecheck workers of KernelBench's LSTMs held 33 GB each; dmesg showed the kill).
  // NOTES: a context the driver cannot make beside the others is "busy or unavailable"
  // (cudaErrorDevicesUnavailable; torch: "CUDA error: CUDA-capable device(s) is/are busy or
  // unavailable"), which CUDA's documentation gives for a device whose memory its active work holds
  // as well as for an exclusive compute mode: on an H100 shared by 14 reference controls (session
  // 40) two Models so refused finished as setup errors, where nine others, refused at the same
  // moment with cudaErrorMemoryAllocation, were queued to run again beside fewer pairs.
  static constexpr std::string_view kPhrases[] = {"CUDA out of memory",
                                                  "CUDA error: out of memory",
                                                  "cudaErrorMemoryAllocation",
                                                  "_STATUS_ALLOC_FAILED",
                                                  "cudaErrorDevicesUnavailable",
                                                  "CUDA_ERROR_DEVICES_UNAVAILABLE",
                                                  "is/are busy or unavailable",
                                                  kUnsentSigkill};
  for (std::string_view p : kPhrases)
    if (text.find(p) != std::string_view::npos) return true;
  return false;
}

uint64_t run_canary_key(uint64_t run_seed) { return splitmix(run_seed ^ 0xC0FFEEull); }

double& reference_seconds_on_this_thread() {
  thread_local double seconds = 0;
  return seconds;
}

uint64_t gate_seed(uint64_t run_seed, std::string_view gate_id) {
  uint64_t h = 1469598103934665603ull;  // FNV-1a of the id
  for (char c : gate_id) { h ^= static_cast<unsigned char>(c); h *= 1099511628211ull; }
  return splitmix(run_seed ^ h);
}

namespace {

/// verify's work once the options are checked, in workdir.
/// session_mu: a session's lock (KernelBenchSession), held shared through the gates and exclusive
/// through timing, so that no other verification of the session runs while one is timed.
/// pool: the session's workers made ahead for this verification (in workdir), adopted by its
/// runner; workers_started: called once the main worker has loaded the candidate (the session
/// starts the next verification's workers there).
Report verify_in(const VerifyOptions& o, const GateCallback& on_gate, FrontDoor& door, const std::string& workdir,
                 std::chrono::steady_clock::time_point deadline, std::shared_mutex* session_mu = nullptr,
                 WorkerPool* pool = nullptr, const std::function<void()>& workers_started = {});

}  // namespace

std::vector<WorkerOptions> standby_options(const VerifyOptions& o, const GateContext& ctx) {
  std::vector<WorkerOptions> extra;
  for (const auto& gate : all_gates())
    if (o.gates.empty() || std::find(o.gates.begin(), o.gates.end(), std::string(gate->id())) != o.gates.end())
      for (WorkerOptions& w : gate->worker_options(ctx)) extra.push_back(std::move(w));
  return extra;
}

Report verify(const VerifyOptions& o, const GateCallback& on_gate) {
  return verify_checked(o, on_gate, *front_door_for(o));
}

Report verify_checked(const VerifyOptions& o, const GateCallback& on_gate, FrontDoor& door,
                      std::shared_mutex* session_mu, std::unique_ptr<NextVerification> next,
                      const std::function<void()>& workers_started) {
  const auto t_start = std::chrono::steady_clock::now();
  if (o.timing && (o.timing_reps < kMinTimingReps || o.timing_reps > kMaxTimingReps))
    throw SetupError(fmt::format("--reps must be {}..{} (median and spread of at least {}), not {}", kMinTimingReps,
                                 kMaxTimingReps, kMinTimingReps, o.timing_reps));
  require_backend(o.backend);
  for (const auto& g : o.gates)
    if (!find_gate(g)) {
      std::string ids;
      for (const auto& gate : all_gates()) ids += (ids.empty() ? "" : ", ") + std::string(gate->id());
      throw SetupError(fmt::format("unknown gate '{}' (gates: {})", g, ids));
    }
  if (o.timeout_s <= 0) throw SetupError("--timeout must be positive");
  if (o.max_time_s < 0) throw SetupError("--max-time must be positive");
  if (o.compile_timeout_s <= 0) throw SetupError("--compile-timeout must be positive");
  const auto deadline = o.max_time_s > 0 ? t_start + std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                                                         std::chrono::duration<double>(o.max_time_s))
                                         : std::chrono::steady_clock::time_point::max();
  if (o.compile_grace_s && !(*o.compile_grace_s >= 0)) throw SetupError("--compile-grace must not be negative");
  // NOTES: a session's workdir made ahead holds its pooled workers; they are ended (pool, declared
  // after it) before it is removed.
  std::unique_ptr<Workdir> wd = next && o.workdir.empty() ? std::move(next->wd) : std::make_unique<Workdir>(o.workdir);
  std::unique_ptr<WorkerPool> pool = next && next->pool && o.workdir.empty() ? std::move(next->pool) : nullptr;
  try {
    return verify_in(o, on_gate, door, wd->path(), deadline, session_mu, pool.get(), workers_started);
  } catch (const BuildError&) {
    wd->keep();  // the error names the build log in it
    throw;
  }
}

namespace {

/// The runner's options for this verification, once the door has described and prepared the
/// candidate (its build under the compile limits, within --max-time), with what the report says
/// of the machine and of the bytes judged.
RunnerOptions prepare(const VerifyOptions& o, FrontDoor& door, const std::string& workdir, const std::string& probe_dir,
                      std::chrono::steady_clock::time_point deadline, Report& report) {
  // NOTES: hashed before anything is built from them: the report names the bytes it judged, and
  // replay refuses a file that changed since (issue 21 item 8).
  report.provenance = machine_provenance(o.backend);
  door.describe(report);
  probe_backend(o.backend, probe_dir, o.timeout_s, o.settings);
  RunnerOptions ro = runner_options(o.backend, workdir, o.timeout_s, report.seed, o.settings);
  ro.sandbox = o.sandbox;
  ro.deadline = deadline;
  ro.max_time_s = o.max_time_s;
  CaptureLimits compile = default_compile_limits();
  compile.seconds = o.compile_timeout_s;
  if (o.max_time_s > 0)
    compile.seconds = std::max(0.001, std::min(compile.seconds, std::chrono::duration<double>(deadline - std::chrono::steady_clock::now()).count()));
  door.prepare(workdir, ro, compile, report);
  const Candidate& candidate = door.candidate();
  if (o.compile_grace_s) ro.compile_grace_s = *o.compile_grace_s;
  // The bytes every build and worker use: the private copy's (the same as above unless the file
  // changed meanwhile), and what the copy holds.
  if (!candidate.source_copy().file.empty()) {
    report.provenance["candidate_sha256"] = candidate.sha256();
    report.provenance["candidate_copy"] = candidate.source_copy().describe();
  }
  return ro;
}

/// The 12 gates in DESIGN order, each run or SKIPPED (--gates), into report.gates; the verdict
/// covers the selected gates.
void run_gates(const VerifyOptions& o, const GateContext& ctx, Runner& runner, const GateCallback& on_gate,
               Report& report) {
  bool all_pass = true;
  for (const auto& gate : all_gates()) {
    GateReport rep;
    if (!o.gates.empty() && std::find(o.gates.begin(), o.gates.end(), std::string(gate->id())) == o.gates.end()) {
      rep.id = std::string(gate->id());
      rep.tolerance_independent = gate->tolerance_independent();
      rep.seed = gate_seed(report.seed, gate->id());
      rep.verdict = Verdict::skipped;
      rep.evidence = "not selected (--gates)";
    } else {
      rep = run_gate(*gate, ctx, runner, gate_seed(report.seed, gate->id()), std::nullopt).report;
      all_pass = all_pass && rep.verdict == Verdict::pass;
    }
    if (on_gate) on_gate(rep);
    report.gates.push_back(std::move(rep));
  }
  report.verdict = all_pass ? Verdict::pass : Verdict::fail;
}

/// The sandbox in force, into the report; a PASS stands only if the candidate could not have
/// tampered with kcv undetected (docs/security.md "When a PASS is withheld").
void judge_sandbox(const Runner& runner, Report& report) {
  const auto& f = runner.sandbox_in_force();
  if (!f) return;
  report.sandbox = f->to_json();
  report.sandbox["summary"] = f->summary();
  if (const std::string gap = f->tamper_gap(); !gap.empty() && report.verdict == Verdict::pass) {
    report.verdict = Verdict::fail;
    report.pass_withheld = "every gate passed, but tampering could not be excluded: " + gap;
  }
}

/// --timing: the door times a candidate that passed, holding the session exclusively (gates_lock
/// given up first); otherwise the report says why nothing was timed.
void time_if_passed(const VerifyOptions& o, FrontDoor& door, const RunnerOptions& ro, Report& report,
                    std::shared_lock<std::shared_mutex>& gates_lock, std::shared_mutex* session_mu) {
  if (report.verdict != Verdict::pass) {
    std::string failed;
    for (const auto& g : report.gates)
      if (g.verdict != Verdict::pass && g.verdict != Verdict::skipped) failed += (failed.empty() ? "" : ", ") + g.id;
    report.timing = timing_not_run(
        !report.pass_withheld.empty()
            ? "not timed: the PASS was withheld: " + report.pass_withheld
            : fmt::format("not timed: only a candidate that passes every selected gate is timed; not passed: {}", failed));
    return;
  }
  if (gates_lock.owns_lock()) gates_lock.unlock();
  std::unique_lock<std::shared_mutex> timing_lock;
  if (session_mu) timing_lock = std::unique_lock<std::shared_mutex>(*session_mu);
  TimingOptions t;
  t.reps = o.timing_reps;
  t.seed = splitmix(report.seed ^ 0x7133ull);
  t.call_timeout_s = o.timeout_s;
  report.timing = door.time(ro, t);
}

Report verify_in(const VerifyOptions& o, const GateCallback& on_gate, FrontDoor& door, const std::string& workdir,
                 std::chrono::steady_clock::time_point deadline, std::shared_mutex* session_mu, WorkerPool* pool,
                 const std::function<void()>& workers_started) {
  std::shared_lock<std::shared_mutex> gates_lock;
  if (session_mu) gates_lock = std::shared_lock<std::shared_mutex>(*session_mu);
  Report report;
  report.backend = o.backend;
  report.seed = o.seed ? *o.seed : fresh_seed();
  // NOTES: with pooled workers in the workdir, the probe's runner (whose workers are numbered from
  // 0 too) works in a directory of its own.
  const std::string probe_dir = pool ? (fs::path(workdir) / "backend-probe").string() : workdir;
  const RunnerOptions ro = prepare(o, door, workdir, probe_dir, deadline, report);
  {
    // NOTES: ended before timing: its session worker (the candidate's, idle) must not share the
    // device with the timed ones, nor write its directories after.
    Runner runner(door.candidate(), ro);
    const GateContext ctx{door.contract(), backend_named(o.backend), door.candidate()};
    // NOTES: the session's workers made ahead for this verification are taken first, each once its
    // spawn is proved equal to the one made here (docs/architecture.md "The session-wide pool").
    if (pool) runner.adopt(*pool);
    // NOTES: the workers the selected gates need beyond the main one start now, beside it, instead
    // of one after another when their gate comes (docs/architecture.md "Standby workers").
    runner.start_standby(standby_options(o, ctx));
    const auto t_load = std::chrono::steady_clock::now();
    runner.probe();
    if (workers_started) workers_started();
    door.loaded(runner, std::chrono::duration<double>(std::chrono::steady_clock::now() - t_load).count(), report);
    run_gates(o, ctx, runner, on_gate, report);
    door.gates_done(runner, report);
    judge_sandbox(runner, report);
  }
  if (o.timing) time_if_passed(o, door, ro, report, gates_lock, session_mu);
  door.workers_ended(workdir, report);
  return report;
}

}  // namespace

ReplayResult replay_case(const Contract& contract, const Candidate& candidate, const RunnerOptions& ro,
                         const std::string& backend, const Gate* gate, uint64_t seed, int64_t case_index) {
  Runner runner(candidate, ro);
  runner.probe();
  const GateContext ctx{contract, backend_named(backend), candidate};
  GateRun r = run_gate(*gate, ctx, runner, seed, case_index);
  ReplayResult out;
  out.label = r.labels.empty() ? "" : r.labels[0];
  if (r.report.verdict == Verdict::skipped && r.labels.empty()) {
    out.judgement = {Verdict::skipped, r.report.evidence};
  } else if (!r.judgements.empty()) {
    out.judgement = r.judgements[0];
  } else {
    out.judgement = {r.report.verdict, r.report.evidence};
  }
  return out;
}

const Gate* require_gate(const std::string& gate_id) {
  const Gate* gate = find_gate(gate_id);
  if (!gate) throw SetupError(fmt::format("unknown gate '{}'", gate_id));
  return gate;
}

ReplayResult replay(const std::string& op, const std::string& candidate_path, const std::string& backend,
                    const std::string& gate_id, uint64_t seed, int64_t case_index, double timeout_s,
                    const Settings& settings) {
  const Contract& contract = require_contract(op);
  require_backend(backend);
  const Gate* gate = require_gate(gate_id);
  Workdir wd("");
  try {
    probe_backend(backend, wd.path(), timeout_s, settings);
    const Candidate candidate = Candidate::prepare(candidate_path, backend, wd.path(), default_compile_limits(), settings);
    const RunnerOptions ro = runner_options(backend, wd.path(), timeout_s, seed, settings);
    return replay_case(contract, candidate, ro, backend, gate, seed, case_index);
  } catch (const BuildError&) {
    wd.keep();  // the error names the build log in it
    throw;
  }
}

}  // namespace kcv
