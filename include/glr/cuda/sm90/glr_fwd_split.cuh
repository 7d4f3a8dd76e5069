/// glr CUDA family, sm90 tensor-core forward split in four kernels (docs/glr.md, "Where the speed
/// is"): the state-independent work of every chunk runs in parallel, only the state pass walks.
///   1. sm90_glr_fwd_cumsum  per (chunk, head):        b = chunk-local Σ g·log2e        -> ws.b
///   2. sm90_glr_fwd_intra   per (chunk, head):        A (selected j <= i, input dtype)  -> ws.A
///   3. sm90_glr_fwd_state   per (V tile, head, seq):  the walk; S entering each chunk   -> ws.S
///   4. sm90_glr_fwd_out     per (chunk, head, V tile): o = scale·((q⊙2^b)·S_c + A·v)
/// The arithmetic is glr_fwd_tc.cuh's (the same factored A, the same roundings to the input dtype:
/// A, S_c, q⊙2^b, k⊙2^(b_last−b) and the factored A operands once each; fp32 state, sums and
/// accumulation), so its contract analysis holds unchanged. Chunk slots: chunk c of sequence n is
/// slot first_slot(n) + c with first_slot = n·(NT+1) (fixed length) or 2n + ⌊bos/64⌋ (varlen), as
/// the backward numbers them (glr_bwd.cuh): unique and below slots() without reading cu_seqlens
/// on the host. The parallel kernels launch ceil(T/64) chunk CTAs per sequence; a CTA past its
/// sequence's end returns at once.
/// NOTES: status — written in session 13 after the fused kernel's H200 measurement, not yet run on
/// a GPU (branch wip-split); it is not routed until glr_cuda_tests and the gates pass on the H200.
#pragma once

#include <mma.h>

#include <cstdint>
#include <string>

#include "glr/cuda.hpp"
#include "glr/cuda/sm90/common.cuh"
#include "glr/cuda/sm90/glr_fwd_tc.cuh"

namespace glr::cuda::sm90 {

namespace fwd_split {

using fwd_tc::C;
using fwd_tc::kLog2e;
using fwd_tc::ld_float;
using fwd_tc::ld_half;
using fwd_tc::align128;
inline constexpr int kThreads = 256;
inline constexpr int kWarps = kThreads / 32;

__host__ __device__ constexpr int64_t cdiv(int64_t a, int64_t b) { return (a + b - 1) / b; }

/// Workspace layout (byte offsets), from the shape alone.
struct Layout {
  int64_t NT = 0, slots = 0, BT = 0;
  size_t b = 0, A = 0, S = 0, bytes = 0;
};

inline size_t align256(size_t x) { return (x + 255) / 256 * 256; }

inline Layout layout(const Shape& s) {
  Layout l;
  const int64_t H = s.H < 1 ? 1 : s.H, K = s.K < 1 ? 1 : s.K, V = s.V < 1 ? 1 : s.V;
  const int64_t N = s.sequences() < 1 ? 1 : s.sequences();
  l.NT = cdiv(s.T < 0 ? 0 : s.T, C);
  l.slots = s.cu_seqlens ? l.NT + 2 * N : N * (l.NT + 1);
  l.BT = (s.cu_seqlens ? 1 : N) * (s.T < 0 ? 0 : s.T);
  const int64_t GW = s.gate == Gate::scalar ? 1 : K;
  const size_t es = 2;  // bf16 / f16
  l.b = 0;
  l.A = align256(size_t(l.BT) * H * GW * 4);
  l.S = l.A + align256(size_t(l.slots) * H * C * C * es);
  l.bytes = l.S + align256(size_t(l.slots) * H * K * V * es);
  return l;
}

/// Sequence n's time range and its chunk 0's slot.
__device__ __forceinline__ int64_t first_slot(const int64_t* cu, int64_t n, int64_t T, int64_t NT, int64_t* bos,
                                              int64_t* eos) {
  sequence_range(cu, n, T, bos, eos);
  return cu ? 2 * n + *bos / C : n * (NT + 1);
}

}  // namespace fwd_split

/// 1. b = Σ_{i' <= i} g_{c0+i'}·log2e down each gate column, per chunk; grid (NT, H, N), threads
/// over the gate width GW (1 or K) in steps of kThreads.
__global__ void __launch_bounds__(fwd_split::kThreads)
    sm90_glr_fwd_cumsum(const float* __restrict__ g, float* __restrict__ b, const int64_t* __restrict__ cu,
                        int64_t T, int64_t H, int64_t GW, int64_t NT) {
  using namespace fwd_split;
  int64_t bos, eos;
  first_slot(cu, blockIdx.z, T, NT, &bos, &eos);
  const int64_t c0 = bos + int64_t(blockIdx.x) * C, h = blockIdx.y;
  if (c0 >= eos) return;
  const int nc = int(eos - c0 < C ? eos - c0 : C);
  for (int64_t x = threadIdx.x; x < GW; x += kThreads) {
    float a = 0.f;
    for (int i = 0; i < nc; ++i) {
      const int64_t at = ((c0 + i) * H + h) * GW + x;
      a += g[at] * kLog2e;
      b[at] = a;
    }
  }
}

namespace fwd_split {

/// Loads rows [c0, c0+nc) of b (gate width GW) into bs [C][ld], padding columns >= K and rows >= nc
/// with the chunk's last value (b_last: a padded row adds no decay), scalar gate broadcast over KP.
template <int KP, bool kScalarGate>
__device__ __forceinline__ void load_b(float* bs, int ld, const float* b, int64_t c0, int nc, int64_t h, int64_t H,
                                       int64_t K) {
  const int64_t GW = kScalarGate ? 1 : K;
  for (int e = threadIdx.x; e < C * KP; e += kThreads) {
    const int i = e / KP, kk = e % KP;
    const int row = i < nc ? i : nc - 1;
    const int64_t x = kScalarGate ? 0 : (kk < K ? kk : -1);
    bs[i * ld + kk] = x < 0 ? 0.f : b[((c0 + row) * H + h) * GW + x];
  }
}

}  // namespace fwd_split

/// 2. A of one chunk (j <= i, rounded to E, 0 above the diagonal) into ws.A [slot, H, C, C];
/// grid (NT, H, N). Vector gate: off-diagonal blocks as MMAs of the factored operands, diagonal
/// blocks on FFMA (as glr_fwd_tc.cuh); scalar gate: q·kᵀ on the lower blocks, then 2^(b_i − b_j).
template <class E, bool kScalarGate, int KP>
__global__ void __launch_bounds__(fwd_split::kThreads)
    sm90_glr_fwd_intra(const E* __restrict__ q, const E* __restrict__ k, const float* __restrict__ b,
                       E* __restrict__ A, const int64_t* __restrict__ cu, int64_t T, int64_t H, int64_t K, int64_t NT) {
  using namespace fwd_split;
  namespace wmma = nvcuda::wmma;
  using FragA = wmma::fragment<wmma::matrix_a, 16, 16, 16, E, wmma::row_major>;
  using FragBT = wmma::fragment<wmma::matrix_b, 16, 16, 16, E, wmma::col_major>;
  using FragC = wmma::fragment<wmma::accumulator, 16, 16, 16, float>;
  constexpr int LQ = ld_half(KP), LB = ld_float(KP), LAF = ld_float(C);
  constexpr size_t o_qs = 0, o_ks = o_qs + align128(size_t(C) * LQ * 2), o_bs = o_ks + align128(size_t(C) * LQ * 2),
                   o_kr = o_bs + align128(size_t(C) * LB * 4), o_qr = o_kr + align128(size_t(3) * 16 * LQ * 2),
                   o_af = o_qr + align128(size_t(6) * 16 * LQ * 2);
  extern __shared__ __align__(128) unsigned char smem_raw[];
  E* qs = reinterpret_cast<E*>(smem_raw + o_qs);
  E* ks = reinterpret_cast<E*>(smem_raw + o_ks);
  float* bs = reinterpret_cast<float*>(smem_raw + o_bs);
  E* kr = reinterpret_cast<E*>(smem_raw + o_kr);
  E* qr = reinterpret_cast<E*>(smem_raw + o_qr);
  float* af = reinterpret_cast<float*>(smem_raw + o_af);

  int64_t bos, eos;
  const int64_t slot = first_slot(cu, blockIdx.z, T, NT, &bos, &eos) + blockIdx.x;
  const int64_t c0 = bos + int64_t(blockIdx.x) * C, h = blockIdx.y;
  if (c0 >= eos) return;
  const int nc = int(eos - c0 < C ? eos - c0 : C);
  const int tid = threadIdx.x, warp = tid / 32, lane = tid % 32;
  const bool vec = K == KP && (K * H) % 8 == 0 && reinterpret_cast<uintptr_t>(q) % 16 == 0 &&
                   reinterpret_cast<uintptr_t>(k) % 16 == 0;

  fwd_tc::load_tile<KP>(qs, LQ, q + (c0 * H + h) * K, H * K, C, nc, int(K), vec);
  fwd_tc::load_tile<KP>(ks, LQ, k + (c0 * H + h) * K, H * K, C, nc, int(K), vec);
  load_b<KP, kScalarGate>(bs, LB, b, c0, nc, h, H, K);
  __syncthreads();

  if constexpr (!kScalarGate) {
    for (int e = tid; e < 3 * 16 * KP; e += kThreads) {  // kr[jb][j] = k_j 2^(b_r − b_j)
      const int jb = e / (16 * KP), j = (e / KP) % 16, kk = e % KP;
      const int row = 16 * jb + j, r = 16 * jb + 15;
      kr[(jb * 16 + j) * LQ + kk] =
          fwd_tc::from_f<E>(fwd_tc::to_f(ks[row * LQ + kk]) * exp2f(bs[r * LB + kk] - bs[row * LB + kk]));
    }
    for (int e = tid; e < 6 * 16 * KP; e += kThreads) {  // qr[p][i] = q_i 2^(b_i − b_r)
      const int p = e / (16 * KP), i = (e / KP) % 16, kk = e % KP;
      int ib, jb;
      fwd_tc::pair_of(p, &ib, &jb);
      const int row = 16 * ib + i, r = 16 * jb + 15;
      qr[(p * 16 + i) * LQ + kk] =
          fwd_tc::from_f<E>(fwd_tc::to_f(qs[row * LQ + kk]) * exp2f(bs[row * LB + kk] - bs[r * LB + kk]));
    }
    {  // diagonal block warp/2 on FFMA, j <= i only
      const int blk = warp >> 1, i = 16 * blk + (lane & 15), j0 = 16 * blk + 4 * ((warp & 1) * 2 + (lane >> 4));
      float a[4] = {0.f, 0.f, 0.f, 0.f};
#pragma unroll 4
      for (int kk = 0; kk < KP; ++kk) {
        const float qi = fwd_tc::to_f(qs[i * LQ + kk]), bi = bs[i * LB + kk];
#pragma unroll
        for (int jj = 0; jj < 4; ++jj) {
          const int j = j0 + jj;
          if (j <= i) a[jj] += qi * (fwd_tc::to_f(ks[j * LQ + kk]) * exp2f(bi - bs[j * LB + kk]));
        }
      }
#pragma unroll
      for (int jj = 0; jj < 4; ++jj) af[i * LAF + j0 + jj] = a[jj];
    }
    __syncthreads();
    if (warp < 6) {
      int ib, jb;
      fwd_tc::pair_of(warp, &ib, &jb);
      FragC acc;
      wmma::fill_fragment(acc, 0.f);
#pragma unroll
      for (int k0 = 0; k0 < KP; k0 += 16) {
        FragA fa;
        FragBT fb;
        wmma::load_matrix_sync(fa, qr + (warp * 16) * LQ + k0, LQ);
        wmma::load_matrix_sync(fb, kr + (jb * 16) * LQ + k0, LQ);
        wmma::mma_sync(acc, fa, fb, acc);
      }
      wmma::store_matrix_sync(af + (16 * ib) * LAF + 16 * jb, acc, LAF, wmma::mem_row_major);
    }
  } else {
    for (int p = warp; p < 10; p += kWarps) {  // lower blocks (ib >= jb)
      int ib = 0, jb = p;
      while (jb > ib) jb -= ++ib;
      FragC acc;
      wmma::fill_fragment(acc, 0.f);
#pragma unroll
      for (int k0 = 0; k0 < KP; k0 += 16) {
        FragA fa;
        FragBT fb;
        wmma::load_matrix_sync(fa, qs + (16 * ib) * LQ + k0, LQ);
        wmma::load_matrix_sync(fb, ks + (16 * jb) * LQ + k0, LQ);
        wmma::mma_sync(acc, fa, fb, acc);
      }
      wmma::store_matrix_sync(af + (16 * ib) * LAF + 16 * jb, acc, LAF, wmma::mem_row_major);
    }
  }
  __syncthreads();
  E* Aout = A + (slot * H + h) * C * C;
  for (int e = tid; e < C * C; e += kThreads) {  // select: j > i is never read
    const int i = e / C, j = e % C;
    float a = 0.f;
    if (j <= i) {
      a = af[i * LAF + j];
      if constexpr (kScalarGate) a = a * exp2f(bs[i * LB] - bs[j * LB]);
    }
    Aout[e] = fwd_tc::from_f<E>(a);
  }
}

/// 3. The state pass: S ← 2^(b_last) ⊙ S + (k ⊙ 2^(b_last − b))ᵀ v per chunk, storing the S that
/// enters each chunk (rounded to E: it is an MMA operand of kernel 4) to ws.S [slot, H, K, V], the
/// final S to hT. Grid (ceil(V / BV), H, N).
template <class E, bool kScalarGate, int BV, int KP>
__global__ void __launch_bounds__(fwd_split::kThreads)
    sm90_glr_fwd_state(const E* __restrict__ k, const E* __restrict__ v, const float* __restrict__ b,
                       const float* __restrict__ h0, E* __restrict__ Sws, float* __restrict__ hT,
                       const int64_t* __restrict__ cu, int64_t T, int64_t H, int64_t K, int64_t V, int64_t NT) {
  using namespace fwd_split;
  namespace wmma = nvcuda::wmma;
  using FragAT = wmma::fragment<wmma::matrix_a, 16, 16, 16, E, wmma::col_major>;
  using FragB = wmma::fragment<wmma::matrix_b, 16, 16, 16, E, wmma::row_major>;
  using FragC = wmma::fragment<wmma::accumulator, 16, 16, 16, float>;
  constexpr int LQ = ld_half(KP), LB = ld_float(KP), LV = ld_half(BV), LS = ld_float(BV);
  constexpr size_t o_ks = 0, o_bs = o_ks + align128(size_t(C) * LQ * 2), o_vs = o_bs + align128(size_t(C) * LB * 4),
                   o_s = o_vs + align128(size_t(C) * LV * 2), o_el = o_s + align128(size_t(KP) * LS * 4);
  extern __shared__ __align__(128) unsigned char smem_raw[];
  E* ks = reinterpret_cast<E*>(smem_raw + o_ks);
  float* bs = reinterpret_cast<float*>(smem_raw + o_bs);
  E* vs = reinterpret_cast<E*>(smem_raw + o_vs);
  float* S = reinterpret_cast<float*>(smem_raw + o_s);
  float* el = reinterpret_cast<float*>(smem_raw + o_el);

  const int tid = threadIdx.x, warp = tid / 32;
  const int64_t v0 = int64_t(blockIdx.x) * BV, h = blockIdx.y, n = blockIdx.z;
  const int vw = int(V - v0 < BV ? V - v0 : BV);
  int64_t bos, eos;
  const int64_t slot0 = first_slot(cu, n, T, NT, &bos, &eos);
  const bool vec_k = K == KP && (K * H) % 8 == 0 && reinterpret_cast<uintptr_t>(k) % 16 == 0;
  const bool vec_v = vw == BV && V % 8 == 0 && (V * H) % 8 == 0 && reinterpret_cast<uintptr_t>(v) % 16 == 0;

  for (int e = tid; e < KP * BV; e += kThreads) {
    const int kk = e / BV, vv = e % BV;
    S[kk * LS + vv] = (h0 && kk < K && vv < vw) ? h0[((n * H + h) * K + kk) * V + v0 + vv] : 0.f;
  }
  __syncthreads();

  int64_t slot = slot0;
  for (int64_t c0 = bos; c0 < eos; c0 += C, ++slot) {  // uniform per CTA
    const int nc = int(eos - c0 < C ? eos - c0 : C);
    E* Sout = Sws + (slot * H + h) * K * V + v0;
    for (int e = tid; e < KP * BV; e += kThreads) {  // the S entering this chunk
      const int kk = e / BV, vv = e % BV;
      if (kk < K && vv < vw) Sout[kk * V + vv] = fwd_tc::from_f<E>(S[kk * LS + vv]);
    }
    fwd_tc::load_tile<KP>(ks, LQ, k + (c0 * H + h) * K, H * K, C, nc, int(K), vec_k);
    fwd_tc::load_tile<BV>(vs, LV, v + (c0 * H + h) * V + v0, H * V, C, nc, vw, vec_v);
    load_b<KP, kScalarGate>(bs, LB, b, c0, nc, h, H, K);
    __syncthreads();
    for (int e = tid; e < C * KP; e += kThreads) {  // k ⊙ 2^(b_last − b) in place
      const int i = e / KP, kk = e % KP;
      ks[i * LQ + kk] = fwd_tc::from_f<E>(fwd_tc::to_f(ks[i * LQ + kk]) * exp2f(bs[(C - 1) * LB + kk] - bs[i * LB + kk]));
    }
    for (int kk = tid; kk < KP; kk += kThreads) el[kk] = exp2f(bs[(C - 1) * LB + kk]);
    __syncthreads();
    for (int e = tid; e < KP * BV; e += kThreads) {
      const int kk = e / BV, vv = e % BV;
      S[kk * LS + vv] *= el[kk];
    }
    __syncthreads();
    for (int t = warp; t < (KP / 16) * (BV / 16); t += kWarps) {
      const int rt = t / (BV / 16), ct = t % (BV / 16);
      FragC acc;
      wmma::load_matrix_sync(acc, S + (16 * rt) * LS + 16 * ct, LS, wmma::mem_row_major);
#pragma unroll
      for (int jb = 0; jb < C / 16; ++jb) {
        FragAT fa;
        FragB fb;
        wmma::load_matrix_sync(fa, ks + (16 * jb) * LQ + 16 * rt, LQ);
        wmma::load_matrix_sync(fb, vs + (16 * jb) * LV + 16 * ct, LV);
        wmma::mma_sync(acc, fa, fb, acc);
      }
      wmma::store_matrix_sync(S + (16 * rt) * LS + 16 * ct, acc, LS, wmma::mem_row_major);
    }
    __syncthreads();
  }
  if (hT) {
    for (int e = tid; e < KP * BV; e += kThreads) {
      const int kk = e / BV, vv = e % BV;
      if (kk < K && vv < vw) hT[((n * H + h) * K + kk) * V + v0 + vv] = S[kk * LS + vv];
    }
  }
}

/// 4. o = scale·((q ⊙ 2^b)·S_c + A·v): MMAs for the inter product and A's off-diagonal blocks, the
/// diagonal blocks' A·v on FFMA over j <= i. Grid (NT, H·ceil(V / BV), N).
template <class E, bool kScalarGate, int BV, int KP>
__global__ void __launch_bounds__(fwd_split::kThreads)
    sm90_glr_fwd_out(const E* __restrict__ q, const E* __restrict__ v, const float* __restrict__ b,
                     const E* __restrict__ A, const E* __restrict__ Sws, E* __restrict__ o,
                     const int64_t* __restrict__ cu, int64_t T, int64_t H, int64_t K, int64_t V, int64_t NT,
                     float scale) {
  using namespace fwd_split;
  namespace wmma = nvcuda::wmma;
  using FragA = wmma::fragment<wmma::matrix_a, 16, 16, 16, E, wmma::row_major>;
  using FragB = wmma::fragment<wmma::matrix_b, 16, 16, 16, E, wmma::row_major>;
  using FragC = wmma::fragment<wmma::accumulator, 16, 16, 16, float>;
  constexpr int LQ = ld_half(KP), LB = ld_float(KP), LV = ld_half(BV), LA = ld_half(C), LS = ld_half(BV),
                LO = ld_float(BV);
  constexpr size_t o_qs = 0, o_bs = o_qs + align128(size_t(C) * LQ * 2), o_vs = o_bs + align128(size_t(C) * LB * 4),
                   o_as = o_vs + align128(size_t(C) * LV * 2), o_ss = o_as + align128(size_t(C) * LA * 2),
                   o_of = o_ss + align128(size_t(KP) * LS * 2);
  extern __shared__ __align__(128) unsigned char smem_raw[];
  E* qs = reinterpret_cast<E*>(smem_raw + o_qs);
  float* bs = reinterpret_cast<float*>(smem_raw + o_bs);
  E* vs = reinterpret_cast<E*>(smem_raw + o_vs);
  E* as = reinterpret_cast<E*>(smem_raw + o_as);
  E* ss = reinterpret_cast<E*>(smem_raw + o_ss);
  float* of = reinterpret_cast<float*>(smem_raw + o_of);

  const int64_t nvt = cdiv(V, BV);
  const int64_t h = blockIdx.y / nvt, v0 = (blockIdx.y % nvt) * BV;
  int64_t bos, eos;
  const int64_t slot = first_slot(cu, blockIdx.z, T, NT, &bos, &eos) + blockIdx.x;
  const int64_t c0 = bos + int64_t(blockIdx.x) * C;
  if (c0 >= eos) return;
  const int nc = int(eos - c0 < C ? eos - c0 : C), vw = int(V - v0 < BV ? V - v0 : BV);
  const int tid = threadIdx.x, warp = tid / 32, lane = tid % 32;
  const bool vec_q = K == KP && (K * H) % 8 == 0 && reinterpret_cast<uintptr_t>(q) % 16 == 0;
  const bool vec_v = vw == BV && V % 8 == 0 && (V * H) % 8 == 0 && reinterpret_cast<uintptr_t>(v) % 16 == 0;

  fwd_tc::load_tile<KP>(qs, LQ, q + (c0 * H + h) * K, H * K, C, nc, int(K), vec_q);
  fwd_tc::load_tile<BV>(vs, LV, v + (c0 * H + h) * V + v0, H * V, C, nc, vw, vec_v);
  load_b<KP, kScalarGate>(bs, LB, b, c0, nc, h, H, K);
  const E* Ain = A + (slot * H + h) * C * C;
  for (int e = tid; e < C * C; e += kThreads) as[(e / C) * LA + e % C] = Ain[e];
  const E* Sin = Sws + (slot * H + h) * K * V + v0;
  for (int e = tid; e < KP * BV; e += kThreads) {
    const int kk = e / BV, vv = e % BV;
    ss[kk * LS + vv] = (kk < K && vv < vw) ? Sin[kk * V + vv] : fwd_tc::from_f<E>(0.f);
  }
  __syncthreads();
  for (int e = tid; e < C * KP; e += kThreads) {  // q ⊙ 2^b in place
    const int i = e / KP, kk = e % KP;
    qs[i * LQ + kk] = fwd_tc::from_f<E>(fwd_tc::to_f(qs[i * LQ + kk]) * exp2f(bs[i * LB + kk]));
  }
  __syncthreads();
  {
    constexpr int kTiles = BV / 16 > 1 ? BV / 32 : 1;
    const int blk = warp >> 1, ct0 = warp & 1;
    if (ct0 < BV / 16) {
      FragC acc[kTiles];
#pragma unroll
      for (int t = 0; t < kTiles; ++t) wmma::fill_fragment(acc[t], 0.f);
#pragma unroll
      for (int k0 = 0; k0 < KP; k0 += 16) {
        FragA fa;
        wmma::load_matrix_sync(fa, qs + (16 * blk) * LQ + k0, LQ);
#pragma unroll
        for (int t = 0; t < kTiles; ++t) {
          FragB fb;
          wmma::load_matrix_sync(fb, ss + k0 * LS + 16 * (ct0 + 2 * t), LS);
          wmma::mma_sync(acc[t], fa, fb, acc[t]);
        }
      }
      for (int jb = 0; jb < blk; ++jb) {
        FragA fa;
        wmma::load_matrix_sync(fa, as + (16 * blk) * LA + 16 * jb, LA);
#pragma unroll
        for (int t = 0; t < kTiles; ++t) {
          FragB fb;
          wmma::load_matrix_sync(fb, vs + (16 * jb) * LV + 16 * (ct0 + 2 * t), LV);
          wmma::mma_sync(acc[t], fa, fb, acc[t]);
        }
      }
#pragma unroll
      for (int t = 0; t < kTiles; ++t)
        wmma::store_matrix_sync(of + (16 * blk) * LO + 16 * (ct0 + 2 * t), acc[t], LO, wmma::mem_row_major);
    }
  }
  __syncthreads();
  for (int e = lane; e < 8 * BV; e += 32) {  // warp: 8 rows of block warp/2
    const int i = 16 * (warp >> 1) + 8 * (warp & 1) + e / BV, vv = e % BV;
    float a = of[i * LO + vv];
    for (int j = 16 * (warp >> 1); j <= i; ++j) a += fwd_tc::to_f(as[i * LA + j]) * fwd_tc::to_f(vs[j * LV + vv]);
    if (i < nc && vv < vw) o[((c0 + i) * H + h) * V + v0 + vv] = fwd_tc::from_f<E>(scale * a);
  }
}

namespace fwd_split {

inline Status status(const char* what, cudaError_t e) {
  return {std::string("glr::cuda::forward (split): ") + what + ": " + cudaGetErrorName(e) + " (" +
          cudaGetErrorString(e) + ")"};
}

template <class Kern>
inline Status allow_smem(Kern* kernel, size_t bytes) {
  if (bytes <= 48 * 1024) return {};
  if (const cudaError_t e = cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, int(bytes));
      e != cudaSuccess)
    return status("cudaFuncSetAttribute", e);
  return {};
}

template <class E, bool kScalarGate, int BV, int KP>
Status launch_kp(const FwdParams& p, cudaStream_t stream) {
  const Shape& s = p.shape;
  const Layout l = layout(s);
  const int64_t N = s.sequences(), GW = kScalarGate ? 1 : s.K;
  auto* ws = static_cast<unsigned char*>(p.workspace);
  float* b = reinterpret_cast<float*>(ws + l.b);
  E* A = reinterpret_cast<E*>(ws + l.A);
  E* Sws = reinterpret_cast<E*>(ws + l.S);
  const auto* q = static_cast<const E*>(p.q);
  const auto* k = static_cast<const E*>(p.k);
  const auto* v = static_cast<const E*>(p.v);
  const int64_t nvt = cdiv(s.V, BV);

  if (l.NT > 0) {
    sm90_glr_fwd_cumsum<<<dim3(unsigned(l.NT), unsigned(s.H), unsigned(N)), kThreads, 0, stream>>>(
        static_cast<const float*>(p.g), b, s.cu_seqlens, s.T, s.H, GW, l.NT);
    constexpr int LQ = ld_half(KP), LB = ld_float(KP);
    constexpr size_t intra_bytes = 2 * align128(size_t(C) * LQ * 2) + align128(size_t(C) * LB * 4) +
                                   align128(size_t(3) * 16 * LQ * 2) + align128(size_t(6) * 16 * LQ * 2) +
                                   align128(size_t(C) * ld_float(C) * 4);
    auto* intra = &sm90_glr_fwd_intra<E, kScalarGate, KP>;
    if (Status st = allow_smem(intra, intra_bytes); !st.ok()) return st;
    intra<<<dim3(unsigned(l.NT), unsigned(s.H), unsigned(N)), kThreads, intra_bytes, stream>>>(q, k, b, A, s.cu_seqlens,
                                                                                            s.T, s.H, s.K, l.NT);
  }
  constexpr size_t state_bytes = align128(size_t(C) * ld_half(KP) * 2) + align128(size_t(C) * ld_float(KP) * 4) +
                                 align128(size_t(C) * ld_half(BV) * 2) + align128(size_t(KP) * ld_float(BV) * 4) +
                                 align128(size_t(KP) * 4);
  auto* state = &sm90_glr_fwd_state<E, kScalarGate, BV, KP>;
  if (Status st = allow_smem(state, state_bytes); !st.ok()) return st;
  state<<<dim3(unsigned(nvt), unsigned(s.H), unsigned(N)), kThreads, state_bytes, stream>>>(
      k, v, b, static_cast<const float*>(p.h0), Sws, static_cast<float*>(p.hT), s.cu_seqlens, s.T, s.H, s.K, s.V,
      l.NT);
  if (l.NT > 0) {
    constexpr size_t out_bytes = align128(size_t(C) * ld_half(KP) * 2) + align128(size_t(C) * ld_float(KP) * 4) +
                                 align128(size_t(C) * ld_half(BV) * 2) + align128(size_t(C) * ld_half(C) * 2) +
                                 align128(size_t(KP) * ld_half(BV) * 2) + align128(size_t(C) * ld_float(BV) * 4);
    auto* out = &sm90_glr_fwd_out<E, kScalarGate, BV, KP>;
    if (Status st = allow_smem(out, out_bytes); !st.ok()) return st;
    out<<<dim3(unsigned(l.NT), unsigned(s.H * nvt), unsigned(N)), kThreads, out_bytes, stream>>>(
        q, v, b, A, Sws, static_cast<E*>(p.o), s.cu_seqlens, s.T, s.H, s.K, s.V, l.NT, float(p.scale));
  }
  if (const cudaError_t e = cudaGetLastError(); e != cudaSuccess) return status("launch", e);
  return {};
}

template <class E, bool kScalarGate, int BV>
Status launch_bv(const FwdParams& p, cudaStream_t stream) {
  if (p.shape.K <= 32) return launch_kp<E, kScalarGate, BV, 32>(p, stream);
  if (p.shape.K <= 64) return launch_kp<E, kScalarGate, BV, 64>(p, stream);
  return launch_kp<E, kScalarGate, BV, 128>(p, stream);
}

/// BV of the state pass (the only kernel whose grid the sequences and heads limit): the widest
/// tile whose grid fills the device.
template <class E, bool kScalarGate>
Status launch_gate(const FwdParams& p, cudaStream_t stream) {
  const Shape& s = p.shape;
  const int64_t heads = s.H * s.sequences(), sms = fwd_tc::sm_count();
  if (s.V > 32 && cdiv(s.V, 64) * heads >= sms) return launch_bv<E, kScalarGate, 64>(p, stream);
  if (s.V > 16 && cdiv(s.V, 32) * heads >= sms) return launch_bv<E, kScalarGate, 32>(p, stream);
  return launch_bv<E, kScalarGate, 16>(p, stream);
}

/// Whether the split forward takes this shape: bf16 and f16 inputs, K <= 128, chunk 64.
inline bool takes(const Shape& s) {
  return (s.dtype == DType::bf16 || s.dtype == DType::f16) && s.K <= fwd_tc::kMaxK && s.chunk == C;
}

inline size_t workspace_bytes(const Shape& s) { return takes(s) ? layout(s).bytes : 0; }

template <class E>
Status launch(const FwdParams& p, cudaStream_t stream) {
  return p.shape.gate == Gate::scalar ? launch_gate<E, true>(p, stream) : launch_gate<E, false>(p, stream);
}

}  // namespace fwd_split

}  // namespace glr::cuda::sm90
