// A KernelBench problem kept warm across candidates (kcv/kernelbench_session.hpp), and the replay
// of one case of a KernelBench candidate: the KernelBench front door's own entry points, over the
// engine's steps (engine_steps.hpp).
#include "kcv/kernelbench_session.hpp"

#include <unistd.h>

#include <filesystem>
#include <functional>
#include <memory>
#include <mutex>
#include <shared_mutex>
#include <thread>

#include <fmt/format.h>

#include "kcv/backends/host_backend.hpp"
#include "kcv/engine_steps.hpp"
#include "kcv/front_door.hpp"
#include "kcv/kernelbench.hpp"

namespace fs = std::filesystem;

namespace kcv {

struct KernelBenchSession::State {
  std::string problem, backend, python;
  uint64_t seed = 0;
  Workdir wd{""};  // the reference server's log; removed with the session
  std::unique_ptr<KernelBenchContract> contract;
  // NOTES: verifications of a session run at once (verify_many's jobs), each with its own runner,
  // workdir and gates, sharing the contract (its reference server and cache lock themselves):
  // shared through the gates, exclusive while one is timed (docs/timing.md).
  std::shared_mutex mu;
  /// The next verification's workdir and workers (docs/architecture.md "The session-wide pool");
  /// Settings::pool false (KCV_POOL=0): none. Ended with the session (declared last: destroyed first).
  bool pool_on = true;
  /// Start it while a verification runs (Settings::pool_start during; by_cores: where the host has
  /// at least 8 cores), else as it returns (after).
  bool pool_early = true;
  std::mutex next_mu;
  std::unique_ptr<NextVerification> next;

  /// Starts the next verification's workers unless some are waiting: as a verification of
  /// `solution` under `o` (the one just begun) would start them. Never throws: without a pool the
  /// next verification starts its own.
  void start_next(const std::string& solution, const VerifyOptions& o) {
    if (!pool_on || !o.workdir.empty()) return;
    std::lock_guard<std::mutex> lock(next_mu);
    if (next) return;
    try {
      auto n = std::make_unique<NextVerification>();
      n->wd = std::make_unique<Workdir>("");
      const Candidate expected = Candidate::kernelbench_expected(problem, solution, python, n->wd->path());
      RunnerOptions ro = runner_options(backend, n->wd->path(), o.timeout_s, 0, o.settings);
      ro.sandbox = o.sandbox;
      const GateContext ctx{*contract, backend_named(backend), expected};
      n->pool = std::make_unique<WorkerPool>(expected, std::move(ro), standby_options(o, ctx));
      next = std::move(n);
    } catch (const std::exception&) {
      // no pool: the next verification starts its workers itself, as kcv verify does
    }
  }
};

KernelBenchSession::KernelBenchSession(const std::string& problem, const std::string& backend,
                                       const std::string& python, std::optional<uint64_t> seed,
                                       std::size_t cache_bytes, const Settings& settings)
    : s_(std::make_unique<State>()) {
  if (problem.empty() || !fs::is_regular_file(problem))
    throw SetupError(fmt::format("kernelbench session: no problem file '{}'", problem));
  require_backend(backend);
  const KernelBenchSetup setup = kernelbench_setup(problem, python, backend, s_->wd.path(), settings);
  s_->problem = setup.problem;
  s_->backend = backend;
  s_->python = setup.python;
  s_->seed = seed ? *seed : fresh_seed();
  s_->contract = KernelBenchContract::create(setup);
  if (cache_bytes == 0) cache_bytes = static_cast<std::size_t>(settings.reference_cache_bytes);
  if (cache_bytes == 0) {
    // NOTES: a quarter of physical memory unless the caller or Settings::reference_cache_bytes
    // says otherwise: the answers are float64 copies of every case's outputs, both orders
    // (docs/python-api.md).
    const long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
    cache_bytes = static_cast<std::size_t>(pages > 0 && page > 0 ? int64_t(pages) * page / 4 : int64_t(1) << 30);
  }
  s_->contract->keep_references(cache_bytes);
  s_->pool_on = settings.pool;
  s_->pool_early = settings.pool_start == PoolStart::by_cores ? sysconf(_SC_NPROCESSORS_ONLN) >= 8
                                                              : settings.pool_start == PoolStart::during;
}

KernelBenchSession::~KernelBenchSession() = default;

Report KernelBenchSession::verify(const std::string& solution, VerifyOptions o, const GateCallback& on_gate) {
  o.op.clear();
  o.candidate.clear();
  o.kernelbench.problem = s_->problem;
  o.kernelbench.solution = solution;
  o.kernelbench.python = s_->python;
  o.backend = s_->backend;
  o.seed = s_->seed;
  // NOTES: the workers made ahead are taken only on the thread that started them (pdeathsig: they
  // die with it; one that ended is replaced below). A verification with a workdir of its own
  // takes none.
  std::unique_ptr<NextVerification> taken;
  if (o.workdir.empty()) {
    std::lock_guard<std::mutex> lock(s_->next_mu);
    if (s_->next && s_->next->pool->thread() == std::this_thread::get_id()) taken = std::move(s_->next);
  }
  // The next set starts once this candidate's main worker has loaded it where the host has cores
  // to spare (its imports run beside this candidate's gates), else as this verification returns
  // (on 2 cores they would slow this candidate's gates as much as they save the next one); never
  // while a candidate is timed (imports beside timed calls).
  const std::function<void()> next = [&] { if (!o.timing && s_->pool_early) s_->start_next(solution, o); };
  try {
    const std::unique_ptr<FrontDoor> door = kernelbench_front_door(o, s_->contract.get());
    Report r = verify_checked(o, on_gate, *door, &s_->mu, std::move(taken), next);
    s_->start_next(solution, o);
    return r;
  } catch (...) {
    s_->start_next(solution, o);
    throw;
  }
}

uint64_t KernelBenchSession::seed() const { return s_->seed; }
int64_t KernelBenchSession::reference_hits() const { return s_->contract->reference_cache().hits; }
int64_t KernelBenchSession::reference_misses() const { return s_->contract->reference_cache().misses; }

ReplayResult replay_kernelbench(const std::string& problem, const std::string& solution, const std::string& python,
                                const std::string& backend, const std::string& gate_id, uint64_t seed,
                                int64_t case_index, double timeout_s, const Settings& settings) {
  require_backend(backend);
  const Gate* gate = require_gate(gate_id);
  Workdir wd("");
  try {
    probe_backend(backend, wd.path(), timeout_s, settings);
    RunnerOptions ro = runner_options(backend, wd.path(), timeout_s, seed, settings);
    KernelBenchParts kb = kernelbench_parts(problem, solution, python, backend, wd.path(), ro);
    return replay_case(*kb.contract, kb.candidate, ro, backend, gate, seed, case_index);
  } catch (const BuildError&) {
    wd.keep();  // the error names the build log in it
    throw;
  }
}

}  // namespace kcv
