/// A KernelBench problem kept warm across candidates, and the replay of one case of a KernelBench
/// candidate (docs/python-api.md, docs/kernelbench.md). Implemented in
/// src/kcv/kernelbench/kernelbench_session.cpp over the engine's steps.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "kcv/engine.hpp"
#include "kcv/settings.hpp"

namespace kcv {

/// One KernelBench problem kept warm across candidates (issue 22, docs/python-api.md): its reference
/// server starts once, and its answers are kept by case under one session seed, so the N-th
/// candidate costs its own build and calls. Candidates run in workers as in verify(); verify may
/// be called from several threads at once (the gates of each run side by side; a verification
/// being timed runs alone). Throws SetupError as verify does.
class KernelBenchSession {
 public:
  /// seed: the session's (every candidate's) run seed; empty: drawn fresh. cache_bytes: reference
  /// answers kept (0: settings.reference_cache_bytes, whose 0 is a quarter of physical memory).
  /// settings: the reference server's and the pool's (pool, pool_start); each verify's workers
  /// follow that call's VerifyOptions::settings.
  KernelBenchSession(const std::string& problem, const std::string& backend, const std::string& python = "",
                     std::optional<uint64_t> seed = std::nullopt, std::size_t cache_bytes = 0,
                     const Settings& settings = {});
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

/// replay (engine.hpp) for a KernelBench candidate (the report's kernelbench.problem / .solution).
ReplayResult replay_kernelbench(const std::string& problem, const std::string& solution, const std::string& python,
                                const std::string& backend, const std::string& gate, uint64_t gate_seed,
                                int64_t case_index, double timeout_s, const Settings& settings = {});

}  // namespace kcv
