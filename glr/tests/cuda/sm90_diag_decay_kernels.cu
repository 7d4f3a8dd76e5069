// The factored diagonal's exponential on the device (include/glr/cuda/sm90/diag_decay.hpp,
// exp2_in_span: ex2.approx.ftz.f32) against CUDA's exp2f, bit for bit, over every float of an argument
// range: the kernel counts the arguments whose results differ and keeps the smallest such argument's bits.
// Compiled for every target of the build (the instruction exists on all of them).
#include <cuda_runtime.h>

#include <cstdint>
#include <cstring>

#include "glr/cuda/sm90/diag_decay.hpp"
#include "sm90_diag_decay_kernels.hpp"

namespace glr_test {
namespace {

/// Arguments: the floats whose bits are lo + i for i < n, and the same with the sign bit set.
__global__ void exp2_in_span_vs_exp2f(uint32_t lo, uint64_t n, unsigned long long* differ, uint32_t* first) {
  unsigned long long mine = 0;
  uint32_t low = 0xffffffffu;
  const uint64_t stride = uint64_t(gridDim.x) * blockDim.x;
  for (uint64_t i = uint64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < 2 * n; i += stride) {
    const uint32_t bits = (lo + uint32_t(i % n)) | (i < n ? 0u : 0x80000000u);
    const float x = __uint_as_float(bits);
    if (__float_as_uint(exp2f(x)) != __float_as_uint(glr::cuda::sm90::diag_decay::exp2_in_span(x))) {
      ++mine;
      low = low < bits ? low : bits;
    }
  }
  if (mine) {
    atomicAdd(differ, mine);
    atomicMin(first, low);
  }
}

}  // namespace

cudaError_t exp2_in_span_mismatches(float lo, float hi, unsigned long long* differ, uint32_t* first) {
  uint32_t a, b;  // 0 <= lo <= hi: their bits order as their values
  std::memcpy(&a, &lo, 4);
  std::memcpy(&b, &hi, 4);
  unsigned long long* d_differ = nullptr;
  uint32_t* d_first = nullptr;
  cudaError_t e = cudaMalloc(&d_differ, sizeof *d_differ);
  if (e == cudaSuccess) e = cudaMalloc(&d_first, sizeof *d_first);
  if (e == cudaSuccess) e = cudaMemset(d_differ, 0, sizeof *d_differ);
  if (e == cudaSuccess) e = cudaMemset(d_first, 0xff, sizeof *d_first);
  if (e == cudaSuccess) {
    exp2_in_span_vs_exp2f<<<4096, 256>>>(a, uint64_t(b) - a + 1, d_differ, d_first);
    e = cudaGetLastError();
  }
  if (e == cudaSuccess) e = cudaMemcpy(differ, d_differ, sizeof *differ, cudaMemcpyDeviceToHost);
  if (e == cudaSuccess) e = cudaMemcpy(first, d_first, sizeof *first, cudaMemcpyDeviceToHost);
  cudaFree(d_differ);
  cudaFree(d_first);
  return e;
}

}  // namespace glr_test
