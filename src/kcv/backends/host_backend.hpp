// The host side of a backend: how kcv runs the workers of a backend. The runner and
// src/kcv/isolation/ ask it instead of comparing backend names. The device side, inside
// kcv-worker, is WorkerBackend (backend.hpp). Adding a backend: a folder beside cpu/ and cuda/
// and one line in registry.cpp.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "kcv/settings.hpp"

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

/// How one kind of candidate source becomes a candidate library on a backend (candidate.cpp adds
/// the sanitizer flags, kcv's include directory, the candidate's own directory and the output).
struct CompileRecipe {
  /// The compiler and its flags for a plain build, before any -I or file (the sanitized build
  /// replaces the optimization flag `optimize` with -O1).
  std::vector<std::string> command;
  std::string optimize;
  /// The flag that puts the candidate's own directory after kcv's on the include path ("-iquote";
  /// nvcc has none: "-I").
  std::string quote_include = "-iquote";
  /// -lm at the end: the candidate names its own libm (the worker need not have it).
  bool link_libm = true;
};

/// The plain host compilers' recipes, every backend's for "c" and "cpp" (none for other kinds).
std::optional<CompileRecipe> host_compile_recipe(const std::string& kind);

class Backend {
 public:
  virtual ~Backend() = default;
  /// The name on the command line and in the plan (kcv-worker picks its WorkerBackend by it).
  virtual std::string_view name() const = 0;
  /// Why this kcv cannot run it ("" when it can: cuda needs the toolkit at kcv's build).
  virtual std::string unavailable() const { return {}; }
  /// Whether a worker checks the device before anything is compiled (engine's probe_backend).
  virtual bool probes_device() const = 0;
  /// How a source of kind `kind` ("c", "cpp", "cu") is compiled for it; none: it does not run
  /// that kind (Candidate::prepare says which backend does). settings: the target (cuda_arch).
  virtual std::optional<CompileRecipe> compile_recipe(const std::string& kind, const Settings& settings) const = 0;
  /// The device's side of a report's provenance (gpu, driver, toolkit); {} where there is none.
  virtual nlohmann::json provenance() const { return nlohmann::json::object(); }
  /// The torch device a KernelBench problem runs on ("cpu", "cuda").
  virtual std::string_view torch_device() const = 0;

  /// Calls run on streams that the caller chooses (the gates' questions, issue 23: they never
  /// compare backend names): the gates then call as production does too (the legacy null stream,
  /// buffers of the tensors' own size: gates/common.hpp's Calling), the concurrency gate puts a
  /// writer kernel on the caller's stream before a call (else two calls on two threads at once),
  /// determinism runs a load kernel beside the calls (else other thread counts), stateless adds
  /// a long run called as production calls. false: a call runs on the caller's thread.
  virtual bool has_streams() const = 0;
  /// A torch worker's tensors are host memory from glibc's malloc: the worker fills every block
  /// malloc hands out during a call with its output poison (kcv_torch_worker.py allocation_fill),
  /// which needs malloc's per-thread cache off in that worker (isolation/spawn.cpp).
  virtual bool tensors_on_host() const = 0;
  /// The shapes gate's large tier (element indices past 2^31, sampled judging) runs here: it needs
  /// memory that holds such tensors (device memory).
  virtual bool large_tier() const = 0;
  /// The sanitizer gate's tools, one worker each (sanitized_run's `tool`): `has_source`, kcv
  /// builds the candidate; `torch_worker`, a KernelBench solution.
  virtual std::vector<std::string> sanitizer_tools(bool has_source, bool torch_worker) const = 0;
  /// What the sanitizer gate's tools did not check, said beside its verdict ("" when nothing).
  virtual std::string sanitizer_scope(bool torch_worker) const { return {}; }
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
/// The backend of that name, or nullptr.
const Backend* find_backend(std::string_view name);
/// backend_named, and SetupError with Backend::unavailable() when this kcv cannot run it.
const Backend& require_backend(std::string_view name);
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
