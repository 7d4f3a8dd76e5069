/// glr CUDA family — what every sm90 kernel file shares: element types and their conversions.
/// Header-only, so that the library (glr/cuda/api.cu) and the kcv candidates
/// (glr/controls/cuda/*.cu, one translation unit each) compile the same source.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstdint>

#include "glr/cuda/sm90/switches.cuh"

namespace glr::cuda::sm90 {

/// Widening load of one stored element to the compute type (exact for every pair used here).
template <class Acc> __device__ __forceinline__ Acc load_as(const float* p) { return Acc(*p); }
template <class Acc> __device__ __forceinline__ Acc load_as(const double* p) { return Acc(*p); }
template <class Acc> __device__ __forceinline__ Acc load_as(const __nv_bfloat16* p) {
  return Acc(__bfloat162float(*p));
}
template <class Acc> __device__ __forceinline__ Acc load_as(const __half* p) { return Acc(__half2float(*p)); }

/// Narrowing store, rounded once to nearest even (fp32 -> bf16/f16 as kcv's own rounding does).
__device__ __forceinline__ void store_from(float* p, float x) { *p = x; }
__device__ __forceinline__ void store_from(double* p, double x) { *p = x; }
__device__ __forceinline__ void store_from(__nv_bfloat16* p, float x) { *p = __float2bfloat16_rn(x); }
__device__ __forceinline__ void store_from(__half* p, float x) { *p = __float2half_rn(x); }

/// exp of a log-decay in the compute type.
__device__ __forceinline__ float exp_of(float z) { return expf(z); }
__device__ __forceinline__ double exp_of(double z) { return exp(z); }

/// Time range [bos, eos) of sequence n: fixed length (cu == nullptr) or varlen. Read on the
/// device only (the host never waits for cu_seqlens); out-of-range values are clamped to [0, T].
__device__ __forceinline__ void sequence_range(const int64_t* cu, int64_t n, int64_t T, int64_t* bos,
                                               int64_t* eos) {
  if (!cu) {
    *bos = n * T;  // flattened [B*T] time index of batch row n
    *eos = n * T + T;
    return;
  }
  int64_t b = cu[n], e = cu[n + 1];
  b = b < 0 ? 0 : (b > T ? T : b);
  e = e < b ? b : (e > T ? T : e);
  *bos = b;
  *eos = e;
}

}  // namespace glr::cuda::sm90
