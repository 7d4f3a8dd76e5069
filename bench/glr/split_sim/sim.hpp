// Host simulation of the CUDA constructs the glr split kernels use (bench/glr/split_sim/run.sh): one
// CTA at a time, its threads a pool of 256 std::threads with a std::barrier for __syncthreads, WMMA
// fragments holding whole 16x16 tiles (lane 0 of a warp does the loads, MMAs and stores), cp.async
// a synchronous copy.
#pragma once
#include <cuda_runtime.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <barrier>
#include <cmath>
#include <cstring>
#include <functional>
#include <thread>
#include <vector>
#include <memory>
#include <cstdio>
#include <cstdlib>

#define __launch_bounds__(...)
namespace sim {
struct Idx { unsigned x = 0, y = 0, z = 0; };
inline thread_local Idx tIdx, bIdx;
inline thread_local std::barrier<>* cta_bar = nullptr;
struct Warp { float buf[32]; std::unique_ptr<std::barrier<>> bar; };
inline thread_local Warp* warp_ctx = nullptr;
inline int sms = 132;
inline size_t smem_cap = 232448;
}  // namespace sim
#define threadIdx (::sim::tIdx)
#define blockIdx (::sim::bIdx)
namespace glr::cuda::sm90 { alignas(1024) unsigned char smem_raw[232448]; }
inline void __syncthreads() { ::sim::cta_bar->arrive_and_wait(); }
inline float __int_as_float(int x) { float f; std::memcpy(&f, &x, 4); return f; }
inline float __shfl_xor_sync(unsigned, float v, int o) {
  const int lane = threadIdx.x & 31;
  ::sim::warp_ctx->buf[lane] = v;
  ::sim::warp_ctx->bar->arrive_and_wait();
  const float r = ::sim::warp_ctx->buf[lane ^ o];
  ::sim::warp_ctx->bar->arrive_and_wait();
  return r;
}
#define cudaFuncSetAttribute(...) cudaSuccess
#define cudaGetLastError() cudaSuccess

namespace nvcuda::wmma {
struct matrix_a {}; struct matrix_b {}; struct accumulator {};
struct row_major {}; struct col_major {};
enum layout_t { mem_row_major, mem_col_major };
template <class Use, int M, int N, int K, class T, class L = void> struct fragment {
  static constexpr int num_elements = 256;
  float x[256];
};
inline bool lead() { return (threadIdx.x & 31) == 0; }
template <class T> inline float tf(T v) {
  if constexpr (std::is_same_v<T, __nv_bfloat16>) return __bfloat162float(v);
  else if constexpr (std::is_same_v<T, __half>) return __half2float(v);
  else return float(v);
}
template <class Use, class T, class L, class P> inline void load_matrix_sync(fragment<Use, 16, 16, 16, T, L>& f, const P* p, unsigned ld) {
  if (!lead()) return;
  for (int r = 0; r < 16; ++r) for (int c = 0; c < 16; ++c) {
    // matrix_a: element [m=r][k=c]; matrix_b: element [k=r][n=c]
    const bool row = std::is_same_v<L, row_major>;
    f.x[r * 16 + c] = tf(row ? p[r * ld + c] : p[c * ld + r]);
  }
}
template <class T> inline void load_matrix_sync(fragment<accumulator, 16, 16, 16, T, void>& f, const float* p, unsigned ld, layout_t l) {
  if (!lead()) return;
  for (int r = 0; r < 16; ++r) for (int c = 0; c < 16; ++c) f.x[r * 16 + c] = l == mem_row_major ? p[r * ld + c] : p[c * ld + r];
}
template <class T> inline void store_matrix_sync(float* p, const fragment<accumulator, 16, 16, 16, T, void>& f, unsigned ld, layout_t l) {
  if (!lead()) return;
  for (int r = 0; r < 16; ++r) for (int c = 0; c < 16; ++c) (l == mem_row_major ? p[r * ld + c] : p[c * ld + r]) = f.x[r * 16 + c];
}
template <class T> inline void fill_fragment(fragment<accumulator, 16, 16, 16, T, void>& f, float v) { for (float& e : f.x) e = v; }
template <class TA, class LA, class TB, class LB, class T>
inline void mma_sync(fragment<accumulator, 16, 16, 16, T, void>& d, const fragment<matrix_a, 16, 16, 16, TA, LA>& a,
                     const fragment<matrix_b, 16, 16, 16, TB, LB>& b, const fragment<accumulator, 16, 16, 16, T, void>& c) {
  if (!lead()) return;
  float out[256];
  for (int m = 0; m < 16; ++m) for (int n = 0; n < 16; ++n) {
    float s = c.x[m * 16 + n];
    for (int k = 0; k < 16; ++k) s += a.x[m * 16 + k] * b.x[k * 16 + n];
    out[m * 16 + n] = s;
  }
  std::memcpy(d.x, out, sizeof out);
}
}  // namespace nvcuda::wmma

namespace sim {
inline long ctas_run = 0;
/// 256 persistent threads run one CTA at a time (a start and an end barrier with the caller).
struct Pool {
  static constexpr int kN = 256;
  std::barrier<> start{kN + 1}, end{kN + 1};
  std::function<void()> job;
  dim3 block_idx;
  bool quit = false;
  std::barrier<> cta{kN};
  Warp warps[kN / 32];
  std::vector<std::thread> ts;
  Pool() {
    for (auto& w : warps) w.bar = std::make_unique<std::barrier<>>(32);
    for (int t = 0; t < kN; ++t)
      ts.emplace_back([this, t] {
        tIdx = {unsigned(t), 0, 0};
        cta_bar = &cta;
        warp_ctx = &warps[t / 32];
        for (;;) {
          start.arrive_and_wait();
          if (quit) return;
          bIdx = {block_idx.x, block_idx.y, block_idx.z};
          job();
          end.arrive_and_wait();
        }
      });
  }
  ~Pool() {
    quit = true;
    start.arrive_and_wait();
    for (auto& t : ts) t.join();
  }
};
inline Pool& pool() { static Pool p; return p; }
/// Runs every CTA of the grid, one at a time; shared memory filled with 0xFF (NaN) first.
template <class Kern, class... Args>
inline void launch(Kern kernel, dim3 grid, int threads, size_t smem, cudaStream_t, Args... args) {
  if (smem > smem_cap || threads != Pool::kN) { std::fprintf(stderr, "sim: %zu bytes of shared memory, %d threads\n", smem, threads); std::abort(); }
  Pool& p = pool();
  p.job = [&] { kernel(args...); };
  for (unsigned z = 0; z < grid.z; ++z) for (unsigned y = 0; y < grid.y; ++y) for (unsigned x = 0; x < grid.x; ++x) {
    std::memset(glr::cuda::sm90::smem_raw, 0xFF, sizeof glr::cuda::sm90::smem_raw);
    p.block_idx = dim3(x, y, z);
    p.start.arrive_and_wait();
    p.end.arrive_and_wait();
    ++ctas_run;
  }
}
}  // namespace sim
