// The parent side of isolation: runs cases in kcv-worker processes (DESIGN §5.1) and turns what
// comes back (records on a pipe, raw bytes in the memfd) into CaseRuns. Never judges.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <set>
#include <string>
#include <vector>

#include <optional>
#include <stdexcept>

#include <nlohmann/json.hpp>

#include "kcv/backends/host_backend.hpp"
#include "kcv/candidate.hpp"
#include "kcv/gate.hpp"
#include "kcv/sandbox.hpp"

namespace kcv {

namespace isolation {
struct Context;
class DataFile;
struct Session;
}  // namespace isolation

struct RunnerOptions {
  std::string backend = "cpu";
  std::string worker;          // path of kcv-worker
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
  /// Protections switched off for diagnosis (sandbox::Protection bits; env KCV_SANDBOX_OFF): the
  /// report lists them and a PASS is withheld.
  uint32_t sandbox_off = 0;
  /// The overall limit (--max-time): past it no worker starts and a running one is ended; the
  /// case is a TIMEOUT that says so. The default: none.
  std::chrono::steady_clock::time_point deadline = std::chrono::steady_clock::time_point::max();
  double max_time_s = 0;
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

/// Path of kcv-worker: env KCV_WORKER, else beside the running executable, else the build tree's.
std::string default_worker_path();

/// CPU threads a candidate (and the torch reference server) gets unless a case asks otherwise:
/// env KCV_THREADS (a positive integer; anything else is a SetupError), else the machine's cores.
/// `kcv corpus run --jobs N` sets it to cores/N for its verifiers: N torch processes with a
/// thread per core each would spin on each other's cores.
int default_threads();

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
};

}  // namespace kcv
