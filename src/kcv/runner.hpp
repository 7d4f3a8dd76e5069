// The parent side of isolation: runs cases in kcv-worker processes (DESIGN §5.1) and turns what
// comes back (records on a pipe, raw bytes in the memfd) into CaseRuns. Never judges.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "kcv/candidate.hpp"
#include "kcv/gate.hpp"

namespace kcv {

struct RunnerOptions {
  std::string backend = "cpu";
  std::string worker;          // path of kcv-worker
  std::string workdir;         // scratch space of this verification (worker cwds, logs)
  double timeout_s = 10;       // per call, wall clock (the load phase gets the same)
  uint64_t canary_key = 0;
  /// Until the worker says ready (imports, load_inline builds): at least this long. 0: timeout_s.
  double load_timeout_s = 0;
  /// KernelBench candidates: what the torch worker needs beyond the calls (problem, init_seed,
  /// argument template); docs/kernelbench.md.
  nlohmann::json kernelbench;
};

/// Path of kcv-worker: env KCV_WORKER, else beside the running executable, else the build tree's.
std::string default_worker_path();

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

 private:
  /// A worker kept between batches (torch candidates, unsanitized; one per worker options): it
  /// said `idle` and waits on its session socket for the next memfd. Ended by the destructor or
  /// by any abnormal batch.
  struct Session {
    pid_t pid = -1;
    int result_fd = -1, ctl_fd = -1;
    WorkerOptions options;
    std::string cwd, log;
    int64_t log_offset = 0;
  };
  std::vector<CaseRun> run_batch(const std::vector<const Case*>& batch, const WorkerOptions& opts);
  /// Closes a worker's pipes, gives it grace_s to exit by itself, kills its whole group and
  /// removes its cwd. Returns its wait status.
  int end_worker(const Session& w, double grace_s);
  const Candidate& candidate_;
  RunnerOptions opt_;
  int serial_ = 0;
  std::vector<Session> sessions_;
};

}  // namespace kcv
