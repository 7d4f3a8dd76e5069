// The sm90 wgmma building block's device check (sm90_wgmma_kernels.cu), as the gtest of
// sm90_wgmma_test.cpp calls it: C++ only, no CUDA headers beyond the runtime's error type.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

namespace glr_test {

/// How the tile kernel feeds the MMAs: A from shared memory (ss) or registers (rs); operands in
/// shared memory in the 128B-swizzle or the no-swizzle K-major layout of wgmma_desc.hpp, or (the
/// _nmajor modes) A K-major 128B and B N-major 128B (mn_sw128, imm-trans-b = 1), or (ss_mmajor) both
/// transposed: A M-major 128B (mn_sw128, imm-trans-a = 1) and B N-major 128B.
/// ss_sw128_wrong_sbo is the negative control: SBO 512 instead of 1024, which must give a wrong D.
enum class WgmmaMode { ss_sw128, ss_core, rs_sw128, rs_core, ss_nmajor, rs_nmajor, ss_sw128_wrong_sbo, ss_mmajor };

/// One warpgroup: D[64, n] = A[64, 64] · B[n, 64]ᵀ (fp32), A and B row-major 16-bit (bf16 or f16
/// bits) in device memory, n = 64 or 128, K = 64 as 4 K16 steps of wgmma.mma_async.m64nNk16.
/// Launches on `stream`; returns the launch's error (cudaErrorInvalidValue for an unknown n).
cudaError_t sm90_wgmma_tile(int n, bool bf16, WgmmaMode mode, const uint16_t* A, const uint16_t* B, float* D,
                            cudaStream_t stream);

}  // namespace glr_test
