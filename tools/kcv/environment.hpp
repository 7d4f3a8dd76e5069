// The front ends' one reading of the environment (issue 23): the CLI and the Python module map
// every KCV_* variable onto kcv::Settings here and hand the library those options.
#pragma once

#include "kcv/settings.hpp"

namespace kcv::cli {

/// kcv::Settings from this process's environment, a variable unset or empty giving the field's
/// default: KCV_WORKER, KCV_INCLUDE_DIR, KCV_ADAPTERS_DIR, KCV_PYTHON, KCV_CUDA_ARCH, KCV_TORCH_PCH,
/// KCV_CORPUS_VERIFIER (taken as given); KCV_THREADS (1..4096), KCV_MAX_ELEMENTS,
/// KCV_REFERENCE_CACHE_BYTES (up to 2^50), KCV_REFERENCE_CACHE_ENTRY_BYTES (positive integers,
/// else SetupError "NAME='value' is not a positive integer"); KCV_SANDBOX_OFF (protection names,
/// sandbox::parse_off's SetupError for an unknown one); KCV_STANDBY=0, KCV_POOL=0,
/// KCV_SANITIZER_PORT_RANGES=0 (off; any other value leaves them on); KCV_POOL_START (after, or
/// any other value: during).
Settings settings_from_environment();

}  // namespace kcv::cli
