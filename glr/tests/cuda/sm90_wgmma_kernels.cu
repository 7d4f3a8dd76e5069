// The sm90 wgmma building block (include/glr/cuda/sm90/wgmma.cuh, wgmma_desc.hpp) on one tile: one
// warpgroup stores a 64×64 A and an N×64 B (16-bit, row-major in device memory) into shared memory
// in the layout under test (B K-major or N-major, A K-major or M-major), issues 4 K16 steps of wgmma.mma_async.m64nNk16
// (SS or RS), and writes the fp32 accumulators back through the fragment map. Compiled for every
// target of the build; the instructions exist only in the sm_90a pass (elsewhere the kernel traps,
// and the test skips on any device but compute capability 9.0).
#include <cuda_runtime.h>

#include <cstdint>

#include "glr/cuda/sm90/wgmma.cuh"
#include "sm90_wgmma_kernels.hpp"

namespace glr_test {
namespace {

namespace sm90 = glr::cuda::sm90;
namespace wg = glr::cuda::sm90::wgmma;

constexpr int kM = 64;
constexpr int kK = 64;  // 4 K16 steps

__host__ __device__ constexpr bool is_rs(WgmmaMode m) {
  return m == WgmmaMode::rs_sw128 || m == WgmmaMode::rs_core || m == WgmmaMode::rs_nmajor;
}
__host__ __device__ constexpr bool is_nmajor(WgmmaMode m) {
  return m == WgmmaMode::ss_nmajor || m == WgmmaMode::rs_nmajor || m == WgmmaMode::ss_mmajor;
}
__host__ __device__ constexpr bool is_mmajor(WgmmaMode m) { return m == WgmmaMode::ss_mmajor; }
__host__ __device__ constexpr bool is_core(WgmmaMode m) { return m == WgmmaMode::ss_core || m == WgmmaMode::rs_core; }

/// Where element (r, k) of a K-major operand with `rows` rows goes.
template <WgmmaMode M>
__device__ uint32_t offset(int r, int k, int rows) {
  if constexpr (is_core(M)) return sm90::core_offset(r, k, rows);
  if constexpr (is_mmajor(M)) return sm90::mn_sw128_offset(k, r, kK);  // A M-major: stored [kK][kM], m contiguous
  return sm90::sw128_offset(r, k, rows);
}
template <WgmmaMode M>
__device__ uint64_t desc(uint32_t base, int kk, int rows) {
  if constexpr (is_core(M)) return sm90::core_desc(base, kk, rows);
  if constexpr (is_mmajor(M)) return sm90::mn_sw128_desc(base, kk, kK);
  if constexpr (M == WgmmaMode::ss_sw128_wrong_sbo)
    return sm90::wgmma_desc(sm90::sw128_k16(base, kk, rows), sm90::sw128_lbo(), 512, sm90::Swizzle::b128);
  return sm90::sw128_desc(base, kk, rows);
}
/// Where B(n, k) goes, and B's descriptor for K16 step kk (N-major: stored [kK][N], n contiguous).
template <WgmmaMode M>
__device__ uint32_t b_offset(int n, int k, int N) {
  if constexpr (is_nmajor(M)) return sm90::mn_sw128_offset(k, n, kK);
  return offset<M>(n, k, N);
}
template <WgmmaMode M>
__device__ uint64_t b_desc(uint32_t base, int kk, int N) {
  if constexpr (is_nmajor(M)) return sm90::mn_sw128_desc(base, kk, kK);
  return desc<M>(base, kk, N);
}

template <int N, wg::Ab T, WgmmaMode M>
__global__ void __launch_bounds__(128) sm90_wgmma_tile_kernel(const uint16_t* __restrict__ A,  // [kM, kK]
                                                              const uint16_t* __restrict__ B,  // [N, kK]
                                                              float* __restrict__ D) {         // [kM, N]
  extern __shared__ uint8_t smem_raw[];
  // The 128B-swizzle atoms start on 1024-byte boundaries (descriptor base offset 0).
  const uint32_t pad = (1024u - wg::smem_addr(smem_raw) % 1024u) % 1024u;
  uint8_t* sA = smem_raw + pad;  // [kM, kK] in the layout under test, 8 KiB
  uint8_t* sB = sA + kM * kK * 2;  // [N, kK] (N-major: [kK, N]); 8 KiB apart, so 1024-aligned too
  const int t = threadIdx.x;

  if constexpr (!is_rs(M))
    for (int i = t; i < kM * kK; i += 128)
      *reinterpret_cast<uint16_t*>(sA + offset<M>(i / kK, i % kK, kM)) = A[i];
  for (int i = t; i < N * kK; i += 128) *reinterpret_cast<uint16_t*>(sB + b_offset<M>(i / kK, i % kK, N)) = B[i];
  wg::fence_proxy_async();
  __syncthreads();

  // RS: the thread's A fragments of all 4 steps, built before the first MMA (the MMAs read them
  // asynchronously; nothing overwrites them until the wait).
  uint32_t a[kK / 16][4];
#pragma unroll
  for (int kk = 0; kk < kK / 16; ++kk)
#pragma unroll
    for (int j = 0; j < 4; ++j) {
      const uint32_t lo = A[sm90::a_row(t, 2 * j) * kK + kk * 16 + sm90::a_col(t, 2 * j)];
      const uint32_t hi = A[sm90::a_row(t, 2 * j + 1) * kK + kk * 16 + sm90::a_col(t, 2 * j + 1)];
      a[kk][j] = is_rs(M) ? (lo | hi << 16) : 0u;
    }

  // NaN before the first step: scale-d = 0 must ignore it.
  float d[N / 2];
#pragma unroll
  for (int i = 0; i < N / 2; ++i) d[i] = __int_as_float(0x7fc00000);
  const uint32_t base_a = wg::smem_addr(sA), base_b = wg::smem_addr(sB);
  wg::fence_operands(d);
  wg::fence();
#pragma unroll
  for (int kk = 0; kk < kK / 16; ++kk) {
    if constexpr (is_rs(M))
      wg::mma_rs<N, T, is_nmajor(M)>(d, a[kk], b_desc<M>(base_b, kk, N), kk > 0);
    else
      wg::mma_ss<N, T, is_nmajor(M), is_mmajor(M)>(d, desc<M>(base_a, kk, kM), b_desc<M>(base_b, kk, N), kk > 0);
  }
  wg::commit_group();
  wg::wait_group<0>();
  wg::fence_operands(d);
#pragma unroll
  for (int i = 0; i < N / 2; ++i) D[sm90::acc_row(t, i) * N + sm90::acc_col(t, i)] = d[i];
}

template <int N, wg::Ab T, WgmmaMode M>
cudaError_t launch(const uint16_t* A, const uint16_t* B, float* D, cudaStream_t stream) {
  const size_t smem = size_t(kM + N) * kK * 2 + 1024;  // + alignment slack; < 48 KiB
  sm90_wgmma_tile_kernel<N, T, M><<<1, 128, smem, stream>>>(A, B, D);
  return cudaGetLastError();
}

template <int N, wg::Ab T>
cudaError_t launch_mode(WgmmaMode mode, const uint16_t* A, const uint16_t* B, float* D, cudaStream_t stream) {
  switch (mode) {
    case WgmmaMode::ss_sw128: return launch<N, T, WgmmaMode::ss_sw128>(A, B, D, stream);
    case WgmmaMode::ss_core: return launch<N, T, WgmmaMode::ss_core>(A, B, D, stream);
    case WgmmaMode::rs_sw128: return launch<N, T, WgmmaMode::rs_sw128>(A, B, D, stream);
    case WgmmaMode::rs_core: return launch<N, T, WgmmaMode::rs_core>(A, B, D, stream);
    case WgmmaMode::ss_nmajor: return launch<N, T, WgmmaMode::ss_nmajor>(A, B, D, stream);
    case WgmmaMode::rs_nmajor: return launch<N, T, WgmmaMode::rs_nmajor>(A, B, D, stream);
    case WgmmaMode::ss_sw128_wrong_sbo: return launch<N, T, WgmmaMode::ss_sw128_wrong_sbo>(A, B, D, stream);
    case WgmmaMode::ss_mmajor: return launch<N, T, WgmmaMode::ss_mmajor>(A, B, D, stream);
  }
  return cudaErrorInvalidValue;
}

}  // namespace

cudaError_t sm90_wgmma_tile(int n, bool bf16, WgmmaMode mode, const uint16_t* A, const uint16_t* B, float* D,
                            cudaStream_t stream) {
  if (n == 64) return bf16 ? launch_mode<64, wg::Ab::bf16>(mode, A, B, D, stream)
                           : launch_mode<64, wg::Ab::f16>(mode, A, B, D, stream);
  if (n == 128) return bf16 ? launch_mode<128, wg::Ab::bf16>(mode, A, B, D, stream)
                            : launch_mode<128, wg::Ab::f16>(mode, A, B, D, stream);
  return cudaErrorInvalidValue;
}

}  // namespace glr_test
