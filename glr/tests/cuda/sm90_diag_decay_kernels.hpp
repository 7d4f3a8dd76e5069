// The device check of diag_decay::exp2_in_span (sm90_diag_decay_kernels.cu), as sm90_diag_decay_test.cpp
// calls it: C++ only, no CUDA headers beyond the runtime's error type.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

namespace glr_test {

/// Over every float x with lo <= |x| <= hi (0 <= lo <= hi), both signs: how many give exp2_in_span(x) and
/// exp2f(x) with different bits (*differ), and the smallest such x's bits (*first; 0xffffffff for none).
/// Synchronous on the legacy default stream.
cudaError_t exp2_in_span_mismatches(float lo, float hi, unsigned long long* differ, uint32_t* first);

}  // namespace glr_test
