/// KernelBench problems as kcv contracts (docs/kernelbench.md). The contract is described by a
/// trusted Python reference server that runs the problem's Model (float64 and float32 eager); the
/// candidate's ModelNew runs in the torch worker. No torch header here: the server is a process.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "kcv/contract.hpp"
#include "kcv/kernelbench_door.hpp"
#include "kcv/settings.hpp"

namespace kcv {

class Runner;
class ReferenceDiskCache;
class Candidate;
struct RunnerOptions;

struct KernelBenchSetup {
  std::string problem;        // the problem file (Model, get_inputs, get_init_inputs)
  std::string python;         // interpreter with torch
  std::string backend = "cpu";
  std::string workdir;        // the reference server's log goes here
  uint64_t init_seed = 42;    // torch.manual_seed before building Model / ModelNew
  /// A directory: keep the reference's answers there, content-addressed, for every later
  /// verification of the problem (a corpus run's other solutions, a resumed or sharded run;
  /// docs/kernelbench.md "Reference cache"). Empty: none. Needs kcv to run as root.
  std::string reference_cache;
  /// Adapters directory, threads, KCV_MAX_ELEMENTS's cap, the precompiled header, the disk cache's entry cap.
  Settings settings;
};

/// The calibrated bound's constant: allowed_i = K·max(max_j e_j, u·max_j |r_j|) + 2u·|r_i| where e
/// is fp32 eager's own error against float64 (docs/kernelbench.md): the whole bound under
/// KCV_TORCH_BOUND=calibrated, else the floor of the elements no derived rule covers.
inline constexpr double kKernelBenchK = 32;


/// A precompiled torch/extension.h manifest (the JSON object kcv_torch_pch.py prints) as the
/// torch worker takes it: an array of {key, header, gch, sha256}. Text that is not such a
/// manifest is a SetupError naming what is wrong.
nlohmann::json torch_pch_entries(const std::string& manifest);
/// The same for Settings::torch_pch (env KCV_TORCH_PCH, which `kcv corpus run` sets); empty when unset.
nlohmann::json torch_pch_entries(const Settings& settings);
/// The entries whose gch kcv copied into workdir/torch-pch/<sha256[:16]>/torch/ (beside a stub
/// extension.h), each copy's bytes checked against the entry's sha256: where the torch worker
/// finds them. An entry whose file is unreadable or not the one hashed is left out.
nlohmann::json checked_pch_copies(const nlohmann::json& entries, const std::string& workdir);

/// The size-independent gates' budget per call (elements in plus out); see structural_shape().
inline constexpr int64_t kStructuralElements = int64_t{1} << 20;
/// The sanitizer gate's (Contract::sanitizer_elements): instrumented runs cost 10-1000x.
inline constexpr int64_t kSanitizerElements = int64_t{1} << 16;
/// The shapes gate's base shape (Contract::sweep_elements): a 1.3·10^8-element problem swept with
/// its other symbols at their own sizes took over 240 s on an H200 host (14 verifications at once).
inline constexpr int64_t kSweepElements = int64_t{1} << 24;

class KernelBenchContract : public Contract {
 public:
  ~KernelBenchContract() override;
  /// Starts the reference server and describes the problem. Throws SetupError with the server's
  /// reason when the problem does not load or its Model does not run at the nominal sizes.
  static std::unique_ptr<KernelBenchContract> create(const KernelBenchSetup& setup);

  std::vector<RefTensor> reference(const std::vector<HostTensor>& inputs, const std::vector<double>& scalars,
                                   const Bindings& shape, SumOrder order) const override;
  bool valid(const Bindings& b) const override;
  Shape input_shape(std::size_t i, const Bindings& b) const override;
  Shape output_shape(std::size_t i, const Bindings& b) const override;
  /// The problem's own get_inputs() under a seed drawn from rng, then the value kind on top.
  std::vector<HostTensor> make_inputs(const Bindings& shape, Rng& rng, const std::string& kind) const override;

  /// get_inputs() under torch.manual_seed(seed) at b, as contiguous tensors.
  std::vector<HostTensor> problem_inputs(const Bindings& b, uint64_t seed) const;
  /// The problem's Model in float32 eager on these inputs, one blob of float64 values per output
  /// (unaligned: read with std::memcpy): the reference of KernelBench's own check (no float64
  /// Model run, no bound).
  std::vector<std::string> eager(const std::vector<HostTensor>& inputs, const Bindings& shape) const;
  /// What the torch worker needs beside the calls: problem, init_seed, argument template, and
  /// whether to build a fresh model for every call.
  nlohmann::json worker_plan() const;
  /// The problem's Model keeps state between calls (it gave other outputs when called again, and
  /// the first call's outputs again as a fresh model from the same seed): both sides build a
  /// fresh model for every call, so each call is judged one step from the initial state.
  bool fresh_model() const { return fresh_model_; }
  /// Empty, or why every gate and the baseline run at smaller sizes than the problem's own: its
  /// call moves more elements than kcv's cap for host-side judging (KCV_MAX_ELEMENTS), so its
  /// symbols were clipped as shape_within(cap) clips them.
  const std::string& reduced_sizes() const { return reduced_sizes_; }
  /// What the reference server runs on (provenance, issue 21 item 8): "torch" (torch.__version__),
  /// "torch_cuda" (torch.version.cuda), "gpu" (the device's name on cuda); absent when unknown.
  const nlohmann::json& runtime() const;
  /// The bound so far (the report's kernelbench.bound): its mode, and with the derived bound the
  /// references answered, per output how many elements were judged by the derived bound, by the
  /// calibrated floor (an op without a rule made or fed them) and free in class (DESIGN §4 (c)),
  /// where fp32 eager erred beyond the derived bound, and the ops without a rule.
  KernelBenchBound bound_summary() const;
  /// Why the reference rejected b (empty when it did not).
  std::string rejection(const Bindings& b) const override;
  /// shape_within(kStructuralElements).
  Bindings structural_shape() const override;
  /// Nominal, unless its call moves more than max_elements elements: then every symbol clipped
  /// to the largest power of two that brings the call under it (and that the reference accepts);
  /// failing that, symbols halved one at a time, the largest the reference accepts halved, until
  /// the call fits. Nominal when neither finds such a shape.
  Bindings shape_within(int64_t max_elements) const override;
  /// Elements (inputs plus outputs) one call moves at b.
  int64_t elements_at(const Bindings& b) const;
  /// Keep up to `bytes` of reference answers, by case (its shape and inputs), most recently used
  /// first, instead of the last one only: a KernelBenchSession's candidates see the same cases.
  void keep_references(std::size_t bytes);
  struct ReferenceCacheStats {
    int64_t hits = 0, misses = 0;
    std::size_t bytes = 0;
  };
  ReferenceCacheStats reference_cache() const;
  /// The on-disk cache (KernelBenchSetup::reference_cache): {"dir", "read", "written", "rejected",
  /// "write_failed"[, "rejected_why"]}; null without one.
  nlohmann::json disk_cache_summary() const;

 private:
  KernelBenchContract() = default;
  struct Server;
  struct Described;
  const Described& describe(const Bindings& b) const;
  /// The server's answer to `op` ("reference", "eager") on these inputs at shape: its blobs.
  /// Throws, naming `what` ran, when the Model failed.
  std::vector<std::string> run_model(const char* op, const char* what, const std::vector<HostTensor>& inputs,
                                     const Bindings& shape, nlohmann::json* reply = nullptr) const;
  /// run_model through the on-disk cache when there is one: its answer and the reply's bound
  /// (what reference() reads of the reply) read back, or computed and written.
  std::vector<std::string> cached_model(const char* op, const char* what, const std::vector<HostTensor>& inputs,
                                        const Bindings& shape, nlohmann::json* reply = nullptr) const;
  std::unique_ptr<Server> server_;
  KernelBenchSetup setup_;
  nlohmann::json args_;
  bool fresh_model_ = false;
  std::string reduced_sizes_;
  nlohmann::json pch_ = nlohmann::json::array();   // torch_pch_entries()
  std::unique_ptr<ReferenceDiskCache> disk_;  // KernelBenchSetup::reference_cache
};

/// KernelBench's own acceptance check (5 trials at the fixed shape, inputs from get_inputs()
/// under seeds 0..4, allclose(atol=rtol=1e-2) against Model in float32), run through the runner
/// like any case.
KernelBenchBaseline kernelbench_baseline(const KernelBenchContract& contract, Runner& runner);

/// How `kcv time` / timing=True times a candidate that passed its gates (docs/timing.md).
struct TimingOptions {
  int reps = 30;        // timed repetitions per model (at least kMinTimingReps)
  int warmup = 5;       // untimed repetitions before them, each with its own inputs too
  uint64_t seed = 0;    // repetition k draws get_inputs() under torch.manual_seed(seed + k)
  double call_timeout_s = 10;  // one repetition's share of the job's deadline
};
inline constexpr int kMinTimingReps = 20;
inline constexpr int kMaxTimingReps = 1000;

/// The report's "timing" section for a candidate that was not timed: {"timed": false, "reason"}.
nlohmann::json timing_not_run(const std::string& reason);

/// Times the candidate's ModelNew and the problem's Model (eager, and torch.compile'd where it
/// compiles) the same way, each role in a sandboxed torch worker of its own (the reference's
/// never imports the solution), and returns the report's "timing" section: per model the median
/// and spread (min, p10, p90, max) of the device-synchronized times, the time to return (what a
/// timer on the caller's stream alone sees), the speedups, the device and its clock. A worker that
/// fails gives {"timed": false, "reason"} naming it. `base`: the verification's runner options.
nlohmann::json kernelbench_timing(const KernelBenchContract& contract, const Candidate& candidate,
                                  const RunnerOptions& base, const TimingOptions& options);

/// Order statistics of samples (linear interpolation between closest ranks, numpy's default):
/// {"median_ms", "min_ms", "p10_ms", "p90_ms", "max_ms", "mean_ms", "reps"}.
nlohmann::json timing_stats(std::vector<double> samples_ms);
/// The q-quantile of sorted, non-empty samples, by the same interpolation (q = 0.5: the median).
double quantile(const std::vector<double>& sorted, double q);

}  // namespace kcv
