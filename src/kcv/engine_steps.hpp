// The engine's steps that a front door's own entry points build on (kernelbench_session.cpp: a
// session's verifications and replay). Internal: the public entry points are engine.hpp's and
// kernelbench_session.hpp's.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <shared_mutex>
#include <string>
#include <vector>

#include "kcv/engine.hpp"
#include "kcv/front_door.hpp"
#include "kcv/runner.hpp"
#include "kcv/workdir.hpp"

namespace kcv {

/// A session's next verification, made ahead (docs/architecture.md "The session-wide pool"): its
/// workdir, and the workers started in it.
struct NextVerification {
  std::unique_ptr<Workdir> wd;
  std::unique_ptr<WorkerPool> pool;
};

/// verify() through the given door: the options every verification shares checked, then the work
/// in a workdir of its own. session_mu: a session's lock, held shared through the gates and
/// exclusive through timing (no other verification of the session runs while one is timed);
/// next: the session's workdir and workers made ahead for this verification; workers_started:
/// called once the main worker has loaded the candidate.
Report verify_checked(const VerifyOptions& o, const GateCallback& on_gate, FrontDoor& door,
                      std::shared_mutex* session_mu = nullptr, std::unique_ptr<NextVerification> next = nullptr,
                      const std::function<void()>& workers_started = {});

/// The runner options of a verification's or a replay's workers (throws SetupError without a worker).
RunnerOptions runner_options(const std::string& backend, const std::string& workdir, double timeout_s, uint64_t seed,
                             const Settings& settings);
/// A seed from the kernel's entropy pool (drawn fresh per run, so a candidate cannot precompute).
uint64_t fresh_seed();
/// Checks that the backend works in a worker (cuda: a device is there) before compiling anything.
void probe_backend(const std::string& backend, const std::string& workdir, double timeout_s, const Settings& settings);
/// The worker options the selected gates' cases use beyond the default one (Gate::worker_options).
std::vector<WorkerOptions> standby_options(const VerifyOptions& o, const GateContext& ctx);

/// The gate of that id, or a SetupError naming it.
const Gate* require_gate(const std::string& gate_id);
/// One case of one gate, run and judged: replay's work once the candidate is built.
ReplayResult replay_case(const Contract& contract, const Candidate& candidate, const RunnerOptions& ro,
                         const std::string& backend, const Gate* gate, uint64_t seed, int64_t case_index);

}  // namespace kcv
