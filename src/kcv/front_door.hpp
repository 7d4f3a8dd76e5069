// Front doors (issue 23, docs/architecture.md "Front doors"): where a verification's contract and
// candidate come from. The engine checks the options every verification shares, asks
// front_door_for for the door the options name, and runs the gates between the door's steps; it
// has no branch for any one door. Two doors: the built-in contracts (an ABI candidate, --op and
// --candidate; builtin_front_door.cpp) and KernelBench (a PROBLEM.py and SOLUTION.py pair;
// kernelbench/kernelbench_front_door.cpp). Adding one: a file with its door and one line in
// front_door_for.
#pragma once

#include <memory>
#include <string>

#include <nlohmann/json.hpp>

#include "kcv/candidate.hpp"
#include "kcv/contract.hpp"
#include "kcv/engine.hpp"
#include "kcv/kernelbench.hpp"
#include "kcv/runner.hpp"

namespace kcv {

class FrontDoor {
 public:
  virtual ~FrontDoor() = default;
  /// The file judged and the others a report names by hash, before anything is built from them:
  /// the report's op and candidate as given, provenance candidate_path, candidate_sha256 (and
  /// problem_sha256). A missing file is left to prepare, which says so in its own words.
  virtual void describe(Report& report) const = 0;
  /// Makes the contract and the candidate in `workdir` (a build within `compile`); may add to the
  /// runner options (the torch worker's plan, its timeouts) and to the report.
  virtual void prepare(const std::string& workdir, RunnerOptions& ro, const CaptureLimits& compile, Report& report) = 0;
  virtual const Contract& contract() const = 0;
  virtual const Candidate& candidate() const = 0;
  /// The main worker has loaded the candidate, `load_seconds` after the runner began.
  virtual void loaded(Runner& runner, double load_seconds, Report& report) {}
  /// The gates have run; their workers are still there.
  virtual void gates_done(const Runner& runner, Report& report) {}
  /// Report::timing of a candidate that passed every selected gate. Only a door with a reference
  /// to time against is asked (front_door_for refuses timing=true for the others).
  virtual nlohmann::json time(const RunnerOptions& ro, const TimingOptions& t) = 0;
  /// Every worker has ended.
  virtual void workers_ended(const std::string& workdir, Report& report) {}
};

/// The door the options name, with its own checks of them made (SetupError in the CLI's words).
std::unique_ptr<FrontDoor> front_door_for(const VerifyOptions& o);

/// The doors (each in its own file). `prepared`: a KernelBench session's contract (its reference
/// server kept), else none.
std::unique_ptr<FrontDoor> builtin_front_door(const VerifyOptions& o);
std::unique_ptr<FrontDoor> kernelbench_front_door(const VerifyOptions& o, KernelBenchContract* prepared = nullptr);

/// A KernelBench pair's reference server setup: the problem by absolute path, the interpreter
/// resolved (also for a session and for replay).
KernelBenchSetup kernelbench_setup(const std::string& problem, const std::string& python, const std::string& backend,
                                   const std::string& workdir, const Settings& settings,
                                   const std::string& reference_cache = "");

/// A KernelBench pair's contract (its own, or a session's `prepared`) and candidate; sets the
/// runner options' torch worker plan and its load and compile allowances.
struct KernelBenchParts {
  std::unique_ptr<KernelBenchContract> owned;   // this verification's own, or
  KernelBenchContract* contract = nullptr;      // a session's (prepared), kept across verifications
  Candidate candidate;
};
KernelBenchParts kernelbench_parts(const std::string& problem, const std::string& solution, const std::string& python,
                                   const std::string& backend, const std::string& workdir, RunnerOptions& ro,
                                   KernelBenchContract* prepared = nullptr, const std::string& reference_cache = "");

}  // namespace kcv
