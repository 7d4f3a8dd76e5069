// Seconds by part of a verification (issue 22: one candidate's time split into build, reference,
// calls and judging). run_gate (engine.cpp) times making the cases, running them in workers and
// judging them; the reference's share of a judgement is what KernelBenchContract::reference spends
// getting its answers (the reference server, the disk cache, decoding the blobs), counted on the
// thread that judges: run_gate reads this thread's total before and after each judgement. A
// builtin contract's fp64 reference runs inside kcv and stays in judging.
#pragma once

#include <chrono>

namespace kcv {

/// This thread's seconds spent in ReferenceClock scopes so far.
double& reference_seconds_on_this_thread();

/// Adds its lifetime to this thread's reference seconds.
class ReferenceClock {
 public:
  ReferenceClock() : t0_(std::chrono::steady_clock::now()) {}
  ~ReferenceClock() {
    reference_seconds_on_this_thread() +=
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t0_).count();
  }
  ReferenceClock(const ReferenceClock&) = delete;
  ReferenceClock& operator=(const ReferenceClock&) = delete;

 private:
  std::chrono::steady_clock::time_point t0_;
};

}  // namespace kcv
