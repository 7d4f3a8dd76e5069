/// glr CUDA family, sm90 — 16-bit tiles loaded into the 128B-swizzled K-major layout the warpgroup MMAs
/// read (wgmma_desc.hpp's sw128_offset), and the check for non-finite values in one: the split forward's
/// wgmma out kernel (glr_fwd_out_wgmma.cuh).
/// Included after glr_fwd_split.cuh's helpers (kThreads, cp_async16, from_f).
#pragma once

#include <cstdint>
#include <type_traits>

#include "glr/cuda/sm90/wgmma_desc.hpp"

namespace glr::cuda::sm90 {

namespace fwd_split {

/// Starts loading rows x cols (cols a multiple of 64) elements of T from global (row stride `stride`
/// elements) into the 128B-swizzled tile at dst, (i, c) at sw128_offset(i, c, rows), zero outside
/// [0, live_rows) x [0, live_cols): async_tile's copies with another destination. Thread threadIdx.x
/// copies the 16-byte chunks e = threadIdx.x + kThreads·n (by cp.async where src and stride allow,
/// else element by element) — the chunks nonfinite_sw128 reads back.
template <int cols, class T>
__device__ __forceinline__ void async_tile_sw128(unsigned char* dst, const T* src, int64_t stride, int rows,
                                                 int live_rows, int live_cols) {
  constexpr int per = 16 / int(sizeof(T)), per_row = cols / per;
  static_assert(cols % 64 == 0 && sizeof(T) == 2, "whole 128-byte lines of 16-bit elements");
  const bool vec = reinterpret_cast<uintptr_t>(src) % 16 == 0 && (stride * int64_t(sizeof(T))) % 16 == 0;
  for (int e = threadIdx.x; e < rows * per_row; e += kThreads) {
    const int i = e / per_row, c = (e % per_row) * per;
    unsigned char* d = dst + sw128_offset(i, c, rows);
    if (vec) {
      const int live = (i < live_rows && c < live_cols) ? (live_cols - c < per ? live_cols - c : per) : 0;
      cp_async16(d, live ? static_cast<const void*>(src + i * stride + c) : src, live * int(sizeof(T)));
    } else {
#pragma unroll
      for (int u = 0; u < per; ++u) {
        T x = from_f<T>(0.f);
        if (i < live_rows && c + u < live_cols) x = src[i * stride + c + u];
        reinterpret_cast<T*>(d)[u] = x;
      }
    }
  }
}

/// Whether a chunk this thread loaded with async_tile_sw128<cols, E> (after its cp_async_wait) holds a
/// NaN or ±Inf: an all-ones exponent in either half of a 32-bit word.
template <int cols, class E>
__device__ __forceinline__ bool nonfinite_sw128(const unsigned char* dst, int rows) {
  constexpr uint32_t m = std::is_same_v<E, __nv_bfloat16> ? 0x7F80u : 0x7C00u;
  constexpr int per_row = cols / 8;
  bool bad = false;
  for (int e = threadIdx.x; e < rows * per_row; e += kThreads) {
    const uint4 w = *reinterpret_cast<const uint4*>(dst + sw128_offset(e / per_row, (e % per_row) * 8, rows));
    const uint32_t x[4] = {w.x, w.y, w.z, w.w};
#pragma unroll
    for (int u = 0; u < 4; ++u) bad = bad | ((x[u] & m) == m) | (((x[u] >> 16) & m) == m);
  }
  return bad;
}

}  // namespace fwd_split

}  // namespace glr::cuda::sm90
