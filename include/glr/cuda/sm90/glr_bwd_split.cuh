/// glr CUDA family, sm90 tensor-core backward split in six kernels (docs/glr.md, "The split
/// backward"): bwd_slice of glr/cpu_chunked.hpp for bf16/f16 inputs, K <= 128, chunk 64, its matrix
/// products on WMMA m16n16k16 (operands in the input dtype, fp32 accumulation), every state,
/// partial sum and reduction in fp32. Only the two state passes walk; the rest is per chunk.
///   1. sm90_glr_bwd_cumsum  per (chunk, head):          b = chunk-local Σ g·log2e        -> ws.b
///   2. sm90_glr_fwd_prep    per (chunk, head):          A (j <= i, input dtype) and the walk's
///        operands (glr_fwd_split.cuh)                                             -> ws.fwd
///   3. sm90_glr_fwd_walk    per (V x K tile, head, seq): S entering each chunk (E)  -> ws.fwd S,
///                                                       the final S (fp32)               -> ws.hfin
///   4. sm90_glr_bwd_dstate  per (V tile, head, seq):    chunks in reverse, G (fp32) = the gradient
///        of the state leaving the chunk, from dhT: stores G (E) -> ws.dS, the V-tile partial dg
///        seeds Σ_v G ⊙ S_end -> ws.seeds, then G ← 2^(b_last) ⊙ G + (scale·q ⊙ 2^b)ᵀ do; dh0 = G.
///   5. sm90_glr_bwd_dqk     per (chunk, head):          over V tiles DV = do·vᵀ, do·S_cᵀ, v·G_cᵀ;
///        then dq, dk (intra through DV with factored decays) and dg         -> dq, dk, dg
///   6. sm90_glr_bwd_dv      per (chunk, head, V tile):  dv = scale·Aᵀ·do + (k ⊙ 2^(b_last−b))·G_c
/// Kernels 2-3 are the forward split's own (fwd_split::launch_states), so S_c and A are the forward's bits.
///
/// Per chunk (rows i, j; 16-row blocks; m = 1, 2, 3 and its reference row r = 16m − 1):
///   Kr_m[j] = k_j ⊙ 2^(b_r − b_j)  (j <= r),   Qr_m[i] = q_i ⊙ 2^(b_i − b_r)  (i > r)
///   dq_i = scale·( 2^(b_i) ⊙ (do_i·S_cᵀ) + 2^(b_i − b_r) ⊙ Σ_{j < 16m} DV_ij Kr_m[j]      (i in block m)
///                  + Σ_{j in i's block, j <= i} DV_ij k_j ⊙ 2^(b_i − b_j) )                  (FFMA, select)
///   dk_j = 2^(b_last − b_j) ⊙ (v_j·G_cᵀ) + scale·( 2^(b_r − b_j) ⊙ Σ_{i > r} DV_ij Qr_m[i]  (j in block m−1)
///                  + Σ_{i in j's block, i >= j} DV_ij q_i ⊙ 2^(b_i − b_j) )                  (FFMA, select)
///   dv_j = scale·( Σ_{i in later blocks} A_ij do_i + Σ_{i in j's block, i >= j} A_ij do_i ) + Kt_j·G_c
///   dg_i = Σ_v G_c ⊙ S_end + Σ_{i' >= i} (q ⊙ dq − k ⊙ dk)_{i'}            (scalar gate: also Σ over K)
/// Every 2^ argument is b_i, b_last − b_j, or b_i − b_j with i >= j, so <= 0 when g <= 0 (both
/// factors of an off-diagonal block are <= 1, as in the forward's A). The operands rounded to the
/// input dtype, once each: DV, Kr, Qr, A (and its factored operands, kernel 2), S_c, G_c,
/// scale·q ⊙ 2^b, k ⊙ 2^(b_last − b) — the roundings the bf16/f16 contracts admit (docs/glr.md, ρ
/// of dq, dk 2, dv 3, dh0 1, dg 3 and 3 on its seed, whose S_end is rounded and G fp32).
/// Masking is by select: the diagonal blocks' products run on FFMA over the live triangle only, DV
/// and A are selected to 0 outside j <= i < nc before they enter an MMA, and every operand row past
/// the chunk's end is selected to 0 (a padded row never makes 0·Inf). Deterministic: fixed tiling,
/// fixed loop orders, the V-tile seeds summed in order, no atomics.
/// NOTES: status — written in session 14 without a GPU (branch wip-bwdtc); routed by launch_bwd
/// (glr_bwd.cuh) for the shapes of `takes`, to be judged by glr_cuda_tests and the gates on the H200.
#pragma once

#include <mma.h>

#include <cstdint>
#include <string>

#include "glr/cuda.hpp"
#include "glr/cuda/sm90/common.cuh"
#include "glr/cuda/sm90/glr_fwd_split.cuh"
#include "glr/cuda/sm90/glr_fwd_tc.cuh"

namespace glr::cuda::sm90 {

namespace bwd_split {

using fwd_split::align256;
using fwd_split::cdiv;
using fwd_split::first_slot;
using fwd_tc::align128;
using fwd_tc::C;
using fwd_tc::from_f;
using fwd_tc::ld_float;
using fwd_tc::ld_half;
using fwd_tc::to_f;
using fwd_tc::kLog2e;
inline constexpr int kThreads = 256;
inline constexpr int kWarps = kThreads / 32;
inline constexpr int kBV = 64;  // V tile of kernels 5 and 6

/// Workspace layout (byte offsets): b, then the forward split's own workspace (A, S, q⊙2^b,
/// k⊙2^(b_last−b), 2^(b_last): fwd_split::layout, at `fwd`), then dS, the final states and the dg
/// seeds (sized for the narrowest V tile of kernel 4, 16).
struct Layout {
  int64_t NT = 0, slots = 0, BT = 0, nvt_max = 0;
  size_t b = 0, fwd = 0, A = 0, S = 0, dS = 0, hfin = 0, seeds = 0, bytes = 0;
};

inline Layout layout(const Shape& s) {
  const fwd_split::Layout f = fwd_split::layout(s);
  Layout l;
  const int64_t H = s.H < 1 ? 1 : s.H, K = s.K < 1 ? 1 : s.K, V = s.V < 1 ? 1 : s.V;
  const int64_t N = s.sequences() < 1 ? 1 : s.sequences();
  const int64_t GW = s.gate == Gate::scalar ? 1 : K;
  l.NT = f.NT;
  l.slots = f.slots;
  l.BT = f.BT;
  l.nvt_max = cdiv(V, 16);
  l.b = 0;                                                          // [BT, H, GW] fp32
  l.fwd = align256(size_t(l.BT) * H * GW * 4);
  l.A = l.fwd + f.A;
  l.S = l.fwd + f.S;
  l.dS = l.fwd + f.bytes;                                           // [slots, H, K, V] E
  l.hfin = l.dS + align256(size_t(l.slots) * H * K * V * 2);        // [N, H, K, V] fp32
  l.seeds = l.hfin + align256(size_t(N) * H * K * V * 4);           // [nvt, slots, H, K] fp32
  l.bytes = l.seeds + align256(size_t(l.nvt_max) * l.slots * H * K * 4);
  return l;
}

/// Loads rows [c0, c0+nc) of b (gate width GW) into bs [C][ld], padding columns >= K and rows >= nc
/// with the chunk's last value (b_last: a padded row adds no decay), scalar gate broadcast over KP.
template <int KP, bool kScalarGate>
__device__ __forceinline__ void load_b(float* bs, int ld, const float* b, int64_t c0, int nc, int64_t h, int64_t H,
                                       int64_t K) {
  const int64_t GW = kScalarGate ? 1 : K;
#pragma unroll 8
  for (int e = threadIdx.x; e < C * KP; e += kThreads) {
    const int i = e / KP, kk = e % KP;
    const int row = i < nc ? i : nc - 1;
    const int64_t x = kScalarGate ? 0 : (kk < K ? kk : -1);
    bs[i * ld + kk] = x < 0 ? 0.f : b[((c0 + row) * H + h) * GW + x];
  }
}

/// Off-diagonal operand rows: Kr_m holds rows j < 16m at kr_row(m) + j, Qr_m rows i >= 16m at
/// qr_row(m) + i − 16m (m = 1, 2, 3; 96 rows each in all).
__host__ __device__ constexpr int kr_row(int m) { return 8 * m * (m - 1); }
__host__ __device__ constexpr int qr_row(int m) { return 8 * (m - 1) * (8 - m); }

/// The ten lower 16-blocks (ib >= jb) of a 64 x 64 matrix, p = 0..9, row-major.
__device__ __forceinline__ void lower_block(int p, int* ib, int* jb) {
  int i = 0, j = p;
  while (j > i) j -= ++i;
  *ib = i;
  *jb = j;
}

/// Shared-memory plan of kernel 4 (byte offsets).
struct DstatePlan {
  size_t qs = 0, bs = 0, ds = 0, G = 0, se = 0, el = 0, total = 0;
  __host__ __device__ constexpr size_t take(size_t bytes) {
    const size_t here = total;
    total += align128(bytes);
    return here;
  }
  __host__ __device__ constexpr DstatePlan(int KP, int BV) {
    qs = take(size_t(C) * ld_half(KP) * 2);     // q, then scale·q ⊙ 2^b    (E)   [C, KP]
    bs = take(size_t(C) * ld_float(KP) * 4);    // b                        (fp32) [C, KP]
    ds = take(size_t(C) * ld_half(BV) * 2);     // do tile                  (E)   [C, BV]
    G = take(size_t(KP) * ld_float(BV) * 4);    // the state gradient       (fp32) [KP, BV]
    se = take(size_t(KP) * ld_float(BV) * 4);   // S leaving the chunk      (fp32) [KP, BV]
    el = take(size_t(KP) * 4);                  // 2^(b_last) per K row
  }
};

/// Shared-memory plan of kernel 5 (byte offsets). R1 holds the V tiles during the V loop, then
/// Kr and Qr; kr's space later stages dk's off-diagonal product (48 x KP fp32 fits in 96 x LQ E).
struct DqkPlan {
  size_t qs = 0, ks = 0, bs = 0, dvf = 0, dvb = 0, r1 = 0, dos = 0, vs = 0, hs = 0, gs = 0, kr = 0, qr = 0, dqs = 0,
         dks = 0, red = 0, total = 0;
  __host__ __device__ constexpr size_t take(size_t bytes) {
    const size_t here = total;
    total += align128(bytes);
    return here;
  }
  __host__ __device__ constexpr DqkPlan(int KP) {
    qs = take(size_t(C) * ld_half(KP) * 2);    // q            (E)    [C, KP]
    ks = take(size_t(C) * ld_half(KP) * 2);    // k            (E)    [C, KP]
    bs = take(size_t(C) * ld_float(KP) * 4);   // b            (fp32) [C, KP]
    dvf = take(size_t(C) * ld_float(C) * 4);   // DV = do·vᵀ   (fp32) [C, C], lower blocks
    dvb = take(size_t(C) * ld_half(C) * 2);    // DV selected to the off-diagonal blocks, rounded (E)
    const size_t tile = align128(size_t(C) * ld_half(kBV) * 2), state = align128(size_t(KP) * ld_half(kBV) * 2);
    const size_t ops = align128(size_t(96) * ld_half(KP) * 2);
    r1 = take(2 * tile + 2 * state > 2 * ops ? 2 * tile + 2 * state : 2 * ops);
    dos = r1;                                  // do tile      (E)    [C, kBV]
    vs = r1 + tile;                            // v tile       (E)    [C, kBV]
    hs = r1 + 2 * tile;                        // S_c tile     (E)    [KP, kBV]
    gs = r1 + 2 * tile + state;                // G_c tile     (E)    [KP, kBV]
    kr = r1;                                   // Kr_1..3      (E)    [96, KP]
    qr = r1 + ops;                             // Qr_1..3      (E)    [96, KP]
    dqs = take(size_t(C) * ld_float(KP) * 4);  // dq           (fp32) [C, KP]
    dks = take(size_t(C) * ld_float(KP) * 4);  // dk; first the staging of dq's off-diagonal product
    red = take(size_t(KP + C) * 4);            // scalar gate: per-column seeds, per-row sums
  }
};

/// Shared-memory plan of kernel 6 (byte offsets).
struct DvPlan {
  size_t as = 0, dos = 0, kt = 0, gs = 0, stg = 0, bl = 0, total = 0;
  __host__ __device__ constexpr size_t take(size_t bytes) {
    const size_t here = total;
    total += align128(bytes);
    return here;
  }
  __host__ __device__ constexpr DvPlan(int KP) {
    as = take(size_t(C) * ld_half(C) * 2);        // A, rows past the chunk 0   (E)    [C, C]
    dos = take(size_t(C) * ld_half(kBV) * 2);     // do tile                    (E)    [C, kBV]
    kt = take(size_t(C) * ld_half(KP) * 2);       // k ⊙ 2^(b_last − b)         (E)    [C, KP]
    gs = take(size_t(KP) * ld_half(kBV) * 2);     // G_c tile                   (E)    [KP, kBV]
    stg = take(size_t(C) * ld_float(kBV) * 4);    // dv accumulation            (fp32) [C, kBV]
    bl = take(size_t(KP) * 4);                    // b_last per K column
  }
};

}  // namespace bwd_split

/// 1. b = Σ_{i' <= i} g_{c0+i'}·log2e down each gate column, per chunk; grid (NT, H, N), threads
/// over the gate width GW (1 or K) in steps of kThreads (the forward keeps b in shared memory; the
/// backward's kernels read it from here).
__global__ void __launch_bounds__(bwd_split::kThreads)
    sm90_glr_bwd_cumsum(const float* __restrict__ g, float* __restrict__ b, const int64_t* __restrict__ cu,
                        int64_t T, int64_t H, int64_t GW, int64_t NT) {
  using namespace bwd_split;
  int64_t bos, eos;
  first_slot(cu, blockIdx.z, T, NT, &bos, &eos);
  const int64_t c0 = bos + int64_t(blockIdx.x) * C, h = blockIdx.y;
  if (c0 >= eos) return;
  const int nc = int(eos - c0 < C ? eos - c0 : C);
  for (int64_t x = threadIdx.x; x < GW; x += kThreads) {
    float a = 0.f;
#pragma unroll 8
    for (int i = 0; i < nc; ++i) {
      const int64_t at = ((c0 + i) * H + h) * GW + x;
      a += g[at] * kLog2e;
      b[at] = a;
    }
  }
}


/// 4. The reverse state pass. Grid (ceil(V / BV), H, N). G starts as dhT (or 0); for each chunk c,
/// last first: G (rounded) -> dS[slot c], the partial seeds Σ_{v in tile} G ⊙ S_end -> seeds[vt],
/// then G ← 2^(b_last) ⊙ G + (scale·q ⊙ 2^b)ᵀ·do. Finally dh0 = G.
template <class E, bool kScalarGate, int BV, int KP>
__global__ void __launch_bounds__(bwd_split::kThreads)
    sm90_glr_bwd_dstate(const E* __restrict__ q, const E* __restrict__ dO, const float* __restrict__ b,
                        const float* __restrict__ dhT, const E* __restrict__ Sws, const float* __restrict__ hfin,
                        E* __restrict__ dSws, float* __restrict__ seeds, float* __restrict__ dh0,
                        const int64_t* __restrict__ cu, int64_t T, int64_t H, int64_t K, int64_t V, int64_t NT,
                        int64_t slots, float scale) {
  using namespace bwd_split;
  namespace wmma = nvcuda::wmma;
  static_assert(BV == 16 || BV == 32 || BV == 64, "BV: 16, 32 or 64");
  static_assert(KP == 32 || KP == 64 || KP == 128, "KP: 32, 64 or 128");
  using FragAT = wmma::fragment<wmma::matrix_a, 16, 16, 16, E, wmma::col_major>;
  using FragB = wmma::fragment<wmma::matrix_b, 16, 16, 16, E, wmma::row_major>;
  using FragC = wmma::fragment<wmma::accumulator, 16, 16, 16, float>;
  constexpr int LQ = ld_half(KP), LB = ld_float(KP), LV = ld_half(BV), LS = ld_float(BV);
  constexpr DstatePlan plan(KP, BV);
  extern __shared__ __align__(128) unsigned char smem_raw[];
  E* qs = reinterpret_cast<E*>(smem_raw + plan.qs);
  float* bs = reinterpret_cast<float*>(smem_raw + plan.bs);
  E* ds = reinterpret_cast<E*>(smem_raw + plan.ds);
  float* G = reinterpret_cast<float*>(smem_raw + plan.G);
  float* se = reinterpret_cast<float*>(smem_raw + plan.se);
  float* el = reinterpret_cast<float*>(smem_raw + plan.el);

  const int tid = threadIdx.x, warp = tid / 32;
  const int64_t vt = blockIdx.x, v0 = vt * BV, h = blockIdx.y, n = blockIdx.z;
  const int vw = int(V - v0 < BV ? V - v0 : BV);
  int64_t bos, eos;
  const int64_t slot0 = first_slot(cu, n, T, NT, &bos, &eos);
  const int64_t nch = cdiv(eos - bos, C);
  const bool vec_q = K == KP && (K * H) % 8 == 0 && reinterpret_cast<uintptr_t>(q) % 16 == 0;
  const bool vec_v = vw == BV && V % 8 == 0 && (V * H) % 8 == 0 && reinterpret_cast<uintptr_t>(dO) % 16 == 0;
  const int64_t state0 = (n * H + h) * K * V + v0;  // [N, H, K, V] offset of this tile

  for (int e = tid; e < KP * BV; e += kThreads) {  // G ← dhT (0 outside the live K x V)
    const int kk = e / BV, vv = e % BV;
    G[kk * LS + vv] = (dhT && kk < K && vv < vw) ? dhT[state0 + int64_t(kk) * V + vv] : 0.f;
  }
  __syncthreads();

  for (int64_t c = nch - 1; c >= 0; --c) {  // uniform per CTA: the barriers below are safe
    const int64_t c0 = bos + c * C, slot = slot0 + c;
    const int nc = int(eos - c0 < C ? eos - c0 : C);
    // S_end: the state entering chunk c + 1 (E, the forward pass's) or the final state (fp32).
    if (c + 1 < nch) {
      const E* Se = Sws + ((slot + 1) * H + h) * K * V + v0;
      for (int e = tid; e < KP * BV; e += kThreads) {
        const int kk = e / BV, vv = e % BV;
        se[kk * LS + vv] = (kk < K && vv < vw) ? to_f(Se[int64_t(kk) * V + vv]) : 0.f;
      }
    } else {
      for (int e = tid; e < KP * BV; e += kThreads) {
        const int kk = e / BV, vv = e % BV;
        se[kk * LS + vv] = (kk < K && vv < vw) ? hfin[state0 + int64_t(kk) * V + vv] : 0.f;
      }
    }
    fwd_tc::load_tile<KP>(qs, LQ, q + (c0 * H + h) * K, H * K, C, nc, int(K), vec_q);
    fwd_tc::load_tile<BV>(ds, LV, dO + (c0 * H + h) * V + v0, H * V, C, nc, vw, vec_v);
    load_b<KP, kScalarGate>(bs, LB, b, c0, nc, h, H, K);
    __syncthreads();

    for (int x = tid; x < K; x += kThreads) {  // the dg seed of this V tile, y in order
      float s = 0.f;
      for (int y = 0; y < vw; ++y) s += G[x * LS + y] * se[x * LS + y];
      seeds[((vt * slots + slot) * H + h) * K + x] = s;
    }
    E* dSo = dSws + (slot * H + h) * K * V + v0;
    for (int e = tid; e < KP * BV; e += kThreads) {  // G of this chunk, an MMA operand of kernels 5, 6
      const int kk = e / BV, vv = e % BV;
      if (kk < K && vv < vw) dSo[int64_t(kk) * V + vv] = from_f<E>(G[kk * LS + vv]);
    }
    for (int e = tid; e < C * KP; e += kThreads) {  // scale·q ⊙ 2^b in place; rows past the chunk 0
      const int i = e / KP, kk = e % KP;
      qs[i * LQ + kk] = i < nc ? from_f<E>(scale * (to_f(qs[i * LQ + kk]) * exp2f(bs[i * LB + kk]))) : from_f<E>(0.f);
    }
    for (int kk = tid; kk < KP; kk += kThreads) el[kk] = exp2f(bs[(C - 1) * LB + kk]);  // rows >= nc hold b_last
    __syncthreads();
    for (int e = tid; e < KP * BV; e += kThreads) {
      const int kk = e / BV, vv = e % BV;
      G[kk * LS + vv] *= el[kk];
    }
    __syncthreads();
    for (int t = warp; t < (KP / 16) * (BV / 16); t += kWarps) {  // G += (scale·q ⊙ 2^b)ᵀ do
      const int rt = t / (BV / 16), ct = t % (BV / 16);
      FragC acc;
      wmma::load_matrix_sync(acc, G + (16 * rt) * LS + 16 * ct, LS, wmma::mem_row_major);
#pragma unroll
      for (int jb = 0; jb < C / 16; ++jb) {
        FragAT fa;
        FragB fb;
        wmma::load_matrix_sync(fa, qs + (16 * jb) * LQ + 16 * rt, LQ);
        wmma::load_matrix_sync(fb, ds + (16 * jb) * LV + 16 * ct, LV);
        wmma::mma_sync(acc, fa, fb, acc);
      }
      wmma::store_matrix_sync(G + (16 * rt) * LS + 16 * ct, acc, LS, wmma::mem_row_major);
    }
    __syncthreads();
  }
  if (dh0) {
    for (int e = tid; e < KP * BV; e += kThreads) {
      const int kk = e / BV, vv = e % BV;
      if (kk < K && vv < vw) dh0[state0 + int64_t(kk) * V + vv] = G[kk * LS + vv];
    }
  }
}

/// 5. dq, dk and dg of one chunk. Grid (NT, H, N). The V loop accumulates DV (lower blocks),
/// do·S_cᵀ and v·G_cᵀ in fragments that each warp keeps across the V tiles.
template <class E, bool kScalarGate, int KP>
__global__ void __launch_bounds__(bwd_split::kThreads)
    sm90_glr_bwd_dqk(const E* __restrict__ q, const E* __restrict__ k, const E* __restrict__ v,
                     const E* __restrict__ dO, const float* __restrict__ b, const E* __restrict__ Sws,
                     const E* __restrict__ dSws, const float* __restrict__ seeds, E* __restrict__ dq,
                     E* __restrict__ dk, float* __restrict__ dg, const int64_t* __restrict__ cu, int64_t T,
                     int64_t H, int64_t K, int64_t V, int64_t NT, int64_t slots, int64_t nvt_seed, float scale) {
  using namespace bwd_split;
  namespace wmma = nvcuda::wmma;
  static_assert(KP == 32 || KP == 64 || KP == 128, "KP: 32, 64 or 128");
  using FragA = wmma::fragment<wmma::matrix_a, 16, 16, 16, E, wmma::row_major>;
  using FragAT = wmma::fragment<wmma::matrix_a, 16, 16, 16, E, wmma::col_major>;
  using FragB = wmma::fragment<wmma::matrix_b, 16, 16, 16, E, wmma::row_major>;
  using FragBT = wmma::fragment<wmma::matrix_b, 16, 16, 16, E, wmma::col_major>;
  using FragC = wmma::fragment<wmma::accumulator, 16, 16, 16, float>;
  constexpr int BV = kBV, LQ = ld_half(KP), LB = ld_float(KP), LV = ld_half(BV), LAF = ld_float(C),
                LAB = ld_half(C);
  constexpr int kKT = KP / 16;         // column tiles of a [C, KP] matrix
  constexpr int kPer = 4 * kKT / kWarps;  // [C, KP] tiles per warp (1, 2 or 4)
  constexpr DqkPlan plan(KP);
  extern __shared__ __align__(128) unsigned char smem_raw[];
  E* qs = reinterpret_cast<E*>(smem_raw + plan.qs);
  E* ks = reinterpret_cast<E*>(smem_raw + plan.ks);
  float* bs = reinterpret_cast<float*>(smem_raw + plan.bs);
  float* dvf = reinterpret_cast<float*>(smem_raw + plan.dvf);
  E* dvb = reinterpret_cast<E*>(smem_raw + plan.dvb);
  E* dos = reinterpret_cast<E*>(smem_raw + plan.dos);
  E* vs = reinterpret_cast<E*>(smem_raw + plan.vs);
  E* hs = reinterpret_cast<E*>(smem_raw + plan.hs);
  E* gs = reinterpret_cast<E*>(smem_raw + plan.gs);
  E* kr = reinterpret_cast<E*>(smem_raw + plan.kr);
  E* qr = reinterpret_cast<E*>(smem_raw + plan.qr);
  float* stk = reinterpret_cast<float*>(smem_raw + plan.kr);  // [48, LB]: dk's off-diagonal product
  float* dqs = reinterpret_cast<float*>(smem_raw + plan.dqs);
  float* dks = reinterpret_cast<float*>(smem_raw + plan.dks);
  float* stq = dks;                                             // [48, LB]: dq's off-diagonal product
  float* red = reinterpret_cast<float*>(smem_raw + plan.red);

  int64_t bos, eos;
  const int64_t slot = first_slot(cu, blockIdx.z, T, NT, &bos, &eos) + blockIdx.x;
  const int64_t c0 = bos + int64_t(blockIdx.x) * C, h = blockIdx.y;
  if (c0 >= eos) return;  // uniform per CTA
  const int nc = int(eos - c0 < C ? eos - c0 : C);
  const int tid = threadIdx.x, warp = tid / 32;
  const bool vec_qk = K == KP && (K * H) % 8 == 0 && reinterpret_cast<uintptr_t>(q) % 16 == 0 &&
                      reinterpret_cast<uintptr_t>(k) % 16 == 0;
  const E* Sc = Sws + (slot * H + h) * K * V;   // [K, V]
  const E* Gc = dSws + (slot * H + h) * K * V;  // [K, V]

  fwd_tc::load_tile<KP>(qs, LQ, q + (c0 * H + h) * K, H * K, C, nc, int(K), vec_qk);
  fwd_tc::load_tile<KP>(ks, LQ, k + (c0 * H + h) * K, H * K, C, nc, int(K), vec_qk);
  load_b<KP, kScalarGate>(bs, LB, b, c0, nc, h, H, K);

  // ---- V loop: DV += do·vᵀ (lower blocks), Xq += do·S_cᵀ, Xk += v·G_cᵀ ----
  FragC accD[2], accQ[kPer], accK[kPer];
#pragma unroll
  for (int u = 0; u < 2; ++u) wmma::fill_fragment(accD[u], 0.f);
#pragma unroll
  for (int u = 0; u < kPer; ++u) {
    wmma::fill_fragment(accQ[u], 0.f);
    wmma::fill_fragment(accK[u], 0.f);
  }
  for (int64_t v0 = 0; v0 < V; v0 += BV) {
    const int vw = int(V - v0 < BV ? V - v0 : BV);
    const bool vec_v = vw == BV && V % 8 == 0 && (V * H) % 8 == 0 && reinterpret_cast<uintptr_t>(v) % 16 == 0 &&
                       reinterpret_cast<uintptr_t>(dO) % 16 == 0;
    const bool vec_s = vw == BV && V % 8 == 0 && reinterpret_cast<uintptr_t>(Sws) % 16 == 0 &&
                       reinterpret_cast<uintptr_t>(dSws) % 16 == 0;
    fwd_tc::load_tile<BV>(dos, LV, dO + (c0 * H + h) * V + v0, H * V, C, nc, vw, vec_v);
    fwd_tc::load_tile<BV>(vs, LV, v + (c0 * H + h) * V + v0, H * V, C, nc, vw, vec_v);
    fwd_tc::load_tile<BV>(hs, LV, Sc + v0, V, KP, int(K), vw, vec_s);
    fwd_tc::load_tile<BV>(gs, LV, Gc + v0, V, KP, int(K), vw, vec_s);
    __syncthreads();
#pragma unroll
    for (int u = 0; u < 2; ++u) {
      const int p = warp + kWarps * u;
      if (p < 10) {
        int ib, jb;
        lower_block(p, &ib, &jb);
#pragma unroll
        for (int k0 = 0; k0 < BV; k0 += 16) {
          FragA fa;
          FragBT fb;
          wmma::load_matrix_sync(fa, dos + (16 * ib) * LV + k0, LV);
          wmma::load_matrix_sync(fb, vs + (16 * jb) * LV + k0, LV);
          wmma::mma_sync(accD[u], fa, fb, accD[u]);
        }
      }
    }
#pragma unroll
    for (int u = 0; u < kPer; ++u) {
      const int t = warp + kWarps * u, rt = t / kKT, ct = t % kKT;
#pragma unroll
      for (int k0 = 0; k0 < BV; k0 += 16) {
        FragA fa;
        FragBT fb;
        wmma::load_matrix_sync(fa, dos + (16 * rt) * LV + k0, LV);
        wmma::load_matrix_sync(fb, hs + (16 * ct) * LV + k0, LV);
        wmma::mma_sync(accQ[u], fa, fb, accQ[u]);
        wmma::load_matrix_sync(fa, vs + (16 * rt) * LV + k0, LV);
        wmma::load_matrix_sync(fb, gs + (16 * ct) * LV + k0, LV);
        wmma::mma_sync(accK[u], fa, fb, accK[u]);
      }
    }
    __syncthreads();
  }

  // ---- DV and Xq to shared memory; Kr, Qr into R1 (the V tiles are dead: the loop ended on a barrier) ----
#pragma unroll
  for (int u = 0; u < 2; ++u) {
    const int p = warp + kWarps * u;
    if (p < 10) {
      int ib, jb;
      lower_block(p, &ib, &jb);
      wmma::store_matrix_sync(dvf + (16 * ib) * LAF + 16 * jb, accD[u], LAF, wmma::mem_row_major);
    }
  }
#pragma unroll
  for (int u = 0; u < kPer; ++u) {
    const int t = warp + kWarps * u, rt = t / kKT, ct = t % kKT;
    wmma::store_matrix_sync(dqs + (16 * rt) * LB + 16 * ct, accQ[u], LB, wmma::mem_row_major);
  }
  for (int e = tid; e < 96 * KP; e += kThreads) {
    const int row = e / KP, kk = e % KP;
    {  // Kr_m[j] = k_j 2^(b_r − b_j), j <= r = 16m − 1
      const int m = row < 16 ? 1 : row < 48 ? 2 : 3, j = row - kr_row(m), r = 16 * m - 1;
      kr[row * LQ + kk] = j < nc ? from_f<E>(to_f(ks[j * LQ + kk]) * exp2f(bs[r * LB + kk] - bs[j * LB + kk]))
                                 : from_f<E>(0.f);
    }
    {  // Qr_m[i] = q_i 2^(b_i − b_r), i > r = 16m − 1
      const int m = row < 48 ? 1 : row < 80 ? 2 : 3, i = row - qr_row(m) + 16 * m, r = 16 * m - 1;
      qr[row * LQ + kk] =
          i < nc ? from_f<E>(to_f(qs[i * LQ + kk]) * fwd_split::decay_past_ref(bs[i * LB + kk], bs[r * LB + kk]))
                 : from_f<E>(0.f);
    }
  }
  __syncthreads();

  // ---- DV selected and rounded (off-diagonal blocks, live rows); dq's inter term and diagonal blocks ----
  for (int e = tid; e < C * C; e += kThreads) {
    const int i = e / C, j = e % C;
    dvb[i * LAB + j] = (i < nc && (i >> 4) > (j >> 4)) ? from_f<E>(dvf[i * LAF + j]) : from_f<E>(0.f);
  }
  for (int e = tid; e < C * KP; e += kThreads) {
    const int i = e / KP, x = e % KP;
    if (i >= nc) continue;  // never stored, never read by dg
    const float bi = bs[i * LB + x];
    float a = exp2f(bi) * dqs[i * LB + x];             // 2^(b_i) ⊙ (do_i · S_cᵀ)
    for (int j = i & ~15; j <= i; ++j)                 // the diagonal block, j <= i only
      a += dvf[i * LAF + j] * (to_f(ks[j * LQ + x]) * exp2f(bi - bs[j * LB + x]));
    dqs[i * LB + x] = a;
  }
  __syncthreads();

  // ---- dq's off-diagonal blocks: rows of block m, Σ_{j < 16m} DV_ij Kr_m[j] -> stq ----
  for (int t = warp; t < 3 * kKT; t += kWarps) {
    const int m = 1 + t / kKT, ct = t % kKT;
    FragC acc;
    wmma::fill_fragment(acc, 0.f);
    for (int jb = 0; jb < m; ++jb) {
      FragA fa;
      FragB fb;
      wmma::load_matrix_sync(fa, dvb + (16 * m) * LAB + 16 * jb, LAB);
      wmma::load_matrix_sync(fb, kr + (kr_row(m) + 16 * jb) * LQ + 16 * ct, LQ);
      wmma::mma_sync(acc, fa, fb, acc);
    }
    wmma::store_matrix_sync(stq + (16 * (m - 1)) * LB + 16 * ct, acc, LB, wmma::mem_row_major);
  }
  __syncthreads();

  // ---- dq += 2^(b_i − b_r) ⊙ stq; dk's off-diagonal blocks: rows of block m − 1, Σ_{i >= 16m} DV_ijᵀ Qr_m[i] -> stk ----
  for (int e = tid; e < 48 * KP; e += kThreads) {
    const int i = 16 + e / KP, x = e % KP;
    if (i >= nc) continue;
    const int r = (i & ~15) - 1;
    dqs[i * LB + x] += exp2f(bs[i * LB + x] - bs[r * LB + x]) * stq[(i - 16) * LB + x];
  }
  for (int t = warp; t < 3 * kKT; t += kWarps) {  // stk overwrites Kr: its last reads were before the barrier
    const int m = 1 + t / kKT, ct = t % kKT;
    FragC acc;
    wmma::fill_fragment(acc, 0.f);
    for (int ib = m; ib < 4; ++ib) {
      FragAT fa;
      FragB fb;
      wmma::load_matrix_sync(fa, dvb + (16 * ib) * LAB + 16 * (m - 1), LAB);
      wmma::load_matrix_sync(fb, qr + (qr_row(m) + 16 * (ib - m)) * LQ + 16 * ct, LQ);
      wmma::mma_sync(acc, fa, fb, acc);
    }
    wmma::store_matrix_sync(stk + (16 * (m - 1)) * LB + 16 * ct, acc, LB, wmma::mem_row_major);
  }
  __syncthreads();

  // ---- Xk = v·G_cᵀ into dks (stq is consumed) ----
#pragma unroll
  for (int u = 0; u < kPer; ++u) {
    const int t = warp + kWarps * u, rt = t / kKT, ct = t % kKT;
    wmma::store_matrix_sync(dks + (16 * rt) * LB + 16 * ct, accK[u], LB, wmma::mem_row_major);
  }
  __syncthreads();

  // ---- dk = 2^(b_last − b_j) ⊙ Xk + scale·(off-diagonal + diagonal block); dq ← scale·dq ----
  for (int e = tid; e < C * KP; e += kThreads) {
    const int j = e / KP, x = e % KP;
    if (j >= nc) continue;
    const float bj = bs[j * LB + x];
    const int last = (j | 15) < nc - 1 ? (j | 15) : nc - 1;
    float a = j < 48 ? exp2f(bs[(j | 15) * LB + x] - bj) * stk[j * LB + x] : 0.f;
    for (int i = j; i <= last; ++i)  // the diagonal block, i >= j only
      a += dvf[i * LAF + j] * (to_f(qs[i * LQ + x]) * exp2f(bs[i * LB + x] - bj));
    dks[j * LB + x] = scale * a + exp2f(bs[(C - 1) * LB + x] - bj) * dks[j * LB + x];
    dqs[j * LB + x] *= scale;
  }
  __syncthreads();

  // ---- stores: dq, dk (rounded once), dg ----
  for (int e = tid; e < C * KP; e += kThreads) {
    const int i = e / KP, x = e % KP;
    if (i < nc && x < K) {
      const int64_t at = ((c0 + i) * H + h) * K + x;
      dq[at] = from_f<E>(dqs[i * LB + x]);
      dk[at] = from_f<E>(dks[i * LB + x]);
    }
  }
  if constexpr (!kScalarGate) {
    for (int x = tid; x < K; x += kThreads) {  // dg_i = seed + Σ_{i' >= i} (q ⊙ dq − k ⊙ dk)_{i'}, i' descending
      float acc = 0.f;
      for (int64_t vt = 0; vt < nvt_seed; ++vt) acc += seeds[((vt * slots + slot) * H + h) * K + x];
      for (int i = nc - 1; i >= 0; --i) {
        acc += to_f(qs[i * LQ + x]) * dqs[i * LB + x] - to_f(ks[i * LQ + x]) * dks[i * LB + x];
        dg[((c0 + i) * H + h) * K + x] = acc;
      }
    }
  } else {
    for (int x = tid; x < K; x += kThreads) {  // the seed's column sums over the V tiles, in order
      float s = 0.f;
      for (int64_t vt = 0; vt < nvt_seed; ++vt) s += seeds[((vt * slots + slot) * H + h) * K + x];
      red[x] = s;
    }
    for (int i = tid; i < nc; i += kThreads) {  // row sums over K, x in order
      float s = 0.f;
      for (int x = 0; x < K; ++x) s += to_f(qs[i * LQ + x]) * dqs[i * LB + x] - to_f(ks[i * LQ + x]) * dks[i * LB + x];
      red[KP + i] = s;
    }
    __syncthreads();
    if (tid == 0) {
      float acc = 0.f;
      for (int x = 0; x < K; ++x) acc += red[x];
      for (int i = nc - 1; i >= 0; --i) {
        acc += red[KP + i];
        dg[(c0 + i) * H + h] = acc;
      }
    }
  }
}

/// 6. dv of one chunk and V tile. Grid (NT, H·ceil(V / kBV), N).
template <class E, bool kScalarGate, int KP>
__global__ void __launch_bounds__(bwd_split::kThreads)
    sm90_glr_bwd_dv(const E* __restrict__ k, const E* __restrict__ dO, const float* __restrict__ b,
                    const E* __restrict__ A, const E* __restrict__ dSws, E* __restrict__ dv,
                    const int64_t* __restrict__ cu, int64_t T, int64_t H, int64_t K, int64_t V, int64_t NT,
                    float scale) {
  using namespace bwd_split;
  namespace wmma = nvcuda::wmma;
  static_assert(KP == 32 || KP == 64 || KP == 128, "KP: 32, 64 or 128");
  using FragA = wmma::fragment<wmma::matrix_a, 16, 16, 16, E, wmma::row_major>;
  using FragAT = wmma::fragment<wmma::matrix_a, 16, 16, 16, E, wmma::col_major>;
  using FragB = wmma::fragment<wmma::matrix_b, 16, 16, 16, E, wmma::row_major>;
  using FragC = wmma::fragment<wmma::accumulator, 16, 16, 16, float>;
  constexpr int BV = kBV, LQ = ld_half(KP), LV = ld_half(BV), LA = ld_half(C), LO = ld_float(BV);
  constexpr DvPlan plan(KP);
  extern __shared__ __align__(128) unsigned char smem_raw[];
  E* as = reinterpret_cast<E*>(smem_raw + plan.as);
  E* dos = reinterpret_cast<E*>(smem_raw + plan.dos);
  E* kt = reinterpret_cast<E*>(smem_raw + plan.kt);
  E* gs = reinterpret_cast<E*>(smem_raw + plan.gs);
  float* stg = reinterpret_cast<float*>(smem_raw + plan.stg);
  float* bl = reinterpret_cast<float*>(smem_raw + plan.bl);

  const int64_t nvt = cdiv(V, BV);
  const int64_t h = blockIdx.y / nvt, v0 = (blockIdx.y % nvt) * BV;
  int64_t bos, eos;
  const int64_t slot = first_slot(cu, blockIdx.z, T, NT, &bos, &eos) + blockIdx.x;
  const int64_t c0 = bos + int64_t(blockIdx.x) * C;
  if (c0 >= eos) return;  // uniform per CTA
  const int nc = int(eos - c0 < C ? eos - c0 : C), vw = int(V - v0 < BV ? V - v0 : BV);
  const int tid = threadIdx.x, warp = tid / 32;
  const int64_t GW = kScalarGate ? 1 : K;
  const bool vec_k = K == KP && (K * H) % 8 == 0 && reinterpret_cast<uintptr_t>(k) % 16 == 0;
  const bool vec_v = vw == BV && V % 8 == 0 && (V * H) % 8 == 0 && reinterpret_cast<uintptr_t>(dO) % 16 == 0;

  // A's rows past the chunk are selected to 0 (there q = 0 may have met an infinite k: 0·Inf).
  fwd_tc::load_tile<C>(as, LA, A + (slot * H + h) * C * C, C, C, nc, C, reinterpret_cast<uintptr_t>(A) % 16 == 0);
  fwd_tc::load_tile<BV>(dos, LV, dO + (c0 * H + h) * V + v0, H * V, C, nc, vw, vec_v);
  fwd_tc::load_tile<BV>(gs, LV, dSws + (slot * H + h) * K * V + v0, V, KP, int(K), vw,
                        vw == BV && V % 8 == 0 && reinterpret_cast<uintptr_t>(dSws) % 16 == 0);
  fwd_tc::load_tile<KP>(kt, LQ, k + (c0 * H + h) * K, H * K, C, nc, int(K), vec_k);
  for (int x = tid; x < KP; x += kThreads)
    bl[x] = x < K ? b[((c0 + nc - 1) * H + h) * GW + (kScalarGate ? 0 : x)] : 0.f;
  __syncthreads();
  for (int e = tid; e < C * KP; e += kThreads) {  // k ⊙ 2^(b_last − b) in place, 0 outside the live rows and columns
    const int i = e / KP, x = e % KP;
    kt[i * LQ + x] = (i < nc && x < K)
                         ? from_f<E>(to_f(kt[i * LQ + x]) *
                                     exp2f(bl[x] - b[((c0 + i) * H + h) * GW + (kScalarGate ? 0 : x)]))
                         : from_f<E>(0.f);
  }
  // Aᵀ·do over the off-diagonal blocks (ib > jb): rows of block jb.
  constexpr int kVT = BV / 16;
  for (int t = warp; t < 4 * kVT; t += kWarps) {
    const int jb = t / kVT, ct = t % kVT;
    FragC acc;
    wmma::fill_fragment(acc, 0.f);
    for (int ib = jb + 1; ib < 4; ++ib) {
      FragAT fa;
      FragB fb;
      wmma::load_matrix_sync(fa, as + (16 * ib) * LA + 16 * jb, LA);
      wmma::load_matrix_sync(fb, dos + (16 * ib) * LV + 16 * ct, LV);
      wmma::mma_sync(acc, fa, fb, acc);
    }
    wmma::store_matrix_sync(stg + (16 * jb) * LO + 16 * ct, acc, LO, wmma::mem_row_major);
  }
  __syncthreads();
  for (int e = tid; e < C * BV; e += kThreads) {  // + the diagonal block over i >= j, then scale
    const int j = e / BV, y = e % BV;
    if (j >= nc) continue;
    const int last = (j | 15) < nc - 1 ? (j | 15) : nc - 1;
    float a = stg[j * LO + y];
    for (int i = j; i <= last; ++i) a += to_f(as[i * LA + j]) * to_f(dos[i * LV + y]);
    stg[j * LO + y] = scale * a;
  }
  __syncthreads();
  for (int t = warp; t < 4 * kVT; t += kWarps) {  // += (k ⊙ 2^(b_last − b))·G_c
    const int jb = t / kVT, ct = t % kVT;
    FragC acc;
    wmma::load_matrix_sync(acc, stg + (16 * jb) * LO + 16 * ct, LO, wmma::mem_row_major);
#pragma unroll
    for (int k0 = 0; k0 < KP; k0 += 16) {
      FragA fa;
      FragB fb;
      wmma::load_matrix_sync(fa, kt + (16 * jb) * LQ + k0, LQ);
      wmma::load_matrix_sync(fb, gs + k0 * LV + 16 * ct, LV);
      wmma::mma_sync(acc, fa, fb, acc);
    }
    wmma::store_matrix_sync(stg + (16 * jb) * LO + 16 * ct, acc, LO, wmma::mem_row_major);
  }
  __syncthreads();
  for (int e = tid; e < C * BV; e += kThreads) {
    const int j = e / BV, y = e % BV;
    if (j < nc && y < vw) dv[((c0 + j) * H + h) * V + v0 + y] = from_f<E>(stg[j * LO + y]);
  }
}

namespace bwd_split {

inline Status status(const char* what, cudaError_t e) {
  return {std::string("glr::cuda::backward (split): ") + what + ": " + cudaGetErrorName(e) + " (" +
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

/// The V tile of the two walks (the only kernels whose grid the sequences and heads limit): the
/// widest whose grid fills the device, as the forward split chooses it.
inline int walk_bv(const Shape& s) {
  const int64_t heads = s.H * s.sequences(), sms = fwd_tc::sm_count();
  if (s.V > 32 && cdiv(s.V, 64) * heads >= sms) return 64;
  if (s.V > 16 && cdiv(s.V, 32) * heads >= sms) return 32;
  return 16;
}

/// Kernel 4; returns the number of V tiles of its seeds in *nvt.
template <class E, bool kScalarGate, int BV, int KP>
Status launch_dstate(const BwdParams& p, const Layout& l, cudaStream_t stream, int64_t* nvt) {
  const Shape& s = p.shape;
  auto* ws = static_cast<unsigned char*>(p.workspace);
  constexpr size_t bytes = DstatePlan(KP, BV).total;
  auto* kernel = &sm90_glr_bwd_dstate<E, kScalarGate, BV, KP>;
  if (Status st = allow_smem(kernel, bytes); !st.ok()) return st;
  *nvt = cdiv(s.V, BV);
  kernel<<<dim3(unsigned(*nvt), unsigned(s.H), unsigned(s.sequences())), kThreads, bytes, stream>>>(
      static_cast<const E*>(p.q), static_cast<const E*>(p.dO), reinterpret_cast<const float*>(ws + l.b),
      static_cast<const float*>(p.dhT), reinterpret_cast<const E*>(ws + l.S),
      reinterpret_cast<const float*>(ws + l.hfin), reinterpret_cast<E*>(ws + l.dS),
      reinterpret_cast<float*>(ws + l.seeds), static_cast<float*>(p.dh0), s.cu_seqlens, s.T, s.H, s.K, s.V, l.NT,
      l.slots, float(p.scale));
  return {};
}

template <class E, bool kScalarGate, int KP>
Status launch_dstates(const BwdParams& p, const Layout& l, cudaStream_t stream, int64_t* nvt) {
  switch (walk_bv(p.shape)) {
    case 64: return launch_dstate<E, kScalarGate, 64, KP>(p, l, stream, nvt);
    case 32: return launch_dstate<E, kScalarGate, 32, KP>(p, l, stream, nvt);
    default: return launch_dstate<E, kScalarGate, 16, KP>(p, l, stream, nvt);
  }
}

template <class E, bool kScalarGate, int KP>
Status launch_kp(const BwdParams& p, cudaStream_t stream) {
  const Shape& s = p.shape;
  const Layout l = layout(s);
  const int64_t N = s.sequences(), GW = kScalarGate ? 1 : s.K;
  auto* ws = static_cast<unsigned char*>(p.workspace);
  float* b = reinterpret_cast<float*>(ws + l.b);
  E* A = reinterpret_cast<E*>(ws + l.A);
  const auto* q = static_cast<const E*>(p.q);
  const auto* k = static_cast<const E*>(p.k);
  const dim3 chunks(unsigned(l.NT), unsigned(s.H), unsigned(N));

  if (l.NT > 0)
    sm90_glr_bwd_cumsum<<<chunks, kThreads, 0, stream>>>(static_cast<const float*>(p.g), b, s.cu_seqlens, s.T, s.H,
                                                         GW, l.NT);
  // Kernels 2 and 3: the forward split's prep and walk on its part of the workspace (A, every
  // chunk's incoming S), the final state in fp32 to ws.hfin.
  FwdParams f;
  f.shape = s;
  f.q = p.q;
  f.k = p.k;
  f.v = p.v;
  f.g = p.g;
  f.h0 = p.h0;
  f.hT = ws + l.hfin;
  f.scale = p.scale;
  f.workspace = ws + l.fwd;
  f.workspace_bytes = fwd_split::layout(s).bytes;
  if (Status st = fwd_split::launch_states<E, kScalarGate>(f, stream); !st.ok()) return st;
  int64_t nvt_seed = 0;
  if (Status st = launch_dstates<E, kScalarGate, KP>(p, l, stream, &nvt_seed); !st.ok()) return st;
  if (l.NT > 0) {
    constexpr size_t dqk_bytes = DqkPlan(KP).total;
    static_assert(dqk_bytes <= 227 * 1024, "sm90_glr_bwd_dqk: shared memory above the sm_90 limit");
    auto* dqk = &sm90_glr_bwd_dqk<E, kScalarGate, KP>;
    if (Status st = allow_smem(dqk, dqk_bytes); !st.ok()) return st;
    dqk<<<chunks, kThreads, dqk_bytes, stream>>>(
        q, k, static_cast<const E*>(p.v), static_cast<const E*>(p.dO), b, reinterpret_cast<const E*>(ws + l.S),
        reinterpret_cast<const E*>(ws + l.dS), reinterpret_cast<const float*>(ws + l.seeds), static_cast<E*>(p.dq),
        static_cast<E*>(p.dk), static_cast<float*>(p.dg), s.cu_seqlens, s.T, s.H, s.K, s.V, l.NT, l.slots, nvt_seed,
        float(p.scale));
    constexpr size_t dv_bytes = DvPlan(KP).total;
    auto* dvk = &sm90_glr_bwd_dv<E, kScalarGate, KP>;
    if (Status st = allow_smem(dvk, dv_bytes); !st.ok()) return st;
    dvk<<<dim3(unsigned(l.NT), unsigned(s.H * cdiv(s.V, kBV)), unsigned(N)), kThreads, dv_bytes, stream>>>(
        k, static_cast<const E*>(p.dO), b, A, reinterpret_cast<const E*>(ws + l.dS), static_cast<E*>(p.dv),
        s.cu_seqlens, s.T, s.H, s.K, s.V, l.NT, float(p.scale));
  }
  if (const cudaError_t e = cudaGetLastError(); e != cudaSuccess) return status("launch", e);
  return {};
}

template <class E, bool kScalarGate>
Status launch_gate(const BwdParams& p, cudaStream_t stream) {
  if (p.shape.K <= 32) return launch_kp<E, kScalarGate, 32>(p, stream);
  if (p.shape.K <= 64) return launch_kp<E, kScalarGate, 64>(p, stream);
  return launch_kp<E, kScalarGate, 128>(p, stream);
}

/// Whether the split backward takes this shape: bf16 and f16 inputs, K <= 128, chunk 64 (V any,
/// in tiles), and grids inside the y/z limits.
inline bool takes(const Shape& s) {
  return (s.dtype == DType::bf16 || s.dtype == DType::f16) && s.K <= fwd_tc::kMaxK && s.chunk == C &&
         s.sequences() <= 65535 && s.H * cdiv(s.V, kBV) <= 65535 && cdiv(s.T, C) <= 0x7fffffff;
}

inline size_t workspace_bytes(const Shape& s) { return takes(s) ? layout(s).bytes : 0; }

template <class E>
Status launch(const BwdParams& p, cudaStream_t stream) {
  return p.shape.gate == Gate::scalar ? launch_gate<E, true>(p, stream) : launch_gate<E, false>(p, stream);
}

}  // namespace bwd_split

}  // namespace glr::cuda::sm90
