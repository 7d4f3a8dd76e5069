/// The library's settings: what a front end may take from the environment, given to the library as
/// options (issue 23). The CLI and the Python module map each KCV_* variable onto its field
/// (settings_from_environment, tools/kcv/environment.hpp); the library never reads KCV_* itself.
#pragma once

#include <cstdint>
#include <string>

namespace kcv {

/// nvcc's target when Settings::cuda_arch is empty: sm_90a, the H200's.
inline constexpr const char* kDefaultCudaArch = "90a";

/// When a session starts its next verification's workers (docs/architecture.md "The session-wide pool").
enum class PoolStart {
  by_cores,  ///< during the current verification on a host of at least 8 cores, else after it
  during,    ///< KCV_POOL_START=during (any value but "after")
  after,     ///< KCV_POOL_START=after
};

/// Every setting kcv once read from the environment; a default-constructed Settings is kcv's defaults.
/// Each field names its variable; an empty string or zero means "the default" where it says so.
struct Settings {
  /// kcv-worker (KCV_WORKER); empty: beside the running executable, else the build tree's.
  std::string worker;
  /// Where candidates include <kcv/abi.h> from (KCV_INCLUDE_DIR); empty: ../include beside an
  /// installed kcv, else the source tree's.
  std::string include_dir;
  /// The directory holding torch/kcv_torch_worker.py (KCV_ADAPTERS_DIR); empty: ../share/kcv/adapters
  /// beside an installed kcv, else the source tree's.
  std::string adapters_dir;
  /// KernelBench's interpreter when the caller names none (KCV_PYTHON); empty: /usr/bin/python3, else python3 on PATH.
  std::string python;
  /// nvcc's target for .cu candidates and the sanitizer gate's TMEM check (KCV_CUDA_ARCH); empty: kDefaultCudaArch.
  std::string cuda_arch = kDefaultCudaArch;
  /// The target cuda_arch names: it, or kDefaultCudaArch where empty.
  std::string cuda_target() const { return cuda_arch.empty() ? kDefaultCudaArch : cuda_arch; }
  /// CPU threads a candidate and the torch reference server get (KCV_THREADS, 1..4096); 0: the machine's cores.
  int threads = 0;
  /// KernelBench: the most elements one call may move before its problem is clipped (KCV_MAX_ELEMENTS).
  int64_t max_elements = int64_t{1} << 27;
  /// A KernelBench session's reference answers kept in memory, bytes (KCV_REFERENCE_CACHE_BYTES); 0: a quarter of RAM.
  int64_t reference_cache_bytes = 0;
  /// The largest answer --reference-cache keeps on disk, bytes (KCV_REFERENCE_CACHE_ENTRY_BYTES).
  int64_t reference_cache_entry_bytes = int64_t{256} << 20;
  /// The most --reference-cache keeps on disk in all, bytes (KCV_REFERENCE_CACHE_DIR_BYTES); 0:
  /// half of what it could grow to on its file system, fixed by `kcv corpus run` at its start.
  int64_t reference_cache_dir_bytes = 0;
  /// A precompiled torch/extension.h manifest, JSON text (KCV_TORCH_PCH, set by `kcv corpus run`); empty: none.
  std::string torch_pch;
  /// Sandbox protections switched off for diagnosis (KCV_SANDBOX_OFF; sandbox::Protection bits): a PASS is withheld.
  uint32_t sandbox_off = 0;
  /// Standby workers for a torch candidate's other worker options (KCV_STANDBY=0: false).
  bool standby = true;
  /// A KernelBench session starts its next verification's workers ahead (KCV_POOL=0: false).
  bool pool = true;
  /// When it starts them (KCV_POOL_START).
  PoolStart pool_start = PoolStart::by_cores;
  /// compute-sanitizer outside a network namespace of its own gets a port range kcv holds
  /// (KCV_SANITIZER_PORT_RANGES=0: false, its default range; diagnosis).
  bool sanitizer_port_ranges = true;
  /// An executable `kcv corpus run` starts per pair with `kcv verify`'s argv (KCV_CORPUS_VERIFIER;
  /// the tests' stub); empty: each pair is a forked child of the run that calls the library (corpus.hpp).
  std::string corpus_verifier;

  bool operator==(const Settings&) const = default;
};

}  // namespace kcv
