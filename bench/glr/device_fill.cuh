// Inputs of the glr timers filled on the device (bench/glr/glr_fwd_time.cu, glr_bwd_time.cu): the
// host's std::normal_distribution took minutes for the largest issue-19 shapes (0.5 G samples),
// longer than a device call allows. Element i of a fill is a function of (seed, i) alone: a
// splitmix64 hash of the counter, Box–Muller on two 24-bit uniforms, so a rerun gives the same
// tensors on any grid. Standard normal samples for q, k, v, dO and the states; for g,
// logsigmoid(z)/16, the benchmark's gate (bench_glr_vs_fla.py).
#pragma once

#include <cuda_bf16.h>

#include <cstdint>

namespace glr_bench {

__device__ __forceinline__ uint64_t splitmix64(uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

/// A standard normal sample for counter i of stream `seed`.
__device__ __forceinline__ float normal_at(uint64_t seed, uint64_t i) {
  const uint64_t a = splitmix64(seed * 0x632be59bd9b4e019ull + 2 * i);
  const uint64_t b = splitmix64(seed * 0x632be59bd9b4e019ull + 2 * i + 1);
  const float u1 = (float((a >> 40) + 1)) * 0x1p-24f;  // (0, 1]: log(u1) finite
  const float u2 = float(b >> 40) * 0x1p-24f;           // [0, 1)
  return sqrtf(-2.f * logf(u1)) * cospif(2.f * u2);
}

enum class Fill { normal, gate };

template <class T>
__global__ void fill_kernel(T* x, int64_t n, uint64_t seed, Fill kind) {
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += int64_t(gridDim.x) * blockDim.x) {
    const float z = normal_at(seed, uint64_t(i));
    const float v = kind == Fill::gate ? -log1pf(expf(-z)) / 16.f : z;
    if constexpr (sizeof(T) == 2) x[i] = __float2bfloat16(v);
    else x[i] = v;
  }
}

/// Fills n elements of `x` (bf16 or float) on the default stream and waits; returns the error.
template <class T>
inline cudaError_t fill(T* x, int64_t n, uint64_t seed, Fill kind = Fill::normal) {
  if (n <= 0) return cudaSuccess;
  const int64_t blocks = (n + 255) / 256;
  fill_kernel<T><<<unsigned(blocks < 4096 ? blocks : 4096), 256>>>(x, n, seed, kind);
  const cudaError_t e = cudaGetLastError();
  return e != cudaSuccess ? e : cudaDeviceSynchronize();
}

}  // namespace glr_bench
