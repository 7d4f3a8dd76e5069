// Host simulation of the CUDA constructs the glr split kernels use (bench/glr/split_sim/run.sh): one
// CTA at a time, its 256 threads as fibers on one OS thread (started by setcontext on their own stacks,
// switched by _setjmp/_longjmp: swapcontext's signal-mask system call at every switch was about half of
// a run's time). Between two __syncthreads
// the warps run one after another, ascending or (SIM_REVERSE=1) descending, each warp's lanes in the
// same order up to each __shfl_xor_sync (a warp-level exchange): a read of shared data that another
// warp writes in the same phase (a missing barrier) sees different data in the two orders, so a
// race-free kernel gives bitwise the same outputs in both. Named barriers (named_barrier.cuh: bar.sync,
// bar.arrive with an id and a thread count, for warps of different roles) are rounds too: each warp
// runs until it waits at a barrier, arrives at one, or ends; a barrier whose count is reached lets its
// waiters run in the next round (barrier_ring.cuh, run_barriers.sh). WMMA fragments hold whole 16x16 tiles
// (lane 0 of a warp does the loads, MMAs and stores); cp.async is a synchronous copy.
#pragma once
#include <cuda_runtime.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <setjmp.h>
#include <ucontext.h>
#include <cmath>
#include <cstring>
#include <functional>
#include <thread>
#include <vector>
#include <memory>
#include <cstdio>
#include <cstdlib>
#include <cstdint>

#define __launch_bounds__(...)
namespace sim {
struct Idx { unsigned x = 0, y = 0, z = 0; };
inline Idx tIdx, bIdx;
inline int sms = 132;
inline size_t smem_cap = 232448;
void sync_cta();
void sync_warp();
inline float shfl_buf[256];
}  // namespace sim
#define threadIdx (::sim::tIdx)
#define blockIdx (::sim::bIdx)
namespace glr::cuda::sm90 { alignas(1024) unsigned char smem_raw[232448]; }
inline void __syncthreads() { ::sim::sync_cta(); }
namespace sim { inline int or_buf[256]; }
/// Every thread's predicate published, a barrier, the OR read by all, a barrier (the buffer is reused).
inline int __syncthreads_or(int pred) {
  ::sim::or_buf[threadIdx.x] = pred;
  ::sim::sync_cta();
  int r = 0;
  for (int t = 0; t < 256; ++t) r |= ::sim::or_buf[t];
  ::sim::sync_cta();
  return r != 0;
}
inline float __int_as_float(int x) { float f; std::memcpy(&f, &x, 4); return f; }
inline float __shfl_xor_sync(unsigned, float v, int o) {
  const int t = int(threadIdx.x);
  ::sim::shfl_buf[t] = v;
  ::sim::sync_warp();
  const float r = ::sim::shfl_buf[(t & ~31) | ((t & 31) ^ o)];
  ::sim::sync_warp();
  return r;
}
/// The position of the least significant set bit, 1-based; 0 for 0 (CUDA's __ffs).
inline int __ffs(int x) { return x ? __builtin_ctz(unsigned(x)) + 1 : 0; }
/// The number of leading zero bits; 32 for 0 (CUDA's __clz).
inline int __clz(int x) { return x ? __builtin_clz(unsigned(x)) : 32; }
namespace sim { inline unsigned ballot_buf[256]; }
/// Every lane's predicate published, a warp barrier, the warp's bits gathered, a warp barrier.
inline unsigned __ballot_sync(unsigned, int pred) {
  const int t = int(threadIdx.x);
  ::sim::ballot_buf[t] = pred ? 1u : 0u;
  ::sim::sync_warp();
  unsigned r = 0;
  for (int l = 0; l < 32; ++l) r |= ::sim::ballot_buf[(t & ~31) | l] << l;
  ::sim::sync_warp();
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

// The warp-level tensor-core pieces of the walk, and of dstate under GLR_DSTATE_3CTAS (glr_fwd_split.cuh:
// ldsm_x4_trans, ldsm_x2_trans, mma16816), emulated from the PTX ISA's fragment layouts with a warp
// exchange like the shuffle's: every lane publishes its operands, then each computes its own registers
// from the whole warp's.
namespace sim {
inline const unsigned char* ptr_buf[256];
inline uint32_t frag_buf[256][10];
inline uint32_t lds_pair(const unsigned char* row, int col) {  // two 16-bit elements, transposed pick
  uint16_t v;
  std::memcpy(&v, row + 2 * col, 2);
  return v;
}
// Lane 4g + t of a .trans load gets, of the 8x8 matrix whose rows lanes 8j..8j+7 address, the
// elements (row 2t, col g) and (row 2t + 1, col g) in the low and high halves.
inline void ldsm_trans(uint32_t* r, int nmat, const void* p) {
  const int tid = int(threadIdx.x), base = tid & ~31, lane = tid & 31, g = lane / 4, t = lane % 4;
  ptr_buf[tid] = static_cast<const unsigned char*>(p);
  sync_warp();
  for (int j = 0; j < nmat; ++j)
    r[j] = lds_pair(ptr_buf[base + 8 * j + 2 * t], g) | (lds_pair(ptr_buf[base + 8 * j + 2 * t + 1], g) << 16);
  sync_warp();
}
}  // namespace sim
namespace glr::cuda::sm90::fwd_split {  // where glr_fwd_split.cuh defines them (the backward's dstate uses them too)
inline void ldsm_x4_trans(uint32_t (&r)[4], const void* p) { ::sim::ldsm_trans(r, 4, p); }
inline void ldsm_x2_trans(uint32_t (&r)[2], const void* p) { ::sim::ldsm_trans(r, 2, p); }
template <class E>
inline void mma16816(float (&d)[4], const uint32_t (&a)[4], const uint32_t (&b)[2]) {
  const int tid = int(threadIdx.x), base = tid & ~31, lane = tid & 31;
  for (int i = 0; i < 4; ++i) ::sim::frag_buf[tid][i] = a[i];
  for (int i = 0; i < 2; ++i) ::sim::frag_buf[tid][4 + i] = b[i];
  for (int i = 0; i < 4; ++i) std::memcpy(&::sim::frag_buf[tid][6 + i], &d[i], 4);
  ::sim::sync_warp();
  auto half_of = [](uint32_t w, int hi) {
    const uint16_t v = uint16_t(hi ? w >> 16 : w & 0xffff);
    E e;
    std::memcpy(&e, &v, 2);
    return nvcuda::wmma::tf(e);
  };
  float A[16][16], B[16][8], Cm[16][8];
  for (int L = 0; L < 32; ++L) {  // lane L = 4g + t holds (PTX ISA, m16n8k16, 16-bit A/B, f32 C)
    const int g = L / 4, t = L % 4;
    const uint32_t* f = ::sim::frag_buf[base + L];
    for (int h = 0; h < 2; ++h) {
      A[g][2 * t + h] = half_of(f[0], h);
      A[g + 8][2 * t + h] = half_of(f[1], h);
      A[g][2 * t + 8 + h] = half_of(f[2], h);
      A[g + 8][2 * t + 8 + h] = half_of(f[3], h);
      B[2 * t + h][g] = half_of(f[4], h);
      B[2 * t + 8 + h][g] = half_of(f[5], h);
    }
    float c[4];
    std::memcpy(c, &f[6], 16);
    Cm[g][2 * t] = c[0], Cm[g][2 * t + 1] = c[1], Cm[g + 8][2 * t] = c[2], Cm[g + 8][2 * t + 1] = c[3];
  }
  ::sim::sync_warp();
  const int g = lane / 4, t = lane % 4;
  const int rows[4] = {g, g, g + 8, g + 8}, cols[4] = {2 * t, 2 * t + 1, 2 * t, 2 * t + 1};
  for (int i = 0; i < 4; ++i) {
    float s = Cm[rows[i]][cols[i]];
    for (int k = 0; k < 16; ++k) s += A[rows[i]][k] * B[k][cols[i]];
    d[i] = s;
  }
}
}  // namespace glr::cuda::sm90::fwd_split

namespace sim {
inline long ctas_run = 0;
inline constexpr int kN = 256;
inline constexpr size_t kStack = 256 * 1024;
// wait: 0 running, 1 at a shuffle, 2 at barrier `bar`, 3 arrived at a barrier without waiting (runs again next round)
struct Fiber { ucontext_t ctx; jmp_buf at; bool started = false, done = false; int wait = 0, bar = 0; };
inline jmp_buf sched;
inline Fiber fibers[kN];
inline std::vector<char> stacks(kN * kStack);
inline int cur = 0;
inline std::function<void()> job;
/// The running fiber stops here (its registers and stack pointer in `at`) and the scheduler goes on.
inline void yield(int wait) {
  fibers[cur].wait = wait;
  if (_setjmp(fibers[cur].at) == 0) _longjmp(sched, 1);
}
[[noreturn]] inline void fail(const char* what);
// Barriers 0-15 (PTX bar.sync / bar.arrive; 0 is __syncthreads's, counting every thread): the threads
// arrived at each in its current use and the count it was used with. A barrier completes at the end of
// the round in which its count is reached, and only its waiters run on.
inline int bar_arrived[16], bar_count[16];
inline void arrive_at(int id, int threads) {
  if (id < 0 || id > 15 || threads < 32 || threads > kN || threads % 32) fail("a barrier id outside 0-15, or a thread count not a multiple of 32 up to the CTA's");
  if (bar_arrived[id] == 0) bar_count[id] = threads;
  else if (bar_count[id] != threads) fail("one use of a barrier with two thread counts");
  if (++bar_arrived[id] > threads) fail("more threads arrived at a barrier than it counts (a second use before the first completed)");
}
inline void sync_cta() { arrive_at(0, kN); fibers[cur].bar = 0; yield(2); }
/// bar.sync id, threads: arrive and wait until `threads` threads have arrived (by either call).
inline void named_sync(int id, int threads) { arrive_at(id, threads); fibers[cur].bar = id; yield(2); }
/// bar.arrive id, threads: arrive and go on. The warp stops here until the next round, so that a
/// thread whose arrival releases others (a consumer freeing a buffer) is seen running after them in
/// one of the two thread orders: a read after the arrival races with the released writer, and shows.
inline void named_arrive(int id, int threads) { arrive_at(id, threads); yield(3); }
inline void sync_warp() { yield(1); }
inline void entry() {
  job();
  fibers[cur].done = true;
  _longjmp(sched, 1);  // never returns: the fiber's stack is dropped
}
/// Runs fiber t until it yields or ends: its first time from entry() on its own stack, later from its yield.
inline void resume(int t) {
  Fiber& f = fibers[t];
  if (_setjmp(sched) != 0) return;
  if (!f.started) {
    f.started = true;
    setcontext(&f.ctx);
  }
  _longjmp(f.at, 1);
}
[[noreturn]] inline void fail(const char* what) { std::fprintf(stderr, "sim: %s\n", what); std::abort(); }
/// The end of a round: threads that only arrived run again; each barrier whose count is reached lets
/// its waiters go and starts a new use. False when no thread can run on (none running, none released).
inline bool end_round() {
  bool any = false;
  for (Fiber& f : fibers)
    if (!f.done && f.wait == 3) { f.wait = 0; any = true; }
  for (int id = 0; id < 16; ++id) {
    if (bar_arrived[id] == 0 || bar_arrived[id] < bar_count[id]) continue;
    for (Fiber& f : fibers)
      if (!f.done && f.wait == 2 && f.bar == id) { f.wait = 0; any = true; }
    bar_arrived[id] = 0;
  }
  return any;
}
/// Runs every CTA of the grid, one at a time, its threads as fibers in the SIM_REVERSE order;
/// shared memory filled with 0xFF (NaN) first. Aborts when the threads of a warp do not all reach the
/// same shuffle, when a barrier is used inconsistently, and when the threads left can never run on
/// (they wait at barriers whose counts are not reached: a deadlock, or threads ended before a
/// __syncthreads the others wait at).
template <class Kern, class... Args>
inline void launch(Kern kernel, dim3 grid, int threads, size_t smem, cudaStream_t, Args... args) {
  if (smem > smem_cap || threads != kN) { std::fprintf(stderr, "sim: %zu bytes of shared memory, %d threads\n", smem, threads); std::abort(); }
  static const bool reverse = [] { const char* e = std::getenv("SIM_REVERSE"); return e && *e == '1'; }();
  job = [&] { kernel(args...); };
  for (unsigned z = 0; z < grid.z; ++z) for (unsigned y = 0; y < grid.y; ++y) for (unsigned x = 0; x < grid.x; ++x) {
    std::memset(glr::cuda::sm90::smem_raw, 0xFF, sizeof glr::cuda::sm90::smem_raw);
    bIdx = {x, y, z};
    for (int id = 0; id < 16; ++id) bar_arrived[id] = bar_count[id] = 0;  // arrivals no thread waited for end with their CTA
    for (int t = 0; t < kN; ++t) {
      Fiber& f = fibers[t];
      f.started = f.done = false;
      f.wait = f.bar = 0;
      getcontext(&f.ctx);
      f.ctx.uc_stack.ss_sp = stacks.data() + size_t(t) * kStack;
      f.ctx.uc_stack.ss_size = kStack;
      f.ctx.uc_link = nullptr;  // entry() never returns
      makecontext(&f.ctx, entry, 0);
    }
    for (;;) {  // one phase between barriers per round: every warp runs until it waits or ends
      for (int wi = 0; wi < kN / 32; ++wi) {
        const int w = reverse ? kN / 32 - 1 - wi : wi;
        for (;;) {  // the warp's lanes up to their next shuffle or barrier
          int at_shuffle = 0, other = 0;
          for (int li = 0; li < 32; ++li) {
            const int t = 32 * w + (reverse ? 31 - li : li);
            Fiber& f = fibers[t];
            if (f.done || f.wait >= 2) { ++other; continue; }
            cur = t;
            tIdx = {unsigned(t), 0, 0};
            f.wait = 0;
            resume(t);
            if (!f.done && f.wait == 1) ++at_shuffle; else ++other;
          }
          if (at_shuffle == 0) break;
          if (other) fail("the lanes of a warp do not all reach a shuffle");
          for (int l = 0; l < 32; ++l) fibers[32 * w + l].wait = 0;
        }
      }
      int alive = 0, ended = 0;
      for (const Fiber& f : fibers) (f.done ? ended : alive) += 1;
      if (alive == 0) break;
      if (!end_round()) {
        if (ended && bar_arrived[0]) fail("threads ended while others wait at a barrier");
        fail("deadlock: every thread left waits at a barrier whose count is not reached");
      }
    }
    ++ctas_run;
  }
}
}  // namespace sim
