// The host side of a backend: how kcv runs the workers of a backend. The runner and
// src/kcv/isolation/ ask it instead of comparing backend names. The device side, inside
// kcv-worker, is WorkerBackend (backend.hpp). Adding a backend: a folder beside cpu/ and cuda/
// and one line in registry.cpp.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace kcv {

/// How a worker of the sanitizer gate runs (DESIGN §5, gate 12).
struct SanitizedRun {
  /// The candidate is rebuilt from its source with the sanitizers compiled in
  /// (Candidate::sanitized_library) and loaded as it is; false: the plain build, under `wrapper`.
  bool instrumented_build = false;
  /// The program the worker runs under (valgrind, compute-sanitizer) and its options; empty: none.
  /// A wrapper keeps processes of its own: those alive when the worker says ready are allowed.
  std::vector<std::string> wrapper;
  /// The wrapper meets its target on loopback TCP ports: outside a network namespace of its own
  /// it is given a range kcv holds (sanitizer_port_range), through Backend::port_flags.
  bool uses_ports = false;
  /// Wrapper options after the ports (a torch worker: the libraries' kernels left uninstrumented).
  std::vector<std::string> wrapper_tail;
  /// Added to the worker's environment (the sanitizer runtime, its options).
  std::vector<std::string> env;
  /// The wrapper ends with the signal's number as its exit status when its target is killed by one,
  /// after "Error: process didn't terminate successfully" (killed_by_sigkill).
  bool exit_is_signal = false;
  /// The per-call timeout is this many times the plain one.
  double timeout_factor = 1;
};

/// Where a backend's guarded buffers may sit (issue 25 class 3): kcv's fixed placement told a
/// candidate it runs under kcv. Each buffer's offset is drawn from the run's key and the case's
/// label: a multiple of `align` below `range`. What the offset counts from is the backend's:
/// cpu, the first data byte's offset within its page; cuda, the bytes between the leading guard
/// band and the first data byte (the data then `align`-aligned whatever cudaMalloc's base).
struct PlacementRule {
  bool varies = false;   // false: the backend keeps its fixed placement
  int64_t align = 0;     // every offset a multiple of it: the alignment a kernel may assume
  int64_t range = 0;     // offsets drawn from [0, range)
  bool fences = false;   // a quarter of the cases end every output against an inaccessible page (cpu)
  bool tails = false;    // the allocation reaches a drawn [0, range) bytes past the trailing guard band (cuda)
};

class Backend {
 public:
  virtual ~Backend() = default;
  /// The name on the command line and in the plan (kcv-worker picks its WorkerBackend by it).
  virtual std::string_view name() const = 0;
  /// How a sanitized worker runs: `tool` as the sanitizer gate names it ("" = the backend's
  /// default), `has_source`: kcv builds the candidate (not a prebuilt .so), `torch_worker`: the
  /// worker is the torch worker (a KernelBench candidate).
  virtual SanitizedRun sanitized_run(const std::string& tool, bool has_source, bool torch_worker) const = 0;
  /// The wrapper's options for the port range that starts at `port` (SanitizedRun::uses_ports).
  virtual std::vector<std::string> port_flags(int port) const { return {}; }
  /// An unsanitized worker gets RLIMIT_AS below the machine's memory (default_address_space_limit);
  /// false where the runtime reserves address space far beyond its use (the CUDA driver).
  virtual bool caps_address_space() const = 0;
  /// kcv-worker keeps its fault handlers for a plain candidate, which may not replace them (its
  /// own SIGSEGV handler would swallow an over-read into the PROT_NONE page after an input).
  virtual bool locks_fault_signals() const = 0;
  /// The runtime makes files in the worker's /tmp or /dev/shm before the candidate runs (the CUDA
  /// driver's): those there at `ready` are not side effects.
  virtual bool runtime_makes_files() const = 0;
  /// How kcv-worker places this backend's guarded buffers outside kcv's fixed placement
  /// (CallSpec::fixed_placement; isolation/stage.cpp, placement). Default: it keeps the fixed one
  /// (the plan's placement keys are not written).
  virtual PlacementRule placement_rule() const { return {}; }
};

/// The backend of that name; SetupError "unknown backend 'NAME' (cpu, cuda)" when there is none.
const Backend& backend_named(std::string_view name);
/// The registered backends' names, in registry order.
std::vector<std::string> backend_names();

/// Kernels of the libraries a torch solution runs on (ATen, cuDNN, cuBLAS/cuBLASLt), as a regular
/// expression over kernel names, mangled or not: compute-sanitizer's memcheck, racecheck and
/// synccheck leave them uninstrumented for torch candidates (initcheck sees every kernel).
/// cuDNN's RNN kernels (RNN_blockPersist_*, elemWiseRNNcell) carry no "cudnn" in their names;
/// instrumented by racecheck, two KernelBench LSTM workers held 32-34 GB of host memory each.
inline constexpr const char* kLibraryKernels =
    "at::native|at6native|cudnn|xmma|nvjet|cutlass_[0-9]+_|implicit_convolve|explicit_convolve|fft2d_|winograd|"
    "RNN_blockPersist|elemWiseRNNcell";

}  // namespace kcv
