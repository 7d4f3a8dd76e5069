/// glr CUDA family, sm90 backward (sm90_glr_bwd): the chunked backward of include/glr/cpu_chunked.hpp
/// (bwd_slice) on the GPU, FFMA with fp32 state and accumulation (fp64 when the dtype is f64).
///
/// Three kernels on the caller's stream, all per (sequence n, head h):
///   1. states  — one CTA per (n, h, V tile): the forward state pass; writes the state entering
///                every chunk and the final state into the workspace            [slot, H, K, V]
///   2. chunks  — one CTA per (n, h, V tile), chunks in reverse, G [K, BV] in shared memory:
///                dv (complete: the CTA owns its V columns), dh0, and the V-tile partial sums of
///                dq, dk and of the dg seed Σ_v G ⊙ S_end, written per tile to the workspace
///   3. reduce  — one CTA per (chunk, n, h): sums the V tiles in a fixed order, stores dq, dk and
///                forms dg by the chunk-local reverse cumsum of q ⊙ dq − k ⊙ dk.
/// NOTES: no float atomics and fixed loop orders everywhere, so the result is bitwise deterministic.
/// Every exp argument is b_i (i ≥ 0), b_i − b_j (i ≥ j) or b_last − b_j, so ≤ 0 when g ≤ 0; the
/// j > i half of the intra-chunk matrices is never formed (selected to 0, never multiplied).
/// launch_bwd hands bf16/f16 with K <= 256 and chunk 64 to the tensor-core split backward
/// (glr_bwd_split.cuh) outside the negative controls' fault builds; these kernels take the rest.
/// Varlen: cu_seqlens is read on the device only; the workspace is sized from T and N, with the
/// state slot of chunk c of sequence n = 2n + floor(bos/C) + c (unique, < ceil(T/C) + 2N; the
/// final state takes slot c = nc, which still stays below the next sequence's first slot).
#pragma once

#include <algorithm>
#include <cstdint>
#include <string>

#include "glr/cuda.hpp"
#include "glr/cuda/built.hpp"
#include "glr/cuda/sm90/common.cuh"
#include "glr/cuda/sm90/fault.cuh"
#include "glr/cuda/sm90/glr_bwd_split.cuh"

namespace glr::cuda::sm90 {

namespace bwd_detail {

inline constexpr int kThreads = 256;
inline constexpr int kCM = 64;  // largest chunk
inline constexpr int kBK = 32;  // K tile
inline constexpr int kBV = 32;  // V tile (one CTA's columns)

template <class Acc>
struct Args {
  const void* q;
  const void* k;
  const void* v;
  const Acc* g;
  const Acc* h0;
  const void* dO;
  const Acc* dhT;
  void* dq;
  void* dk;
  void* dv;
  Acc* dg;
  Acc* dh0;
  const int64_t* cu;
  Acc* states;  // [slots, H, K, V]
  Acc* seeds;   // [nvt, slots, H, K]
  Acc* dqp;     // [nvt, B*T, H, K]
  Acc* dkp;     // [nvt, B*T, H, K]
  int64_t T, H, K, V, N, BT, slots, nvt, nct;
  int C;
  Acc scale;
};

__host__ __device__ __forceinline__ int64_t imin(int64_t a, int64_t b) { return a < b ? a : b; }

inline int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

/// Layout of the workspace (element counts of the accumulate type).
struct Plan {
  int64_t nct = 0, slots = 0, nvt = 0, BT = 0;
  size_t states = 0, seeds = 0, partial = 0, bytes = 0;  // byte offsets / total
};

inline size_t align256(size_t x) { return (x + 255) / 256 * 256; }

inline Plan plan(const Shape& s) {
  Plan p;
  const int64_t C = s.chunk > 0 ? s.chunk : 64;
  const size_t es = s.dtype == DType::f64 ? sizeof(double) : sizeof(float);
  p.nct = ceil_div(std::max<int64_t>(s.T, 0), C);
  p.slots = s.cu_seqlens ? p.nct + 2 * std::max<int64_t>(s.N, 1) : std::max<int64_t>(s.B, 1) * (p.nct + 1);
  p.nvt = ceil_div(std::max<int64_t>(s.V, 1), kBV);
  p.BT = (s.cu_seqlens ? 1 : std::max<int64_t>(s.B, 1)) * std::max<int64_t>(s.T, 0);
  const int64_t H = std::max<int64_t>(s.H, 1), K = std::max<int64_t>(s.K, 1), V = std::max<int64_t>(s.V, 1);
  p.states = 0;
  p.seeds = align256(size_t(p.slots * H * K * V) * es);
  p.partial = p.seeds + align256(size_t(p.nvt * p.slots * H * K) * es);
  p.bytes = p.partial + 2 * align256(size_t(p.nvt * p.BT * H * K) * es);
  return p;
}

/// Time range of sequence n and the state slot of its chunk 0.
template <class Acc>
__device__ __forceinline__ int64_t first_slot(const Args<Acc>& a, int64_t n, int64_t* bos, int64_t* eos) {
  sequence_range(a.cu, n, a.T, bos, eos);
  return a.cu ? 2 * n + *bos / a.C : n * (a.nct + 1);
}

/// b[i][x] (x in [x0, x0+kx)) = g_{c0} + … + g_{c0+i}, in order; rows ≥ n left 0. Threads < kx.
template <class Acc, bool VEC>
__device__ __forceinline__ void chunk_cumsum(const Args<Acc>& a, int64_t c0, int n, int64_t h, int64_t x0,
                                             int kx, Acc* bs /* [kCM, kBK] or [kCM] */) {
  const int64_t GW = VEC ? a.K : 1;
  const int w = VEC ? kBK : 1;
  for (int e = threadIdx.x; e < kCM * w; e += kThreads) bs[e] = Acc(0);
  __syncthreads();
  if (int(threadIdx.x) < (VEC ? kx : 1)) {
    const int x = threadIdx.x;
    Acc acc = Acc(0);
    for (int i = 0; i < n; ++i) {
      acc += a.g[((c0 + i) * a.H + h) * GW + (VEC ? x0 + x : 0)];
      bs[i * w + x] = acc;
    }
  }
}

// ---- kernel 1: the forward state pass ----
template <class E, class Acc, bool VEC>
__global__ void __launch_bounds__(kThreads) sm90_glr_bwd_states(Args<Acc> a) {
  extern __shared__ __align__(16) unsigned char glr_bwd_smem[];
  Acc* S = reinterpret_cast<Acc*>(glr_bwd_smem);  // [K, kBV]
  Acc* vs = S + a.K * kBV;                    // [kCM, kBV]
  Acc* ks = vs + kCM * kBV;                   // [kCM, kBK]
  Acc* bs = ks + kCM * kBK;                   // [kCM, kBK] (vector) or [kCM] (scalar)
  const E* k = static_cast<const E*>(a.k);
  const E* v = static_cast<const E*>(a.v);
  const int64_t vt = blockIdx.x, y0 = vt * kBV;
  const int bv = int(imin(kBV, a.V - y0));
  for (int64_t nh = blockIdx.y; nh < a.N * a.H; nh += gridDim.y) {
    const int64_t n = nh / a.H, h = nh % a.H;
    int64_t bos, eos;
    const int64_t slot0 = first_slot(a, n, &bos, &eos);
    const int64_t L = eos - bos, nc = (L + a.C - 1) / a.C;
    for (int64_t e = threadIdx.x; e < a.K * kBV; e += kThreads) {
      const int64_t x = e / kBV, y = e % kBV;
      S[e] = (a.h0 && y < bv) ? a.h0[((n * a.H + h) * a.K + x) * a.V + y0 + y] : Acc(0);
    }
    __syncthreads();
    for (int64_t c = 0; c <= nc; ++c) {
      // The state entering chunk c (c = nc: the final state).
      Acc* out = a.states + ((slot0 + c) * a.H + h) * a.K * a.V;
      for (int64_t e = threadIdx.x; e < a.K * kBV; e += kThreads) {
        const int64_t x = e / kBV, y = e % kBV;
        if (y < bv) out[x * a.V + y0 + y] = S[e];
      }
      if (c == nc) break;
      const int64_t c0 = bos + c * a.C;
      const int n_ = int(imin(a.C, eos - c0));
      for (int e = threadIdx.x; e < kCM * kBV; e += kThreads) {
        const int i = e / kBV, y = e % kBV;
        vs[e] = (i < n_ && y < bv) ? load_as<Acc>(v + ((c0 + i) * a.H + h) * a.V + y0 + y) : Acc(0);
      }
      if (!VEC) chunk_cumsum<Acc, VEC>(a, c0, n_, h, 0, 1, bs);
      __syncthreads();
      for (int64_t x0 = 0; x0 < a.K; x0 += kBK) {
        const int kx = int(imin(kBK, a.K - x0));
        for (int e = threadIdx.x; e < kCM * kBK; e += kThreads) {
          const int i = e / kBK, x = e % kBK;
          ks[e] = (i < n_ && x < kx) ? load_as<Acc>(k + ((c0 + i) * a.H + h) * a.K + x0 + x) : Acc(0);
        }
        if (VEC) chunk_cumsum<Acc, VEC>(a, c0, n_, h, x0, kx, bs);
        __syncthreads();
        // S[x, y] ← exp(b_last) S[x, y] + Σ_j k_jx exp(b_last − b_j) v_jy
        for (int e = threadIdx.x; e < kBK * kBV; e += kThreads) {
          const int x = e / kBV, y = e % kBV;
          if (x >= kx || y >= bv) continue;
          const Acc bl = VEC ? bs[(n_ - 1) * kBK + x] : bs[n_ - 1];
          Acc s = exp_of(bl) * S[(x0 + x) * kBV + y];
          for (int j = 0; j < n_; ++j) {
            const Acc bj = VEC ? bs[j * kBK + x] : bs[j];
            s += (ks[j * kBK + x] * exp_of(bl - bj)) * vs[j * kBV + y];
          }
          S[(x0 + x) * kBV + y] = s;
        }
        __syncthreads();
      }
    }
    __syncthreads();
  }
}

// ---- kernel 2: chunks in reverse ----
template <class E, class Acc, bool VEC>
__global__ void __launch_bounds__(kThreads) sm90_glr_bwd_chunks(Args<Acc> a) {
  extern __shared__ __align__(16) unsigned char glr_bwd_smem[];
  Acc* G = reinterpret_cast<Acc*>(glr_bwd_smem);  // [K, kBV]
  Acc* A = G + a.K * kBV;                     // [kCM, kCM]  A_ij (full K), j ≤ i
  Acc* DV = A + kCM * kCM;                    // [kCM, kCM]  do_i · v_j over this V tile, j ≤ i
  Acc* vs = DV + kCM * kCM;                   // [kCM, kBV]
  Acc* ds = vs + kCM * kBV;                   // [kCM, kBV]
  Acc* qs = ds + kCM * kBV;                   // [kCM, kBK]
  Acc* ks = qs + kCM * kBK;                   // [kCM, kBK]
  Acc* Hc = ks + kCM * kBK;                   // [kBK, kBV]  state entering the chunk, this tile
  Acc* bs = Hc + kBK * kBV;                   // [kCM, kBK] (vector) or [kCM] (scalar)
  const E* q = static_cast<const E*>(a.q);
  const E* k = static_cast<const E*>(a.k);
  const E* v = static_cast<const E*>(a.v);
  const E* dO = static_cast<const E*>(a.dO);
  E* dv = static_cast<E*>(a.dv);
  const int64_t vt = blockIdx.x, y0 = vt * kBV;
  const int bv = int(imin(kBV, a.V - y0));
  constexpr int kRA = kCM * kCM / kThreads;  // A entries per thread
  constexpr int kRV = kCM * kBV / kThreads;  // dv entries per thread
  for (int64_t nh = blockIdx.y; nh < a.N * a.H; nh += gridDim.y) {
    const int64_t n = nh / a.H, h = nh % a.H;
    int64_t bos, eos;
    const int64_t slot0 = first_slot(a, n, &bos, &eos);
    const int64_t L = eos - bos, nc = (L + a.C - 1) / a.C;
    for (int64_t e = threadIdx.x; e < a.K * kBV; e += kThreads) {
      const int64_t x = e / kBV, y = e % kBV;
      G[e] = (a.dhT && y < bv) ? a.dhT[((n * a.H + h) * a.K + x) * a.V + y0 + y] : Acc(0);
    }
    __syncthreads();
    for (int64_t c = nc - 1; c >= 0; --c) {
      const int64_t c0 = bos + c * a.C;
      const int n_ = int(imin(a.C, eos - c0));
      const Acc* Hin = a.states + ((slot0 + c) * a.H + h) * a.K * a.V;       // [K, V]
      const Acc* Hend = a.states + ((slot0 + c + 1) * a.H + h) * a.K * a.V;  // [K, V]
      for (int e = threadIdx.x; e < kCM * kBV; e += kThreads) {
        const int i = e / kBV, y = e % kBV;
        const bool in = i < n_ && y < bv;
        const int64_t at = ((c0 + i) * a.H + h) * a.V + y0 + y;
        vs[e] = in ? load_as<Acc>(v + at) : Acc(0);
        ds[e] = in ? load_as<Acc>(dO + at) : Acc(0);
      }
      if (!VEC) chunk_cumsum<Acc, VEC>(a, c0, n_, h, 0, 1, bs);
      __syncthreads();
      // DV_ij = Σ_{y in tile} do_iy v_jy, j ≤ i (else 0, never formed)
      for (int e = threadIdx.x; e < kCM * kCM; e += kThreads) {
        const int i = e / kCM, j = e % kCM;
        Acc s = Acc(0);
        if (j <= i && i < n_)
          for (int y = 0; y < bv; ++y) s += ds[i * kBV + y] * vs[j * kBV + y];
        DV[e] = s;
      }
      Acc accA[kRA], accV[kRV];
#pragma unroll
      for (int r = 0; r < kRA; ++r) accA[r] = Acc(0);
#pragma unroll
      for (int r = 0; r < kRV; ++r) accV[r] = Acc(0);
      __syncthreads();
      for (int64_t x0 = 0; x0 < a.K; x0 += kBK) {
        const int kx = int(imin(kBK, a.K - x0));
        for (int e = threadIdx.x; e < kCM * kBK; e += kThreads) {
          const int i = e / kBK, x = e % kBK;
          const bool in = i < n_ && x < kx;
          const int64_t at = ((c0 + i) * a.H + h) * a.K + x0 + x;
          qs[e] = in ? load_as<Acc>(q + at) : Acc(0);
          ks[e] = in ? load_as<Acc>(k + at) : Acc(0);
        }
        for (int e = threadIdx.x; e < kBK * kBV; e += kThreads) {
          const int x = e / kBV, y = e % kBV;
          Hc[e] = (x < kx && y < bv) ? Hin[(x0 + x) * a.V + y0 + y] : Acc(0);
        }
        if (VEC) chunk_cumsum<Acc, VEC>(a, c0, n_, h, x0, kx, bs);
        __syncthreads();
        auto bat = [&](int i, int x) -> Acc { return VEC ? bs[i * kBK + x] : bs[i]; };
        // (a) A_ij += Σ_{x in tile} q_ix k_jx exp(b_ix − b_jx)   (scalar: the decay comes last)
#pragma unroll
        for (int r = 0; r < kRA; ++r) {
          const int e = threadIdx.x + r * kThreads, i = e / kCM, j = e % kCM;
          if (j > i || i >= n_) continue;
          Acc s = accA[r];
          for (int x = 0; x < kx; ++x) {
            if (VEC)
              s += qs[i * kBK + x] * (ks[j * kBK + x] * exp_of(bat(i, x) - bat(j, x)));
            else
              s += qs[i * kBK + x] * ks[j * kBK + x];
          }
          accA[r] = s;
        }
        // (b) the tile's partial dq, dk at (i, x)
        for (int e = threadIdx.x; e < kCM * kBK; e += kThreads) {
          const int i = e / kBK, x = e % kBK;
          if (i >= n_ || x >= kx) continue;
          const Acc bi = bat(i, x), bl = bat(n_ - 1, x);
          Acc dqi = Acc(0), dki = Acc(0);
          for (int j = 0; j <= i; ++j) dqi += (DV[i * kCM + j] * exp_of(bi - bat(j, x))) * ks[j * kBK + x];
          for (int j = i; j < n_; ++j) dki += (DV[j * kCM + i] * exp_of(bat(j, x) - bi)) * qs[j * kBK + x];
          Acc t = Acc(0), u = Acc(0);
          for (int y = 0; y < bv; ++y) {
            t += ds[i * kBV + y] * Hc[x * kBV + y];
            u += G[(x0 + x) * kBV + y] * vs[i * kBV + y];
          }
          const int64_t at = ((vt * a.BT + c0 + i) * a.H + h) * a.K + x0 + x;
          a.dqp[at] = a.scale * (dqi + exp_of(bi) * t);
          a.dkp[at] = a.scale * dki + exp_of(bl - bi) * u;
        }
        // (c) dv_jy += Σ_{x in tile} k_jx exp(b_last − b_jx) G_xy
#pragma unroll
        for (int r = 0; r < kRV; ++r) {
          const int e = threadIdx.x + r * kThreads, j = e / kBV, y = e % kBV;
          if (j >= n_ || y >= bv) continue;
          Acc s = accV[r];
          for (int x = 0; x < kx; ++x)
            s += (ks[j * kBK + x] * exp_of(bat(n_ - 1, x) - bat(j, x))) * G[(x0 + x) * kBV + y];
          accV[r] = s;
        }
        // (d) the tile's dg seed Σ_{y in tile} G_xy S_end,xy
        if (int(threadIdx.x) < kx) {
          const int x = threadIdx.x;
          Acc s = Acc(0);
          for (int y = 0; y < bv; ++y) s += G[(x0 + x) * kBV + y] * Hend[(x0 + x) * a.V + y0 + y];
          a.seeds[((vt * a.slots + slot0 + c) * a.H + h) * a.K + x0 + x] = s;
        }
        __syncthreads();
        // (e) G_xy ← exp(b_last,x) G_xy + scale Σ_i q_ix exp(b_ix) do_iy   (rows of this tile)
        for (int e = threadIdx.x; e < kBK * kBV; e += kThreads) {
          const int x = e / kBV, y = e % kBV;
          if (x >= kx || y >= bv) continue;
          Acc s = exp_of(bat(n_ - 1, x)) * G[(x0 + x) * kBV + y];
          for (int i = 0; i < n_; ++i) s += (a.scale * (qs[i * kBK + x] * exp_of(bat(i, x)))) * ds[i * kBV + y];
          G[(x0 + x) * kBV + y] = s;
        }
        __syncthreads();
      }
      // A complete: into shared memory (scalar gate: times exp(b_i − b_j) now).
#pragma unroll
      for (int r = 0; r < kRA; ++r) {
        const int e = threadIdx.x + r * kThreads, i = e / kCM, j = e % kCM;
        Acc s = Acc(0);
        if (j <= i && i < n_) s = VEC ? accA[r] : accA[r] * exp_of(bs[i] - bs[j]);
        A[e] = s;
      }
      __syncthreads();
      // dv_jy = scale Σ_{i≥j} A_ij do_iy + (the G part accumulated above)
#pragma unroll
      for (int r = 0; r < kRV; ++r) {
        const int e = threadIdx.x + r * kThreads, j = e / kBV, y = e % kBV;
        if (j >= n_ || y >= bv) continue;
        Acc s = Acc(0);
        for (int i = j; i < n_; ++i) s += A[i * kCM + j] * ds[i * kBV + y];
        store_from(dv + ((c0 + j) * a.H + h) * a.V + y0 + y, a.scale * s + accV[r]);
      }
      __syncthreads();
    }
    if (a.dh0)
      for (int64_t e = threadIdx.x; e < a.K * kBV; e += kThreads) {
        const int64_t x = e / kBV, y = e % kBV;
        if (y < bv) a.dh0[((n * a.H + h) * a.K + x) * a.V + y0 + y] = G[e];
      }
    __syncthreads();
  }
}

/// Sum of one value per thread over the block, in a fixed order (warp trees, then warps in order);
/// the result is valid in thread 0.
template <class Acc>
__device__ __forceinline__ Acc block_sum(Acc x, Acc* red /* [kThreads / 32] */) {
  for (int o = 16; o > 0; o >>= 1) x += __shfl_down_sync(0xffffffffu, x, o);
  if ((threadIdx.x & 31) == 0) red[threadIdx.x >> 5] = x;
  __syncthreads();
  Acc s = Acc(0);
  if (threadIdx.x == 0)
    for (int w = 0; w < kThreads / 32; ++w) s += red[w];
  __syncthreads();
  return s;
}

// ---- kernel 3: sum the V tiles, store dq, dk, form dg ----
template <class E, class Acc, bool VEC>
__global__ void __launch_bounds__(kThreads) sm90_glr_bwd_reduce(Args<Acc> a) {
  __shared__ Acc red[kThreads / 32];
  const E* q = static_cast<const E*>(a.q);
  const E* k = static_cast<const E*>(a.k);
  E* dq = static_cast<E*>(a.dq);
  E* dk = static_cast<E*>(a.dk);
  const int64_t c = blockIdx.x;
  const int x = threadIdx.x;  // K ≤ kThreads
  const bool on = x < a.K;
  const int64_t stride = a.BT * a.H * a.K;
  for (int64_t nh = blockIdx.y; nh < a.N * a.H; nh += gridDim.y) {
    const int64_t n = nh / a.H, h = nh % a.H;
    int64_t bos, eos;
    const int64_t slot0 = first_slot(a, n, &bos, &eos);
    const int64_t c0 = bos + c * a.C;
    if (c0 >= eos) continue;  // uniform over the block
    const int n_ = int(imin(a.C, eos - c0));
    Acc seed = Acc(0);
    if (on)
      for (int64_t vt = 0; vt < a.nvt; ++vt) seed += a.seeds[((vt * a.slots + slot0 + c) * a.H + h) * a.K + x];
    Acc acc = VEC ? seed : block_sum(seed, red);
    for (int i = n_ - 1; i >= 0; --i) {
      const int64_t at = ((c0 + i) * a.H + h) * a.K + x;
      Acc r = Acc(0);
      if (on) {
        Acc sq = Acc(0), sk = Acc(0);
        for (int64_t vt = 0; vt < a.nvt; ++vt) {
          sq += a.dqp[vt * stride + at];
          sk += a.dkp[vt * stride + at];
        }
        store_from(dq + at, sq);
        store_from(dk + at, sk);
        r = load_as<Acc>(q + at) * sq - load_as<Acc>(k + at) * sk;
      }
      if (VEC) {
        acc += r;
        if (on) a.dg[at] = acc;
      } else {
        const Acc s = block_sum(r, red);
        if (threadIdx.x == 0) {
          acc += s;
          a.dg[(c0 + i) * a.H + h] = acc;
        }
      }
    }
  }
}

template <class E, class Acc, bool VEC>
inline Status launch(const BwdParams& p, cudaStream_t stream) {
  const Shape& s = p.shape;
  const Plan pl = plan(s);
  Args<Acc> a{};
  a.q = p.q;
  a.k = p.k;
  a.v = p.v;
  a.g = static_cast<const Acc*>(p.g);
  a.h0 = static_cast<const Acc*>(p.h0);
  a.dO = p.dO;
  a.dhT = static_cast<const Acc*>(p.dhT);
  a.dq = p.dq;
  a.dk = p.dk;
  a.dv = p.dv;
  a.dg = static_cast<Acc*>(p.dg);
  a.dh0 = static_cast<Acc*>(p.dh0);
  a.cu = s.cu_seqlens;
  unsigned char* ws = static_cast<unsigned char*>(p.workspace);
  a.states = reinterpret_cast<Acc*>(ws + pl.states);
  a.seeds = reinterpret_cast<Acc*>(ws + pl.seeds);
  const size_t part = align256(size_t(pl.nvt * pl.BT * s.H * s.K) * sizeof(Acc));
  a.dqp = reinterpret_cast<Acc*>(ws + pl.partial);
  a.dkp = reinterpret_cast<Acc*>(ws + pl.partial + part);
  a.T = s.T;
  a.H = s.H;
  a.K = s.K;
  a.V = s.V;
  a.N = s.sequences();
  a.BT = pl.BT;
  a.slots = pl.slots;
  a.nvt = pl.nvt;
  a.nct = pl.nct;
  a.C = s.chunk;
  a.scale = Acc(p.scale);

  const unsigned gy = unsigned(imin(a.N * a.H, 65535));
  const size_t bw = VEC ? kCM * kBK : kCM;
  const size_t smem1 = (size_t(s.K) * kBV + kCM * kBV + kCM * kBK + bw) * sizeof(Acc);
  const size_t smem2 =
      (size_t(s.K) * kBV + 2 * kCM * kCM + 2 * kCM * kBV + 2 * kCM * kBK + kBK * kBV + bw) * sizeof(Acc);
  cudaFuncSetAttribute(sm90_glr_bwd_states<E, Acc, VEC>, cudaFuncAttributeMaxDynamicSharedMemorySize, int(smem1));
  cudaFuncSetAttribute(sm90_glr_bwd_chunks<E, Acc, VEC>, cudaFuncAttributeMaxDynamicSharedMemorySize, int(smem2));
  const dim3 grid(unsigned(pl.nvt), gy);
  sm90_glr_bwd_states<E, Acc, VEC><<<grid, kThreads, smem1, stream>>>(a);
  sm90_glr_bwd_chunks<E, Acc, VEC><<<grid, kThreads, smem2, stream>>>(a);
  if (pl.nct > 0) sm90_glr_bwd_reduce<E, Acc, VEC><<<dim3(unsigned(pl.nct), gy), kThreads, 0, stream>>>(a);
  const cudaError_t err = cudaGetLastError();
  if (err != cudaSuccess)
    return {std::string("glr::cuda::backward: ") + cudaGetErrorName(err) + ": " + cudaGetErrorString(err)};
  return {};
}

template <class E, class Acc>
inline Status launch_gate(const BwdParams& p, cudaStream_t stream) {
  return p.shape.gate == Gate::vector ? launch<E, Acc, true>(p, stream) : launch<E, Acc, false>(p, stream);
}

}  // namespace bwd_detail

/// Whether launch_bwd runs the tensor-core split backward (glr_bwd_split.cuh) for this shape: bf16
/// and f16 with K <= 256 and chunk 64; the FFMA kernels above take f32, f64, other chunks,
/// and every build with a negative control's fault (as the forward's kTensorCores rule).
inline bool bwd_tensor_cores(const Shape& s) {
  constexpr bool kTensorCores = kFault == Fault::none || kFault == Fault::default_stream;
  return kTensorCores && bwd_split::takes(s);
}

/// Device scratch of the FFMA backward (also sm100_glr_bwd's): chunk-boundary states, per-V-tile dg
/// seeds and dq/dk partials.
inline size_t bwd_ffma_workspace_bytes(const Shape& s) { return bwd_detail::plan(s).bytes; }

/// Device scratch of the backward launch_bwd runs for this shape.
inline size_t bwd_workspace_bytes(const Shape& s) {
  return bwd_tensor_cores(s) ? bwd_split::workspace_bytes(s) : bwd_ffma_workspace_bytes(s);
}

/// Enqueues sm90_glr_bwd on `stream` (checks of glr::cuda::impl::backward already passed).
inline Status launch_bwd(const BwdParams& p, cudaStream_t stream) {
#if GLR_BUILDS_BACKWARD
  return built::for_type(p.shape.dtype, "glr::cuda::backward", [&](auto t) -> Status {
    using E = typename decltype(t)::E;
    if constexpr (sizeof(E) == 2)  // bf16, f16: the split tensor-core kernels where they take the shape
      if (bwd_tensor_cores(p.shape)) return bwd_split::launch<E>(p, stream);
    return bwd_detail::launch_gate<E, typename decltype(t)::Acc>(p, stream);
  });
#else
  (void)p, (void)stream;
  return built::no_backward("glr::cuda::backward");
#endif
}

}  // namespace glr::cuda::sm90
