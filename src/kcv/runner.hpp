// The parent side of isolation: runs cases in kcv-worker processes (DESIGN §5.1) and turns what
// comes back (records on a pipe, raw bytes in the memfd) into CaseRuns. Never judges.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include <optional>
#include <stdexcept>

#include <nlohmann/json.hpp>

#include "kcv/backends/host_backend.hpp"
#include "kcv/candidate.hpp"
#include "kcv/gate.hpp"
#include "kcv/sandbox.hpp"
#include "kcv/settings.hpp"

namespace kcv {

namespace isolation {
struct Context;
class DataFile;
struct Session;
}  // namespace isolation

struct RunnerOptions {
  std::string backend = "cpu";
  std::string worker;          // path of kcv-worker (default_worker_path(settings))
  std::string workdir;         // scratch space of this verification (worker cwds, logs)
  double timeout_s = 10;       // per call, wall clock (the load phase gets the same)
  uint64_t canary_key = 0;
  /// Until the worker says ready (imports, load_inline builds): at least this long. 0: timeout_s.
  double load_timeout_s = 0;
  /// The first call at a shape signature (bindings, input dtypes, shapes, strides, offsets,
  /// scalars) in a worker may run this long instead of timeout_s: a JIT compiles there (Inductor,
  /// Triton, NVRTC). Granted once per such call, from the plan, never from what the worker says.
  /// At most timeout_s: no grace. Once a call hangs through its grace, no later call gets one.
  double compile_grace_s = 0;
  /// KernelBench candidates: what the torch worker needs beyond the calls (problem, init_seed,
  /// argument template); docs/kernelbench.md.
  nlohmann::json kernelbench;
  /// Confine every worker (src/kcv/sandbox.hpp). false: --no-sandbox, and a PASS is withheld.
  bool sandbox = true;
  /// The overall limit (--max-time): past it no worker starts and a running one is ended; the
  /// case is a TIMEOUT that says so. The default: none.
  std::chrono::steady_clock::time_point deadline = std::chrono::steady_clock::time_point::max();
  double max_time_s = 0;
  /// What the workers' start reads beyond the above: sandbox_off (the report lists those
  /// protections and a PASS is withheld), standby (start_standby starts workers ahead: torch
  /// candidates, docs/architecture.md "Standby workers"), threads, adapters_dir,
  /// sanitizer_port_ranges. The worker's path is `worker` above.
  Settings settings;
};

/// Thrown when kcv was asked to stop (SIGINT/SIGTERM through request_stop): workers are ended
/// and the temporary files go with the unwinding.
class Interrupted : public std::runtime_error {
 public:
  explicit Interrupted(int sig) : std::runtime_error("interrupted"), signal(sig) {}
  int signal;
};
/// Async-signal-safe: called from the CLI's handler; the runner and the compiler waits notice.
void request_stop(int sig);
/// The signal that asked kcv to stop, or 0.
int stop_requested();

/// Path of kcv-worker: settings.worker, else beside the running executable, else the build tree's.
std::string default_worker_path(const Settings& settings);

/// CPU threads a candidate (and the torch reference server) gets unless a case asks otherwise:
/// settings.threads when positive, else the machine's cores.
/// `kcv corpus run --jobs N` sets its verifiers' KCV_THREADS to cores/N: N torch processes with a
/// thread per core each would spin on each other's cores.
int default_threads(const Settings& settings);

/// RLIMIT_AS of an unsanitized cpu worker: 32 GiB or three quarters of the machine's memory,
/// whichever is less (a runaway candidate meets its own limit before the host's OOM killer).
int64_t default_address_space_limit();

/// How a worker's (or verifier's) death by a SIGKILL that kcv did not send is worded. On Linux
/// that signal comes from the kernel's out-of-memory killer (or an operator); kcv sends SIGKILL
/// only at timeouts and to workers that outstay their grace, and says so then.
inline constexpr const char* kUnsentSigkill =
    "a SIGKILL kcv did not send (the kernel's out-of-memory killer sends it when host memory runs out)";

/// Whether a worker's wait status (and, under compute-sanitizer, its log) says SIGKILL ended it.
/// The runner words it as kUnsentSigkill unless it timed the worker out or killed it itself.
bool killed_by_sigkill(int status, bool under_compute_sanitizer, const std::string& log);

/// Whether a SIGKILL kcv did not send may be the host's out-of-memory killer's: the host counted
/// an OOM kill (/proc/vmstat oom_kill) between the worker's start and its death, or a count is
/// unknown (-1). Otherwise it came from inside the sandbox (a candidate's kill(0, SIGKILL)) and
/// is named so, without kUnsentSigkill's words.
bool oom_kill_possible(int64_t oom_kills_before, int64_t oom_kills_after);

/// A TCP port range of its own for a compute-sanitizer outside a network namespace of its own:
/// the value for its `--port` (the range is 10 wide, `--max-connections 10`), held by an flock on
/// *lock_fd until that is closed; -1 (no fd) when every range is held. Shared by every kcv on the
/// host through /tmp/kcv-sanitizer-ports.
int sanitizer_port_range(int* lock_fd);

/// Host bytes a batch of cases may stage at once (each buffer twice: what goes in, and the
/// snapshot that comes back). The runner starts a new batch past it; the engine makes, runs and
/// judges a gate's cases in chunks of this size.
inline constexpr int64_t kBatchBytes = int64_t(512) << 20;

/// What staging a case takes: twice the bytes of every input and output of every call.
int64_t staged_bytes(const Case& c);

class Runner;

/// The session-wide pool (docs/architecture.md "The session-wide pool"): the workers a
/// verification of `expected` under `options` would start — the standby workers of `extra`, then
/// the main one (WorkerOptions{}) — started here and now, numbered as that verification's Runner
/// numbers them, each importing torch and reading no candidate. A later verification's Runner
/// takes them (Runner::adopt) once it has proved each one's spawn equal to its own. Started on
/// the thread that will verify next (pdeathsig: a worker dies when the thread that started it ends).
class WorkerPool {
 public:
  WorkerPool(const Candidate& expected, RunnerOptions options, const std::vector<WorkerOptions>& extra);
  ~WorkerPool();  // ends the workers not taken (none has read a candidate)
  WorkerPool(const WorkerPool&) = delete;
  WorkerPool& operator=(const WorkerPool&) = delete;
  /// Workers waiting, and why others could not start.
  int size() const;
  const std::vector<std::string>& not_started() const { return not_started_; }
  /// The thread that started them: only a verification on it may take them.
  std::thread::id thread() const { return thread_; }

 private:
  friend class Runner;
  std::vector<isolation::Session> workers_;
  std::vector<std::string> not_started_;
  std::thread::id thread_;
};

class Runner {
 public:
  Runner(const Candidate& candidate, RunnerOptions options);
  ~Runner();
  Runner(const Runner&) = delete;
  Runner& operator=(const Runner&) = delete;
  /// Loads the candidate in a worker without calling it. Throws SetupError when it cannot be
  /// loaded or lacks kcv_run or declares another ABI version; a candidate that crashes while
  /// loading is left to the gates (they report CRASH).
  void probe();
  /// Starts one standby worker per option (other than the default one and those already
  /// started), here and now; their imports run in them, beside everything else. Each imports
  /// torch, reads no candidate and waits for the first batch of its options, which it then runs as
  /// that batch's new worker. A torch candidate only (a kcv-worker starts in milliseconds), and
  /// only with options().settings.standby. One that fails before it is ready is ended, and its batch starts
  /// a worker of its own as without it.
  void start_standby(const std::vector<WorkerOptions>& options);
  /// Takes the pool's workers whose spawn equals the one this runner would make for their
  /// options and number (isolation::spawn_matches) as its standby workers (the main one too: the
  /// probe's batch goes to it); ends the others, reported in pool_unused(). The pool is left empty.
  void adopt(WorkerPool& pool);
  /// Pooled workers offered, taken (spawn proved equal), and used (ran a batch); why the others
  /// were not used; whether the main worker was a pooled one, and how long before adopt() it was
  /// started (seconds; negative: not pooled).
  int pool_offered() const { return pool_offered_; }
  int pool_taken() const { return static_cast<int>(pooled_.size()); }
  int pool_used() const { return pool_used_; }
  const std::vector<std::string>& pool_unused() const { return pool_unused_; }
  double pool_main_age_s() const { return pool_main_age_s_; }
  /// Standby workers started, and those that ran a batch.
  int standby_started() const { return standby_started_; }
  int standby_used() const { return standby_used_; }
  /// Why a standby worker a batch looked for was not used (its options and the reason), in order.
  const std::vector<std::string>& standby_unused() const { return standby_unused_; }
  /// Runs the cases in order, batching consecutive cases with the same worker options into one
  /// worker. Stops after the first case whose worker crashed or timed out: the result has one
  /// CaseRun per case run, that one last.
  std::vector<CaseRun> run(const std::vector<Case>& cases);
  /// Workers started so far (sessions count once, however many batches they ran).
  int workers_started() const { return serial_; }
  /// Data memfds made so far (a session's batches that fit reuse its last one).
  int data_files_made() const { return data_files_made_; }
  /// The weakest sandbox any worker of this runner had (docs/security.md); none started: null.
  const std::optional<sandbox::InForce>& sandbox_in_force() const { return in_force_; }
  const RunnerOptions& options() const { return opt_; }

 private:
  friend class WorkerPool;
  /// One batch of cases with the same worker options in one worker (src/kcv/isolation/).
  std::vector<CaseRun> run_batch(const std::vector<const Case*>& batch, const WorkerOptions& opts);
  /// The waiting session worker of ctx's options, handed the data file, or a fresh worker on it
  /// (*reused: the former).
  isolation::Session worker_for(const isolation::Context& ctx, const isolation::DataFile& data, bool* reused);
  const Candidate& candidate_;
  RunnerOptions opt_;
  /// How opt_.backend's workers run.
  const Backend& backend_;
  int serial_ = 0;
  int data_files_made_ = 0;
  std::optional<sandbox::InForce> in_force_;
  /// A call hung through its compile grace: no later call of this runner gets one (a compile that
  /// never ends is a hang; each further hang costs the per-call timeout, not the grace).
  bool grace_spent_ = false;
  /// Workers kept between batches (torch candidates, unsanitized; one per worker options): each
  /// said `idle` and waits on its session socket for the next data file. Ended by the destructor
  /// or by any abnormal batch.
  std::vector<isolation::Session> sessions_;
  /// Standby workers (importing torch, or idle): each is taken by the first batch of its options.
  std::vector<isolation::Session> standby_;
  int standby_started_ = 0, standby_used_ = 0;
  std::vector<std::string> standby_unused_;
  /// Serials of the standby workers that came from a pool (adopt), and the pool's counts.
  std::set<int> pooled_;
  int pool_offered_ = 0, pool_used_ = 0;
  double pool_main_age_s_ = -1;
  std::vector<std::string> pool_unused_;
  /// Starts one standby worker of options o, numbered serial_++.
  void start_one_standby(const WorkerOptions& o, std::vector<std::string>* unused);
  /// The batch context of worker options wopts (what the worker loads, how it runs).
  isolation::Context context_for(const WorkerOptions& wopts) const;
};

}  // namespace kcv
