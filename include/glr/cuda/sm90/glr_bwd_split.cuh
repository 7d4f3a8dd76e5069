/// glr CUDA family, sm90 tensor-core backward split in five kernels (docs/glr.md, "The split
/// backward"): bwd_slice of glr/cpu_chunked.hpp for bf16/f16 inputs, K <= 256, chunk 64, its matrix
/// products on WMMA m16n16k16 (operands in the input dtype, fp32 accumulation), every state,
/// partial sum and reduction in fp32. Only the two state passes walk; the rest is per chunk.
/// K runs in tiles of KT = 64 columns (32 for K <= 32) in kernels 3 and 4: their columns are
/// independent but for the scalar gate's dg, which sums over K (kernel 5 adds the tiles' partials).
///   1. sm90_glr_fwd_prep    per (chunk, head):          A (j <= i, input dtype), q ⊙ 2^b, k ⊙ 2^(b_last−b)
///        (glr_fwd_split.cuh)                            (input dtype), 2^(b_last) (fp32)  -> ws.fwd
///   2. sm90_glr_fwd_walk    per (V x K tile, head, seq): S entering each chunk (E)  -> ws.fwd S,
///                                                       the final S (fp32)               -> ws.hfin
///   3. sm90_glr_bwd_dstate  per (V x K tile, head, seq): chunks in reverse, G (fp32) = the gradient
///        of the state leaving the chunk, from dhT: stores G (E) -> ws.dS, the V-tile partial dg
///        seeds Σ_v G ⊙ S_end -> ws.seeds, then G ← 2^(b_last) ⊙ G + scale·(q ⊙ 2^b)ᵀ do; dh0 = G.
///        The operands of the next chunks load (cp.async ring) while one is computed.
///   4. sm90_glr_bwd_dqk     per (chunk, head, K tile):  b = chunk-local Σ g·log2e of the tile's
///        columns (shared memory only); over V tiles DV = do·vᵀ (every K tile recomputes it),
///        do·S_cᵀ, v·G_cᵀ; then dq, dk (intra through DV with factored decays) and
///        dg (vector gate; scalar gate: the tile's partial row sums and seed sum -> ws.dgp)
///   5. sm90_glr_bwd_dv      per (chunk, head, V tile):  dv = scale·Aᵀ·do + (k ⊙ 2^(b_last−b))·G_c;
///        scalar gate: the V tile 0 CTA adds the K tiles' partials in order and writes dg.
/// Kernels 1-2 are the forward split's own (fwd_split::launch_states), so S_c, A, q ⊙ 2^b,
/// k ⊙ 2^(b_last−b) and 2^(b_last) are the forward's bits (kernels 3 and 5 read the last three).
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
/// input dtype, once each: DV, Kr, Qr, A (and its factored operands, kernel 1), S_c, G_c,
/// q ⊙ 2^b (kernel 3: scale multiplies the fp32 product), k ⊙ 2^(b_last − b) — the roundings the
/// bf16/f16 contracts admit (docs/glr.md, ρ of dq, dk 2, dv 3, dh0 1, dg 3 and 3 on its seed,
/// whose S_end is rounded and G fp32).
/// Masking is by select: the diagonal blocks' products run on FFMA over the live triangle only, DV
/// and A are selected to 0 outside j <= i < nc before they enter an MMA, and every operand row past
/// the chunk's end (or column past K, V) is selected to 0 (a padded row never makes 0·Inf).
/// Deterministic: fixed tiling, fixed loop orders, the V-tile seeds and the scalar gate's K-tile
/// partials summed in order, no atomics.
/// NOTES: status — the six-kernel split (a cumsum kernel first) ran on the H200 (session 15:
/// glr_cuda_tests, the 12 gates); the K tiles of kernels 3 and 4, the cp.async loads, kernel 4's own
/// b (the cumsum kernel folded in) and kernel 5's reading of prep's k ⊙ 2^(b_last−b) were written
/// without a GPU (branch wip-bwd2) and checked on the CPU by bench/glr/split_sim
/// (these kernels, CUDA mocked, against the fp64 reference). On the H200 (session 15, call C):
/// glr_cuda_tests 33/33 with the factored prep beside it; the 12 gates on this build are owed.
#pragma once

#include <mma.h>

#include <cstdint>
#include <string>

#include "glr/cuda.hpp"
#include "glr/cuda/sm90/common.cuh"
#include "glr/cuda/sm90/wmma_smem.cuh"
#include "glr/cuda/sm90/glr_fwd_split.cuh"
#include "glr/cuda/sm90/glr_fwd_tc.cuh"

namespace glr::cuda::sm90 {

namespace bwd_split {

using fwd_split::align256;
using fwd_split::async_tile;

using fwd_split::cdiv;
using fwd_split::cp_async_commit;
using fwd_split::cp_async_wait;
using fwd_split::chunk_cta;
using fwd_split::first_slot;
using fwd_split::ldsm_x2_trans;
using fwd_split::ldsm_x4_trans;
using fwd_split::mma16816;
using fwd_split::store4;
using fwd_tc::align128;
using fwd_tc::C;
using fwd_tc::from_f;
using fwd_tc::ld_float;
using fwd_tc::ld_half;
using fwd_tc::to_f;
using fwd_tc::kLog2e;
inline constexpr int kThreads = 256;
inline constexpr int kWarps = kThreads / 32;
static_assert(kThreads == fwd_split::kThreads, "async_tile strides by the forward split's block size");
inline constexpr int kBV = 64;       // V tile of kernel 5
inline constexpr int kDqkBV = 32;    // V tile of kernel 4's V loop (32 keeps its shared memory at 110.25 KB)
/// Kernel 3's CTAs resident per SM (its __launch_bounds__) and chunks in flight. By default two CTAs,
/// three chunks (three keep two CTAs per SM at BV 64). Under GLR_DSTATE_3CTAS three CTAs, their
/// registers capped at 80 (G in mma.sync accumulator registers across the chunks, as the forward's
/// walk keeps S) and two chunks in flight: 73 KB a CTA at KT = BV = 64.
#ifdef GLR_DSTATE_3CTAS
inline constexpr int kDstateCtas = 3;
inline constexpr int kStateStages = 2;
#else
inline constexpr int kDstateCtas = 2;
inline constexpr int kStateStages = 3;
#endif
/// Whether kernel 3's chunk loop prefetches with async_tile<cols, kNoHoist = true>: always at three CTAs
/// (80 registers), at two under GLR_NOHOIST (A/B `nohoist`; the forward's walk always does).
#ifdef GLR_NOHOIST
inline constexpr bool kDstateNoHoist = true;
#else
inline constexpr bool kDstateNoHoist = kDstateCtas > 2;
#endif

/// Columns of K per CTA of kernels 3 and 4 (K padded to KP): 64, or KP below that.
__host__ __device__ constexpr int k_tile(int KP) { return KP < 64 ? KP : 64; }
/// K tiles of kernels 3 and 4 for K (KP = 32, 64, 128 or 256 as launch_gate picks it).
__host__ __device__ constexpr int64_t k_tiles(int64_t K) { return K <= 32 ? 1 : cdiv(K, 64); }
/// Kernel 4's form, bits (0 is the kernel of sessions 15-18; session 19 measured each on the H200,
/// bench/results/glr-bwd-split.md):
///   kDqkPipe   V tile t + 1 loads while tile t is computed (the odd tiles in P and Q, free until
///              the V loop ends), the dg seeds are read first;
///   kDqkRemap  grid (NT·K tiles, H, N): a chunk's K tiles are adjacent CTAs (they read the same
///              do and v), else (NT, H·K tiles, N) (varlen: slots for NT, 1 for N: chunk_grid);
///   kDqkVec    the element-wise passes (Kr and Qr, DV's selection, dq's inter term and its
///              off-diagonal scaling) on 8 or 4 adjacent columns per thread with 16-byte shared loads
///              and stores: the same operations per element, the same bits, fewer instructions.
/// Every form gives the same outputs, bit for bit (bench/glr/split_sim). dqk_form(K) is the default.
inline constexpr int kDqkPipe = 2, kDqkRemap = 4, kDqkVec = 8;
__host__ __device__ constexpr int dqk_form(int64_t K) { return k_tiles(K) > 1 ? kDqkPipe | kDqkRemap | kDqkVec : kDqkVec; }

/// Workspace layout (byte offsets): the forward split's own workspace (A, S, q⊙2^b, k⊙2^(b_last−b),
/// 2^(b_last): fwd_split::layout, at `fwd`), then dS, the final states, the dg seeds (sized for the
/// narrowest V tile of kernel 3, 16) and the scalar gate's K-tile partials.
struct Layout {
  int64_t NT = 0, slots = 0, BT = 0, nvt_max = 0, nkt = 0;
  size_t fwd = 0, A = 0, S = 0, Qg = 0, Kd = 0, El = 0, dS = 0, hfin = 0, seeds = 0, dgp = 0, bytes = 0;
};

/// The workspace's layout. Offsets A … El and hfin are from the states' base (states_base), the
/// rest from p.workspace; the two are one buffer unless the states come from a forward's kept ones
/// (`from_saved`: fwd_split::saved_bytes' layout, the final state after them; the workspace holds
/// dS, the seeds and the partials only).
inline Layout layout(const Shape& s, bool from_saved = false) {
  const fwd_split::Layout f = fwd_split::layout(s, fwd_split::Walk::plain);
  Layout l;
  const int64_t H = s.H < 1 ? 1 : s.H, K = s.K < 1 ? 1 : s.K, V = s.V < 1 ? 1 : s.V;
  const int64_t N = s.sequences() < 1 ? 1 : s.sequences();
  l.NT = f.NT;
  l.slots = f.slots;
  l.BT = f.BT;
  l.nvt_max = cdiv(V, 16);
  l.nkt = k_tiles(K);
  l.fwd = 0;
  l.A = l.fwd + f.A;
  l.S = l.fwd + f.S;
  l.Qg = l.fwd + f.Qg;
  l.Kd = l.fwd + f.Kd;
  l.El = l.fwd + f.El;
  // The final state follows the states where they were kept (fwd_split::saved_bytes), else dS.
  l.dS = from_saved ? 0 : l.fwd + f.bytes;                          // [slots, H, K, V] E
  const size_t after_dS = l.dS + align256(size_t(l.slots) * H * K * V * 2);
  const size_t fin = align256(size_t(N) * H * K * V * 4);           // [N, H, K, V] fp32
  l.hfin = from_saved ? f.bytes : after_dS;
  l.seeds = from_saved ? after_dS : l.hfin + fin;                   // [nvt, slots, H, K] fp32
  l.dgp = l.seeds + align256(size_t(l.nvt_max) * l.slots * H * K * 4);  // [nkt, slots, H, C + 1] fp32
  l.bytes = l.dgp + align256(size_t(l.nkt) * l.slots * H * (C + 1) * 4);
  return l;
}

/// The base of offsets A … El and hfin: the forward's kept states, or the workspace.
inline const unsigned char* states_base(const BwdParams& p) {
  return static_cast<const unsigned char*>(p.saved ? p.saved : p.workspace);
}

/// b = Σ_{i' <= i} g·log2e down the columns [k0, k0 + kw) of one chunk into bs [C][ld] (shared
/// memory; the forward's prep forms it the same way): rows >= nc add 0, so they hold b_last (a
/// padded row adds no decay); columns >= kw hold 0; the scalar gate's one column is broadcast over
/// the kw live columns. Called by every thread; waits for all of its cp.async groups; ends on a barrier.
/// (Forming b while the chunk's other tiles still land, `earlyb`, was within noise on an H100 in
/// session 47 and is gone.)
template <int KT, bool kScalarGate>
__device__ __forceinline__ void chunk_b(float* bs, int ld, const float* g, int64_t c0, int nc, int64_t h, int64_t H,
                                        int64_t K, int64_t k0, int kw) {
  if constexpr (!kScalarGate) {
    async_tile<KT>(bs, ld, g + (c0 * H + h) * K + k0, H * K, C, nc, kw);
    cp_async_commit();
  } else {
    for (int i = threadIdx.x; i < C; i += kThreads) bs[i * ld] = i < nc ? g[(c0 + i) * H + h] : 0.f;
  }
  cp_async_wait<0>();
  __syncthreads();
  for (int x = threadIdx.x; x < (kScalarGate ? 1 : KT); x += kThreads) {  // down each column, in order
    float a = 0.f;
#pragma unroll 8
    for (int i = 0; i < C; ++i) {
      a += bs[i * ld + x] * kLog2e;
      bs[i * ld + x] = a;
    }
  }
  __syncthreads();
  if constexpr (kScalarGate) {
    for (int e = threadIdx.x; e < C * KT; e += kThreads) {
      const int i = e / KT, kk = e % KT;
      if (kk) bs[i * ld + kk] = kk < kw ? bs[i * ld] : 0.f;
    }
    __syncthreads();
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

/// Shared-memory plan of kernel 3 (byte offsets): kStateStages buffers of one chunk's operands
/// (buffer s at s·stage + the offset), then the state gradient.
struct DstatePlan {
  size_t qg = 0, dos = 0, el = 0, se = 0, stage = 0, G = 0, total = 0;
  __host__ __device__ constexpr size_t take(size_t bytes) {
    const size_t here = total;
    total += align128(bytes);
    return here;
  }
  __host__ __device__ constexpr DstatePlan(int KT, int BV) {
    qg = take(size_t(C) * ld_half(KT) * 2);     // q ⊙ 2^b (prep's)          (E)    [C, KT]
    dos = take(size_t(C) * ld_half(BV) * 2);    // do tile                   (E)    [C, BV]
    el = take(size_t(KT) * 4);                  // 2^(b_last) (prep's)       (fp32) [KT]
    se = take(size_t(KT) * ld_half(BV) * 2);    // S leaving the chunk       (E)    [KT, BV]
    stage = total;
    total = stage * kStateStages;
    G = take(size_t(KT) * ld_float(BV) * 4);    // the state gradient        (fp32) [KT, BV]
  }
};

/// Shared-memory plan of kernel 4 (byte offsets). R1 holds the even V tiles during the V loop,
/// P and Q (adjacent) the odd ones (the loop loads tile t + 1 while it computes tile t); then R1
/// holds Kr and Qr, kr's space later dk's off-diagonal product stk (48 x KT fp32 fits in 96 x LQ E).
/// P stages DV (fp32 [C, C]) and then holds dq; Q holds do·S_cᵀ, then dq's off-diagonal product,
/// then v·G_cᵀ and dk.
struct DqkPlan {
  size_t qs = 0, ks = 0, bs = 0, dvd = 0, dvb = 0, r1 = 0, dos = 0, vs = 0, hs = 0, gs = 0, kr = 0, qr = 0, P = 0,
         Q = 0, red = 0, total = 0, vbuf = 0, vtiles = 0;
  __host__ __device__ constexpr size_t take(size_t bytes) {
    const size_t here = total;
    total += align128(bytes);
    return here;
  }
  __host__ __device__ constexpr DqkPlan(int KT) {
    qs = take(size_t(C) * ld_half(KT) * 2);    // q            (E)    [C, KT]
    ks = take(size_t(C) * ld_half(KT) * 2);    // k            (E)    [C, KT]
    bs = take(size_t(C) * ld_float(KT) * 4);   // g, then b    (fp32) [C, KT]
    dvd = take(size_t(C) * ld_float(16) * 4);  // DV's diagonal blocks (fp32) [C, 16]: row i, column j & 15
    dvb = take(size_t(C) * ld_half(C) * 2);    // DV selected to the off-diagonal blocks, rounded (E) [C, C]
    const size_t tile = align128(size_t(C) * ld_half(kDqkBV) * 2),
                 state = align128(size_t(KT) * ld_half(kDqkBV) * 2), ops = align128(size_t(96) * ld_half(KT) * 2);
    r1 = take(2 * tile + 2 * state > 2 * ops ? 2 * tile + 2 * state : 2 * ops);
    dos = r1;                                  // do tile      (E)    [C, kDqkBV]
    vs = r1 + tile;                            // v tile       (E)    [C, kDqkBV]
    hs = r1 + 2 * tile;                        // S_c tile     (E)    [KT, kDqkBV]
    gs = r1 + 2 * tile + state;                // G_c tile     (E)    [KT, kDqkBV]
    kr = r1;                                   // Kr_1..3      (E)    [96, KT]
    qr = r1 + ops;                             // Qr_1..3      (E)    [96, KT]
    P = take(size_t(C) * ld_float(C) * 4);     // DV (fp32) [C, C], then dq (fp32) [C, KT]
    Q = take(size_t(C) * ld_float(KT) * 4);    // do·S_cᵀ; dq's off-diagonal product; v·G_cᵀ, then dk (fp32) [C, KT]
    red = take(size_t(KT) * 4);                // scalar gate: the seed's column sums
    vbuf = P - r1;                             // the odd V tiles: at dos + vbuf (P), vs + vbuf, ...
    vtiles = 2 * tile + 2 * state;             // bytes of one V tile's four operands
  }
};

/// Shared-memory plan of kernel 5 (byte offsets).
struct DvPlan {
  size_t as = 0, dos = 0, kt = 0, gs = 0, stg = 0, red = 0, total = 0;
  __host__ __device__ constexpr size_t take(size_t bytes) {
    const size_t here = total;
    total += align128(bytes);
    return here;
  }
  __host__ __device__ constexpr DvPlan(int KP) {
    as = take(size_t(C) * ld_half(C) * 2);        // A, rows past the chunk 0   (E)    [C, C]
    dos = take(size_t(C) * ld_half(kBV) * 2);     // do tile                    (E)    [C, kBV]
    kt = take(size_t(C) * ld_half(KP) * 2);       // k ⊙ 2^(b_last − b) (prep's) (E)   [C, KP]
    gs = take(size_t(KP) * ld_half(kBV) * 2);     // G_c tile                   (E)    [KP, kBV]
    stg = take(size_t(C) * ld_float(kBV) * 4);    // dv accumulation            (fp32) [C, kBV]
    red = take(size_t(C + 1) * 4);                // scalar gate: dg's row sums and seed over the K tiles
  }
};

}  // namespace bwd_split

/// 3. The reverse state pass. Grid (ceil(V / BV)·ceil(K / KT), H, N): a CTA owns a KT x BV tile of
/// the state gradient (its rows are independent: row kk decays by its own 2^(b_last)). G starts as
/// dhT (or 0); for each chunk c, last first: the partial seeds Σ_{v in tile} G ⊙ S_end ->
/// seeds[vt], G (rounded) -> dS[slot c], then G ← 2^(b_last) ⊙ G + scale·(q ⊙ 2^b)ᵀ·do (q ⊙ 2^b
/// and 2^(b_last) are prep's; scale multiplies the fp32 product). Finally dh0 = G. The operands of
/// the next kStateStages − 1 chunks are in flight (cp.async ring) while chunk c is computed.
/// Under GLR_DSTATE_3CTAS G lives between chunks in the warps' mma.sync accumulator registers (the
/// forward walk's layout): each chunk stores it to shared memory for the element-wise pass (seeds,
/// dS), decays it in registers and adds the product there; the same operations, the same bits.
template <class E, int BV, int KT>
__global__ void __launch_bounds__(bwd_split::kThreads, bwd_split::kDstateCtas)
    sm90_glr_bwd_dstate(const E* __restrict__ Qg, const E* __restrict__ dO, const float* __restrict__ El,
                        const float* __restrict__ dhT, const E* __restrict__ Sws, const float* __restrict__ hfin,
                        E* __restrict__ dSws, float* __restrict__ seeds, float* __restrict__ dh0,
                        const int64_t* __restrict__ cu, int64_t T, int64_t H, int64_t K, int64_t V, int64_t NT,
                        int64_t slots, float scale) {
  using namespace bwd_split;
  namespace wmma = nvcuda::wmma;
  static_assert(BV == 16 || BV == 32 || BV == 64, "BV: 16, 32 or 64");
  static_assert(KT == 32 || KT == 64, "KT: 32 or 64");
  using FragAT = wmma::fragment<wmma::matrix_a, 16, 16, 16, E, wmma::col_major>;
  using FragB = wmma::fragment<wmma::matrix_b, 16, 16, 16, E, wmma::row_major>;
  using FragC = wmma::fragment<wmma::accumulator, 16, 16, 16, float>;
  constexpr int LQ = ld_half(KT), LV = ld_half(BV), LS = ld_float(BV), NS = kStateStages;
  constexpr int kParts = kThreads / KT, kPerPart = BV / kParts;  // the seeds: kParts threads per row
  static_assert(kParts * KT == kThreads && kPerPart * kParts == BV && (kParts == 4 || kParts == 8),
                "seed rows split over 4 or 8 lanes of one warp");
  constexpr DstatePlan plan(KT, BV);
  extern __shared__ __align__(128) unsigned char smem_raw[];
  float* G = reinterpret_cast<float*>(smem_raw + plan.G);
  auto qg_at = [&](int buf) { return reinterpret_cast<E*>(smem_raw + buf * plan.stage + plan.qg); };
  auto do_at = [&](int buf) { return reinterpret_cast<E*>(smem_raw + buf * plan.stage + plan.dos); };
  auto el_at = [&](int buf) { return reinterpret_cast<float*>(smem_raw + buf * plan.stage + plan.el); };
  auto se_at = [&](int buf) { return reinterpret_cast<E*>(smem_raw + buf * plan.stage + plan.se); };

  const int tid = threadIdx.x, warp = tid / 32;
  const int64_t nkt = cdiv(K, KT);
  const int64_t vt = blockIdx.x / nkt, v0 = vt * BV, k0 = int64_t(blockIdx.x % nkt) * KT, h = blockIdx.y,
                n = blockIdx.z;
  const int vw = int(V - v0 < BV ? V - v0 : BV), kw = int(K - k0 < KT ? K - k0 : KT);
  int64_t bos, eos;
  const int64_t slot0 = first_slot(cu, n, T, NT, &bos, &eos);
  const int64_t nch = cdiv(eos - bos, C);
  const int64_t state0 = ((n * H + h) * K + k0) * V + v0;  // [N, H, K, V] offset of this tile

  auto prefetch = [&](int64_t it, int buf) {  // step it handles chunk nch − 1 − it; a group is committed always
    if (it < nch) {
      const int64_t c = nch - 1 - it, c0 = bos + c * C;
      const int nc = int(eos - c0 < C ? eos - c0 : C);
      async_tile<KT, kDstateNoHoist>(qg_at(buf), LQ, Qg + (c0 * H + h) * K + k0, H * K, C, nc, kw);
      async_tile<BV, kDstateNoHoist>(do_at(buf), LV, dO + (c0 * H + h) * V + v0, H * V, C, nc, vw);
      async_tile<KT, kDstateNoHoist>(el_at(buf), KT, El + ((slot0 + c) * H + h) * K + k0, K, 1, 1, kw);
      if (c + 1 < nch)  // S entering chunk c + 1 (the last chunk's S_end is hfin, read directly)
        async_tile<BV, kDstateNoHoist>(se_at(buf), LV, Sws + (((slot0 + c + 1) * H + h) * K + k0) * V + v0, V, KT, kw, vw);
    }
    cp_async_commit();
  };

  // prod = (q ⊙ 2^b)ᵀ do of G's 16 x 16 tile (rt, ct) over the chunk's rows
  auto product = [&](FragC& prod, const E* qg, const E* dos, int rt, int ct) {
    wmma::fill_fragment(prod, 0.f);
#pragma unroll
    for (int jb = 0; jb < C / 16; ++jb) {
      FragAT fa;
      FragB fb;
      wmma_smem::load(fa, qg + (16 * jb) * LQ + 16 * rt, LQ);
      wmma_smem::load(fb, dos + (16 * jb) * LV + 16 * ct, LV);
      wmma::mma_sync(prod, fa, fb, prod);
    }
  };

#pragma unroll
  for (int s = 0; s < NS - 1; ++s) prefetch(s, s);
#ifdef GLR_DSTATE_3CTAS
  // G in registers: kRegTiles m16n8 tiles per warp, lane 4·gq + tq holding rows 16·mt + gq, + 8 and
  // columns 8·nt + 2·tq, + 1 of tile t = warp + kWarps·i (mt = t / kTilesN, nt = t % kTilesN: a warp's
  // tiles share their column block, so do's fragments are loaded once a chunk for all of them).
  constexpr int kTilesN = BV / 8, kTiles = (KT / 16) * kTilesN, kRegTiles = (kTiles + kWarps - 1) / kWarps;
  static_assert(kWarps % kTilesN == 0, "a warp's register tiles share one column block");
  const int lane = tid % 32, gq = lane / 4, tq = lane % 4;
  auto row_of = [&](int i, int e) { return 16 * ((warp + kWarps * i) / kTilesN) + gq + (e >= 2 ? 8 : 0); };
  const int col0 = 8 * (warp % kTilesN) + 2 * tq;  // of element e: col0 + (e & 1)
  float acc[kRegTiles][4];
#pragma unroll
  for (int i = 0; i < kRegTiles; ++i)
#pragma unroll
    for (int e = 0; e < 4; ++e) {  // G ← dhT (0 outside the live K x V)
      const int kk = row_of(i, e), vv = col0 + (e & 1);
      acc[i][e] = (dhT && warp + kWarps * i < kTiles && kk < kw && vv < vw) ? dhT[state0 + int64_t(kk) * V + vv] : 0.f;
    }
#else
  for (int e = tid; e < KT * BV; e += kThreads) {  // G ← dhT (0 outside the live K x V)
    const int kk = e / BV, vv = e % BV;
    G[kk * LS + vv] = (dhT && kk < kw && vv < vw) ? dhT[state0 + int64_t(kk) * V + vv] : 0.f;
  }
#endif

  int buf = 0;
  for (int64_t it = 0; it < nch; ++it, buf = buf + 1 == NS ? 0 : buf + 1) {  // uniform per CTA
    const int64_t c = nch - 1 - it, slot = slot0 + c;
    cp_async_wait<NS - 2>();  // this thread's copies of step it have landed
    __syncthreads();          // everyone's have; step it − 1 is done with G and with its buffer
    prefetch(it + NS - 1, buf == 0 ? NS - 1 : buf - 1);
    const E* qg = qg_at(buf);
    const E* dos = do_at(buf);
    const float* el = el_at(buf);
    const E* se = se_at(buf);
#ifdef GLR_DSTATE_3CTAS
#pragma unroll
    for (int i = 0; i < kRegTiles; ++i)  // G entering the step to shared memory, for the pass below
      if (warp + kWarps * i < kTiles)
#pragma unroll
        for (int e = 0; e < 4; e += 2)
          *reinterpret_cast<float2*>(G + row_of(i, e) * LS + col0) = make_float2(acc[i][e], acc[i][e + 1]);
    __syncthreads();
#endif

    {  // row x, columns [y0, y0 + kPerPart) per thread: the dg seed of this V tile (y in order within a
       // lane, the kParts lanes in a fixed tree), G rounded (an MMA operand of kernels 4, 5), then decayed
      const int x = tid / kParts, y0 = (tid % kParts) * kPerPart;
#ifndef GLR_DSTATE_3CTAS  // (there G decays in registers, below)
      const float e = x < kw ? el[x] : 1.f;
#endif
      const bool last = c + 1 == nch;  // S_end: hfin (fp32), else the forward's S entering chunk c + 1
      E* dSo = dSws + ((slot * H + h) * K + k0) * V + v0;
      float s = 0.f;
      constexpr bool kVec4 = kPerPart % 4 == 0;  // not at BV = 16, KT = 32 (two columns a lane)
      if constexpr (kVec4) {
        // Four columns a pass: G as a float4, S_end's four as one 8-byte load, dS rounded in one 8-byte
        // store where dSws's rows allow it (store4); the same terms added to s in the same order.
        const bool out_vec = V % 4 == 0 && reinterpret_cast<uintptr_t>(dSws) % 8 == 0;
#pragma unroll 1
        for (int y = y0; y < y0 + kPerPart; y += 4) {
          float4 g4 = *reinterpret_cast<const float4*>(G + x * LS + y);
          if (x < kw) {
            const float gs[4] = {g4.x, g4.y, g4.z, g4.w};
            float sv[4];
            if (last) {
#pragma unroll
              for (int t = 0; t < 4; ++t) sv[t] = y + t < vw ? hfin[state0 + int64_t(x) * V + y + t] : 0.f;
            } else {
              alignas(8) E raw[4];
              *reinterpret_cast<uint2*>(raw) = *reinterpret_cast<const uint2*>(se + x * LV + y);
#pragma unroll
              for (int t = 0; t < 4; ++t) sv[t] = to_f(raw[t]);
            }
#pragma unroll
            for (int t = 0; t < 4; ++t)
              if (y + t < vw) s += gs[t] * sv[t];
            store4(dSo + int64_t(x) * V + y, g4, vw - y, out_vec);
          }
#ifndef GLR_DSTATE_3CTAS  // (there G decays in registers, below)
          g4.x *= e;
          g4.y *= e;
          g4.z *= e;
          g4.w *= e;
          *reinterpret_cast<float4*>(G + x * LS + y) = g4;
#endif
        }
      } else {
#pragma unroll 1
        for (int y = y0; y < y0 + kPerPart; ++y) {
          const float g = G[x * LS + y];
          if (x < kw && y < vw) {
            s += g * (last ? hfin[state0 + int64_t(x) * V + y] : to_f(se[x * LV + y]));
            dSo[int64_t(x) * V + y] = from_f<E>(g);
          }
#ifndef GLR_DSTATE_3CTAS
          G[x * LS + y] = g * e;
#endif
        }
      }
#pragma unroll
      for (int o = 1; o < kParts; o *= 2) s += __shfl_xor_sync(0xffffffffu, s, o);
      if (y0 == 0 && x < kw) seeds[((vt * slots + slot) * H + h) * K + k0 + x] = s;
    }
#ifdef GLR_DSTATE_3CTAS
    // G ← 2^(b_last) ⊙ G + scale·(q ⊙ 2^b)ᵀ do in registers: each tile's product from 0 over the
    // chunk's four 16-step blocks, as WMMA's (HMMA m16n8k16 both), then added scaled.
    const int r = lane % 8, mat = lane / 8;  // the row this lane addresses in 8×8 matrix `mat`
    uint32_t b[C / 16][2];
#pragma unroll
    for (int jb = 0; jb < C / 16; ++jb)
      ldsm_x2_trans(b[jb], dos + (16 * jb + 8 * (mat & 1) + r) * LV + 8 * (warp % kTilesN));
#pragma unroll
    for (int i = 0; i < kRegTiles; ++i) {
      const int t = warp + kWarps * i;
      if (t >= kTiles) continue;  // uniform per warp
      const int mt = t / kTilesN;
      float prod[4] = {0.f, 0.f, 0.f, 0.f};
#pragma unroll
      for (int jb = 0; jb < C / 16; ++jb) {
        uint32_t a[4];  // A = (q ⊙ 2^b)ᵀ: its 8×8 blocks are the transposes of qg's (time, row) blocks
        ldsm_x4_trans(a, qg + (16 * jb + 8 * (mat >> 1) + r) * LQ + 16 * mt + 8 * (mat & 1));
        mma16816<E>(prod, a, b[jb]);
      }
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        const int kk = row_of(i, e);
        acc[i][e] *= kk < kw ? el[kk] : 1.f;
        acc[i][e] += scale * prod[e];
      }
    }
  }
  if (dh0) {
#pragma unroll
    for (int i = 0; i < kRegTiles; ++i)
      if (warp + kWarps * i < kTiles)
#pragma unroll
        for (int e = 0; e < 4; ++e) {
          const int kk = row_of(i, e), vv = col0 + (e & 1);
          if (kk < kw && vv < vw) dh0[state0 + int64_t(kk) * V + vv] = acc[i][e];
        }
  }
#else
    __syncthreads();  // G is decayed everywhere
    for (int t = warp; t < (KT / 16) * (BV / 16); t += kWarps) {  // G += scale·(q ⊙ 2^b)ᵀ do
      const int rt = t / (BV / 16), ct = t % (BV / 16);
      FragC acc, prod;
      wmma_smem::load(acc, G + (16 * rt) * LS + 16 * ct, LS);
      product(prod, qg, dos, rt, ct);
#pragma unroll
      for (int u = 0; u < acc.num_elements; ++u) acc.x[u] += scale * prod.x[u];  // same fragment type: same layout
      wmma_smem::store(G + (16 * rt) * LS + 16 * ct, acc, LS);
    }
  }
  __syncthreads();
  if (dh0) {
    for (int e = tid; e < KT * BV; e += kThreads) {
      const int kk = e / BV, vv = e % BV;
      if (kk < kw && vv < vw) dh0[state0 + int64_t(kk) * V + vv] = G[kk * LS + vv];
    }
  }
#endif
}

/// 4. dq, dk and dg of one chunk and K tile, in form kVar (bwd_split::kDqkPipe, kDqkRemap, kDqkVec).
/// Grid (NT, H·ceil(K / KT), N), or with kDqkRemap (NT·ceil(K / KT), H, N) (varlen: chunk_grid's slots
/// for NT and 1 for N): a chunk's K tiles adjacent
/// CTAs (they read the same do and v). The V loop accumulates
/// DV (lower blocks; every K tile computes the same DV, by the same operations), do·S_cᵀ and
/// v·G_cᵀ (this tile's K rows of S_c, G_c) in fragments that each warp keeps across the V tiles
/// (with kDqkPipe loading V tile t + 1 while it computes tile t).
/// dq and dk of a column need only that column (and DV); the vector gate's dg too. The scalar
/// gate's dg sums over K: the tile writes its partial row sums and its seed sum to dgp, and
/// kernel 5 adds the tiles in order. b is formed here, in shared memory, from g.
/// NOTES: issue-bound on the H200 (session 19: issue slots ~60% busy, the integer pipe the busiest,
/// DRAM ~10%); K tiles of 32 at three CTAs per SM were slower (each tile repeats DV and the V loop).
template <class E, bool kScalarGate, int KT, int kVar>
__global__ void __launch_bounds__(bwd_split::kThreads, 2)
    sm90_glr_bwd_dqk(const E* __restrict__ q, const E* __restrict__ k, const E* __restrict__ v,
                     const E* __restrict__ dO, const float* __restrict__ g, const E* __restrict__ Sws,
                     const E* __restrict__ dSws, const float* __restrict__ seeds, E* __restrict__ dq,
                     E* __restrict__ dk, float* __restrict__ dg, float* __restrict__ dgp,
                     const int64_t* __restrict__ cu, int64_t T, int64_t H, int64_t K, int64_t V, int64_t NT,
                     int64_t N, int64_t slots, int64_t nvt_seed, float scale) {
  using namespace bwd_split;
  namespace wmma = nvcuda::wmma;
  static_assert(KT == 32 || KT == 64, "KT: 32 or 64");
  using FragA = wmma::fragment<wmma::matrix_a, 16, 16, 16, E, wmma::row_major>;
  using FragAT = wmma::fragment<wmma::matrix_a, 16, 16, 16, E, wmma::col_major>;
  using FragB = wmma::fragment<wmma::matrix_b, 16, 16, 16, E, wmma::row_major>;
  using FragBT = wmma::fragment<wmma::matrix_b, 16, 16, 16, E, wmma::col_major>;
  using FragC = wmma::fragment<wmma::accumulator, 16, 16, 16, float>;
  constexpr int BV = kDqkBV, LQ = ld_half(KT), LB = ld_float(KT), LV = ld_half(BV), LAF = ld_float(C),
                LAB = ld_half(C), LD = ld_float(16);
  constexpr int kKT = KT / 16;            // column tiles of a [C, KT] matrix
  constexpr int kPer = 4 * kKT / kWarps;  // [C, KT] tiles per warp (1 or 2)
  constexpr DqkPlan plan(KT);
  static_assert(size_t(48) * LB * 4 <= plan.qr - plan.kr, "stk fits in Kr's space");
  static_assert(size_t(C) * LB * 4 <= plan.Q - plan.P, "dq fits in P");
  static_assert(plan.r1 + plan.vtiles <= plan.P && plan.P + plan.vtiles <= plan.red, "the two V-tile buffers fit");
  extern __shared__ __align__(128) unsigned char smem_raw[];
  E* qs = reinterpret_cast<E*>(smem_raw + plan.qs);
  E* ks = reinterpret_cast<E*>(smem_raw + plan.ks);
  float* bs = reinterpret_cast<float*>(smem_raw + plan.bs);
  float* dvd = reinterpret_cast<float*>(smem_raw + plan.dvd);
  E* dvb = reinterpret_cast<E*>(smem_raw + plan.dvb);
  E* kr = reinterpret_cast<E*>(smem_raw + plan.kr);
  E* qr = reinterpret_cast<E*>(smem_raw + plan.qr);
  float* stk = reinterpret_cast<float*>(smem_raw + plan.kr);  // [48, LB]: dk's off-diagonal product
  float* dvf = reinterpret_cast<float*>(smem_raw + plan.P);   // [C, LAF]: DV staging
  float* dqs = reinterpret_cast<float*>(smem_raw + plan.P);   // [C, LB]: dq, after DV is consumed
  float* xq = reinterpret_cast<float*>(smem_raw + plan.Q);    // [C, LB]: do·S_cᵀ
  float* stq = xq;                                            // [48, LB]: dq's off-diagonal product
  float* dks = xq;                                            // [C, LB]: v·G_cᵀ, then dk

  int64_t bos, eos;
  constexpr bool kPipe = kVar & kDqkPipe, kRemap = kVar & kDqkRemap, kVec = kVar & kDqkVec;
  static_assert(LQ % 8 == 0 && LB % 4 == 0 && LAF % 4 == 0 && LAB % 8 == 0 && LD % 4 == 0, "16-byte rows");
  const int nkt = int(cdiv(K, KT));
  const int64_t cta_x = kRemap ? int64_t(blockIdx.x / unsigned(nkt)) : int64_t(blockIdx.x);  // chunk_cta's x
  const int kt = kRemap ? int(blockIdx.x % unsigned(nkt)) : int(blockIdx.y % unsigned(nkt));
  const int64_t h = kRemap ? int64_t(blockIdx.y) : int64_t(blockIdx.y / unsigned(nkt)), k0 = int64_t(kt) * KT;
  int64_t chunk;
  const int64_t slot = chunk_cta(cu, cta_x, blockIdx.z, N, T, NT, &chunk, &bos, &eos);
  const int64_t c0 = bos + chunk * C;
  if (c0 >= eos) return;  // uniform per CTA
  const int nc = int(eos - c0 < C ? eos - c0 : C), kw = int(K - k0 < KT ? K - k0 : KT);
  const int tid = threadIdx.x, warp = tid / 32;
  const E* Sc = Sws + ((slot * H + h) * K + k0) * V;   // rows [k0, k0 + kw) of S_c [K, V]
  const E* Gc = dSws + ((slot * H + h) * K + k0) * V;  // rows [k0, k0 + kw) of G_c [K, V]
  auto load_v_tile = [&](int64_t v0, size_t off) {  // V tile [v0, v0 + BV) into the buffer at byte offset off
    const int vw = int(V - v0 < BV ? V - v0 : BV);
    async_tile<BV>(reinterpret_cast<E*>(smem_raw + plan.dos + off), LV, dO + (c0 * H + h) * V + v0, H * V, C, nc, vw);
    async_tile<BV>(reinterpret_cast<E*>(smem_raw + plan.vs + off), LV, v + (c0 * H + h) * V + v0, H * V, C, nc, vw);
    async_tile<BV>(reinterpret_cast<E*>(smem_raw + plan.hs + off), LV, Sc + v0, V, KT, kw, vw);
    async_tile<BV>(reinterpret_cast<E*>(smem_raw + plan.gs + off), LV, Gc + v0, V, KT, kw, vw);
  };

  // The dg seeds of this tile's columns, summed over kernel 3's V tiles in order, started now (read
  // at the end): the vector gate's in a register of thread x, the scalar gate's column sums in red.
  auto seed_sum = [&] {
    float a = 0.f;
    if (tid < kw)
      for (int64_t vt = 0; vt < nvt_seed; ++vt) a += seeds[((vt * slots + slot) * H + h) * K + k0 + tid];
    return a;
  };
  float seed = 0.f;
  if constexpr (kPipe) seed = seed_sum();
  async_tile<KT>(qs, LQ, q + (c0 * H + h) * K + k0, H * K, C, nc, kw);
  async_tile<KT>(ks, LQ, k + (c0 * H + h) * K + k0, H * K, C, nc, kw);
  if constexpr (kPipe) load_v_tile(0, 0);  // V tile 0 with them (P and Q, the odd tiles' buffer, are free until the loop ends)
  cp_async_commit();
  chunk_b<KT, kScalarGate>(bs, LB, g, c0, nc, h, H, K, k0, kw);  // q, k and V tile 0 have landed too

  // ---- V loop: DV += do·vᵀ (lower blocks), Xq += do·S_cᵀ, Xk += v·G_cᵀ ----
  FragC accD[2], accQ[kPer], accK[kPer];
#pragma unroll
  for (int u = 0; u < 2; ++u) wmma::fill_fragment(accD[u], 0.f);
#pragma unroll
  for (int u = 0; u < kPer; ++u) {
    wmma::fill_fragment(accQ[u], 0.f);
    wmma::fill_fragment(accK[u], 0.f);
  }
  for (int64_t v0 = 0, t = 0; v0 < V; v0 += BV, ++t) {  // uniform per CTA
    if (!kPipe) {
      load_v_tile(v0, 0);
      cp_async_commit();
      cp_async_wait<0>();
    } else if (v0 + BV < V) {  // tile t + 1 into the other buffer (its last reads, tile t − 1's, ended on the barrier below)
      load_v_tile(v0 + BV, (t & 1) ? 0 : plan.vbuf);
      cp_async_commit();
      cp_async_wait<1>();  // tile t has landed (this thread's copies)
    } else {
      cp_async_wait<0>();
    }
    __syncthreads();  // everyone's copies of tile t have
    const size_t off = kPipe && (t & 1) ? plan.vbuf : 0;
    const E* dos = reinterpret_cast<const E*>(smem_raw + plan.dos + off);
    const E* vs = reinterpret_cast<const E*>(smem_raw + plan.vs + off);
    const E* hs = reinterpret_cast<const E*>(smem_raw + plan.hs + off);
    const E* gs = reinterpret_cast<const E*>(smem_raw + plan.gs + off);
#pragma unroll
    for (int u = 0; u < 2; ++u) {
      const int p = warp + kWarps * u;
      if (p < 10) {
        int ib, jb;
        lower_block(p, &ib, &jb);
#pragma unroll 1
        for (int y0 = 0; y0 < BV; y0 += 16) {
          FragA fa;
          FragBT fb;
          wmma_smem::load(fa, dos + (16 * ib) * LV + y0, LV);
          wmma_smem::load(fb, vs + (16 * jb) * LV + y0, LV);
          wmma::mma_sync(accD[u], fa, fb, accD[u]);
        }
      }
    }
#pragma unroll
    for (int u = 0; u < kPer; ++u) {
      const int t = warp + kWarps * u, rt = t / kKT, ct = t % kKT;
#pragma unroll 1
      for (int y0 = 0; y0 < BV; y0 += 16) {
        FragA fa;
        FragBT fb;
        wmma_smem::load(fa, dos + (16 * rt) * LV + y0, LV);
        wmma_smem::load(fb, hs + (16 * ct) * LV + y0, LV);
        wmma::mma_sync(accQ[u], fa, fb, accQ[u]);
        wmma_smem::load(fa, vs + (16 * rt) * LV + y0, LV);
        wmma_smem::load(fb, gs + (16 * ct) * LV + y0, LV);
        wmma::mma_sync(accK[u], fa, fb, accK[u]);
      }
    }
    __syncthreads();
  }
  // ---- DV (fp32) -> P, Xq -> Q; Kr, Qr into R1 (the V tiles are dead: the loop ended on a barrier) ----
#pragma unroll
  for (int u = 0; u < 2; ++u) {
    const int p = warp + kWarps * u;
    if (p < 10) {
      int ib, jb;
      lower_block(p, &ib, &jb);
      wmma_smem::store(dvf + (16 * ib) * LAF + 16 * jb, accD[u], LAF);
    }
  }
#pragma unroll
  for (int u = 0; u < kPer; ++u) {
    const int t = warp + kWarps * u, rt = t / kKT, ct = t % kKT;
    wmma_smem::store(xq + (16 * rt) * LB + 16 * ct, accQ[u], LB);
  }
  if constexpr (kVec) {
    for (int e = tid; e < 96 * (KT / 8); e += kThreads) {  // 8 columns [kk, kk + 8) of one row of Kr and of Qr
      const int row = e / (KT / 8), kk = (e % (KT / 8)) * 8;
      alignas(16) E o[8];
      {  // Kr_m[j] = k_j 2^(b_r − b_j), j <= r = 16m − 1
        const int m = row < 16 ? 1 : row < 48 ? 2 : 3, j = row - kr_row(m), r = 16 * m - 1;
        if (j < nc) {
          alignas(16) E in[8];
          alignas(16) float br[8], bj[8];
          *reinterpret_cast<uint4*>(in) = *reinterpret_cast<const uint4*>(ks + j * LQ + kk);
          *reinterpret_cast<float4*>(br) = *reinterpret_cast<const float4*>(bs + r * LB + kk);
          *reinterpret_cast<float4*>(br + 4) = *reinterpret_cast<const float4*>(bs + r * LB + kk + 4);
          *reinterpret_cast<float4*>(bj) = *reinterpret_cast<const float4*>(bs + j * LB + kk);
          *reinterpret_cast<float4*>(bj + 4) = *reinterpret_cast<const float4*>(bs + j * LB + kk + 4);
#pragma unroll
          for (int u = 0; u < 8; ++u) o[u] = from_f<E>(to_f(in[u]) * exp2f(br[u] - bj[u]));
        } else {
#pragma unroll
          for (int u = 0; u < 8; ++u) o[u] = from_f<E>(0.f);
        }
        *reinterpret_cast<uint4*>(kr + row * LQ + kk) = *reinterpret_cast<const uint4*>(o);
      }
      {  // Qr_m[i] = q_i 2^(b_i − b_r), i > r = 16m − 1
        const int m = row < 48 ? 1 : row < 80 ? 2 : 3, i = row - qr_row(m) + 16 * m, r = 16 * m - 1;
        if (i < nc) {
          alignas(16) E in[8];
          alignas(16) float bi[8], br[8];
          *reinterpret_cast<uint4*>(in) = *reinterpret_cast<const uint4*>(qs + i * LQ + kk);
          *reinterpret_cast<float4*>(bi) = *reinterpret_cast<const float4*>(bs + i * LB + kk);
          *reinterpret_cast<float4*>(bi + 4) = *reinterpret_cast<const float4*>(bs + i * LB + kk + 4);
          *reinterpret_cast<float4*>(br) = *reinterpret_cast<const float4*>(bs + r * LB + kk);
          *reinterpret_cast<float4*>(br + 4) = *reinterpret_cast<const float4*>(bs + r * LB + kk + 4);
#pragma unroll
          for (int u = 0; u < 8; ++u) o[u] = from_f<E>(to_f(in[u]) * fwd_split::decay_past_ref(bi[u], br[u]));
        } else {
#pragma unroll
          for (int u = 0; u < 8; ++u) o[u] = from_f<E>(0.f);
        }
        *reinterpret_cast<uint4*>(qr + row * LQ + kk) = *reinterpret_cast<const uint4*>(o);
      }
    }
  } else
  for (int e = tid; e < 96 * KT; e += kThreads) {
    const int row = e / KT, kk = e % KT;
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

  // ---- DV selected and rounded (off-diagonal blocks, live rows) -> dvb; its diagonal blocks (fp32) -> dvd ----
  if constexpr (kVec) {
    for (int e = tid; e < C * C / 8; e += kThreads) {  // row i, columns [j, j + 8) (one 16-block)
      const int i = e / (C / 8), j = (e % (C / 8)) * 8;
      alignas(16) float d[8];
      alignas(16) E o[8];
      *reinterpret_cast<float4*>(d) = *reinterpret_cast<const float4*>(dvf + i * LAF + j);
      *reinterpret_cast<float4*>(d + 4) = *reinterpret_cast<const float4*>(dvf + i * LAF + j + 4);
      if ((i >> 4) == (j >> 4)) {
        *reinterpret_cast<float4*>(dvd + i * LD + (j & 15)) = *reinterpret_cast<const float4*>(d);
        *reinterpret_cast<float4*>(dvd + i * LD + (j & 15) + 4) = *reinterpret_cast<const float4*>(d + 4);
      }
      const bool live = i < nc && (i >> 4) > (j >> 4);
#pragma unroll
      for (int u = 0; u < 8; ++u) o[u] = live ? from_f<E>(d[u]) : from_f<E>(0.f);
      *reinterpret_cast<uint4*>(dvb + i * LAB + j) = *reinterpret_cast<const uint4*>(o);
    }
  } else {
    for (int e = tid; e < C * C; e += kThreads) {
      const int i = e / C, j = e % C;
      if ((i >> 4) == (j >> 4)) dvd[i * LD + (j & 15)] = dvf[i * LAF + j];
      dvb[i * LAB + j] = (i < nc && (i >> 4) > (j >> 4)) ? from_f<E>(dvf[i * LAF + j]) : from_f<E>(0.f);
    }
  }
  __syncthreads();

  // ---- dq's inter term -> dqs (P: DV is consumed) ----
  if constexpr (kVec) {
    for (int e = tid; e < C * KT / 4; e += kThreads) {
      const int i = e / (KT / 4), x = (e % (KT / 4)) * 4;
      if (i >= nc) continue;  // rows >= nc never read
      const float4 b = *reinterpret_cast<const float4*>(bs + i * LB + x), y = *reinterpret_cast<const float4*>(xq + i * LB + x);
      *reinterpret_cast<float4*>(dqs + i * LB + x) =
          make_float4(exp2f(b.x) * y.x, exp2f(b.y) * y.y, exp2f(b.z) * y.z, exp2f(b.w) * y.w);
    }
  } else
  for (int e = tid; e < C * KT; e += kThreads) {
    const int i = e / KT, x = e % KT;
    if (i < nc) dqs[i * LB + x] = exp2f(bs[i * LB + x]) * xq[i * LB + x];  // 2^(b_i) ⊙ (do_i · S_cᵀ); rows >= nc never read
  }
  __syncthreads();

  // ---- dq's off-diagonal blocks: rows of block m, Σ_{j < 16m} DV_ij Kr_m[j] -> stq (Xq is consumed) ----
  for (int t = warp; t < 3 * kKT; t += kWarps) {
    const int m = 1 + t / kKT, ct = t % kKT;
    FragC acc;
    wmma::fill_fragment(acc, 0.f);
    for (int jb = 0; jb < m; ++jb) {
      FragA fa;
      FragB fb;
      wmma_smem::load(fa, dvb + (16 * m) * LAB + 16 * jb, LAB);
      wmma_smem::load(fb, kr + (kr_row(m) + 16 * jb) * LQ + 16 * ct, LQ);
      wmma::mma_sync(acc, fa, fb, acc);
    }
    wmma_smem::store(stq + (16 * (m - 1)) * LB + 16 * ct, acc, LB);
  }
  __syncthreads();

  // ---- dq += 2^(b_i − b_r) ⊙ stq; dk's off-diagonal blocks: rows of block m − 1, Σ_{i >= 16m} DV_ijᵀ Qr_m[i] -> stk ----
  if constexpr (kVec) {
    for (int e = tid; e < 48 * KT / 4; e += kThreads) {
      const int i = 16 + e / (KT / 4), x = (e % (KT / 4)) * 4;
      if (i >= nc) continue;
      const int r = (i & ~15) - 1;
      const float4 bi = *reinterpret_cast<const float4*>(bs + i * LB + x),
                   br = *reinterpret_cast<const float4*>(bs + r * LB + x),
                   st = *reinterpret_cast<const float4*>(stq + (i - 16) * LB + x);
      float4 a = *reinterpret_cast<const float4*>(dqs + i * LB + x);
      a.x += exp2f(bi.x - br.x) * st.x;
      a.y += exp2f(bi.y - br.y) * st.y;
      a.z += exp2f(bi.z - br.z) * st.z;
      a.w += exp2f(bi.w - br.w) * st.w;
      *reinterpret_cast<float4*>(dqs + i * LB + x) = a;
    }
  } else
  for (int e = tid; e < 48 * KT; e += kThreads) {
    const int i = 16 + e / KT, x = e % KT;
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
      wmma_smem::load(fa, dvb + (16 * ib) * LAB + 16 * (m - 1), LAB);
      wmma_smem::load(fb, qr + (qr_row(m) + 16 * (ib - m)) * LQ + 16 * ct, LQ);
      wmma::mma_sync(acc, fa, fb, acc);
    }
    wmma_smem::store(stk + (16 * (m - 1)) * LB + 16 * ct, acc, LB);
  }
  __syncthreads();

  // ---- Xk = v·G_cᵀ into dks (stq is consumed) ----
#pragma unroll
  for (int u = 0; u < kPer; ++u) {
    const int t = warp + kWarps * u, rt = t / kKT, ct = t % kKT;
    wmma_smem::store(dks + (16 * rt) * LB + 16 * ct, accK[u], LB);
  }
  __syncthreads();

  // ---- the diagonal blocks of dq and dk on FFMA: a thread owns block ib of column x;
  // dq ← scale·(dq + Σ_{j in ib, j <= i} DV_ij k_j 2^(b_i − b_j)), dk = 2^(b_last − b_j) ⊙ Xk +
  // scale·(2^(b_r − b_j) ⊙ stk + Σ_{i in ib, i >= j} DV_ij q_i 2^(b_i − b_j)) over the live triangle.
  // A column whose block is within diag_decay::kSpan of ρ (the row before the block, b_ρ = 0 for
  // block 0) takes the forward prep's factored form:
  // 2^(b_i − b_j) = 2^(b_i − b_ρ)·2^(b_ρ − b_j), so dq_i adds 2^(b_i − b_ρ)·Σ_j DV_ij y_j and dk_j
  // adds 2^(b_ρ − b_j)·Σ_i DV_ij x_i (y_j = k_j 2^(b_ρ − b_j), x_i = q_i 2^(b_i − b_ρ)), and dk's
  // off-diagonal factor 2^(b_r − b_j) is 2^(b_r − b_ρ)·2^(b_ρ − b_j): 65 exp2f a thread instead of 168,
  // two FFMAs a pair. Other columns (a wider span, a nonfinite b) per pair (i ascending, j ascending),
  // as the prep's: one 2^(b_i − b_j) for both dq_i and dk_j. ----
  for (int task = tid; task < 4 * KT; task += kThreads) {
    const int s0 = 16 * (task / KT), x = task % KT;  // block rows [s0, s0 + 16)
    if (s0 >= nc) continue;
    const float bref = s0 ? bs[(s0 - 1) * LB + x] : 0.f;
    bool factored = true;
#pragma unroll
    for (int r = 0; r < 16; ++r) factored = factored & diag_decay::within_span(bs[(s0 + r) * LB + x], bref);
    if (factored) {  // per thread (the span is a column's): a warp runs both forms only where its columns differ
      float y[16], t[16];  // y_j = k_j 2^(b_ρ − b_j); t_j = Σ_{i >= j} DV_ij x_i
#pragma unroll
      for (int jj = 0; jj < 16; ++jj) {
        const int j = s0 + jj;
        y[jj] = diag_decay::y_of(to_f(ks[j * LQ + x]), bs[j * LB + x], bref, true);
        t[jj] = 0.f;
      }
      unsigned per_pair_rows = 0;  // GLR_DIAG_RANGE: rows ii whose factored dq is not finite
#pragma unroll
      for (int ii = 0; ii < 16; ++ii) {
        const int i = s0 + ii;
        if (i < nc) {
          const float f = exp2f(bs[i * LB + x] - bref), xi = to_f(qs[i * LQ + x]) * f;  // xi = x_of(q_i, b_i, b_ρ, true)
          float s = 0.f;
#pragma unroll
          for (int jj = 0; jj <= ii; ++jj) {  // the live triangle only: j <= i < nc
            const float d = dvd[i * LD + jj];
            s += d * y[jj];
            t[jj] += d * xi;
          }
          const float a = dqs[i * LB + x] + f * s;
          if constexpr (fwd_split::kDiagRange) {  // a row redone below keeps its off-diagonal dq here
            const bool bad = !isfinite(a);
            per_pair_rows |= unsigned(bad) << ii;
            dqs[i * LB + x] = bad ? dqs[i * LB + x] : scale * a;
          } else {
            dqs[i * LB + x] = scale * a;
          }
        }
      }
      if constexpr (fwd_split::kDiagRange) {
        // s is up to 2^kSpan times the per-pair partial sums: where it left fp32's range (or an input is not
        // finite) row i takes the per-pair form, DV_ij·(k_j·2^(b_i − b_j)) in j's order as the branch below
        // sums it (dk keeps t: its factors balance before they multiply; docs/glr.md, "Range"). Out of the
        // unrolled row loop: where every row is finite this costs a compare, a select and an OR a row.
        while (per_pair_rows) {
          const int ii = __ffs(per_pair_rows) - 1, i = s0 + ii;
          per_pair_rows &= per_pair_rows - 1;
          const float bi = bs[i * LB + x];
          float a = dqs[i * LB + x];
#pragma unroll 1
          for (int jj = 0; jj <= ii; ++jj) {
            const int j = s0 + jj;
            a = diag_decay::add_term(a, dvd[i * LD + jj], to_f(ks[j * LQ + x]), bi, bs[j * LB + x], false);
          }
          dqs[i * LB + x] = scale * a;
        }
      }
      // dk's off-diagonal term 2^(b_r − b_j) ⊙ stk (r = s0 + 15, the block's last row) as 2^(b_r − b_ρ)·2^(b_ρ − b_j)
      const float er = exp2f(bs[(s0 + 15) * LB + x] - bref);
#pragma unroll
      for (int jj = 0; jj < 16; ++jj) {
        const int j = s0 + jj;
        if (j < nc) {
          const float bj = bs[j * LB + x], f = exp2f(bref - bj);
          const float off = j < 48 ? er * stk[j * LB + x] : 0.f;
          dks[j * LB + x] = scale * (f * (off + t[jj])) + exp2f(bs[(C - 1) * LB + x] - bj) * dks[j * LB + x];
        }
      }
      continue;
    }
    float dka[16];
#pragma unroll
    for (int jj = 0; jj < 16; ++jj) {  // dk's off-diagonal term (blocks 0-2), scaled below
      const int j = s0 + jj;
      dka[jj] = j < 48 ? exp2f(bs[(s0 + 15) * LB + x] - bs[j * LB + x]) * stk[j * LB + x] : 0.f;
    }
#pragma unroll
    for (int ii = 0; ii < 16; ++ii) {
      const int i = s0 + ii;
      if (i < nc) {
        const float bi = bs[i * LB + x], qi = to_f(qs[i * LQ + x]);
        float a = dqs[i * LB + x];
#pragma unroll
        for (int jj = 0; jj <= ii; ++jj) {  // the live triangle only: j <= i < nc
          const int j = s0 + jj;
          const float d = dvd[i * LD + jj], e = exp2f(bi - bs[j * LB + x]);
          a += d * (to_f(ks[j * LQ + x]) * e);
          dka[jj] += d * (qi * e);
        }
        dqs[i * LB + x] = scale * a;
      }
    }
#pragma unroll
    for (int jj = 0; jj < 16; ++jj) {
      const int j = s0 + jj;
      if (j < nc) dks[j * LB + x] = scale * dka[jj] + exp2f(bs[(C - 1) * LB + x] - bs[j * LB + x]) * dks[j * LB + x];
    }
  }
  __syncthreads();

  // ---- stores: dq, dk (rounded once), dg ----
  fwd_split::store_rows<KT>(dq + (c0 * H + h) * K + k0, H * K, nc, kw, [&](int i, int x) { return dqs[i * LB + x]; });
  fwd_split::store_rows<KT>(dk + (c0 * H + h) * K + k0, H * K, nc, kw, [&](int i, int x) { return dks[i * LB + x]; });
  if constexpr (!kScalarGate) {
    static_assert(KT <= kThreads, "thread x holds column x's seed");
    if (const int x = tid; x < kw) {  // dg_i = seed + Σ_{i' >= i} (q ⊙ dq − k ⊙ dk)_{i'}, i' descending
      float acc = kPipe ? seed : seed_sum();
      for (int i = nc - 1; i >= 0; --i) {
        acc += to_f(qs[i * LQ + x]) * dqs[i * LB + x] - to_f(ks[i * LQ + x]) * dks[i * LB + x];
        dg[((c0 + i) * H + h) * K + k0 + x] = acc;
      }
    }
  } else {
    float* red = reinterpret_cast<float*>(smem_raw + plan.red);   // [KT]: the seed's column sums
    float* part = dgp + ((kt * slots + slot) * H + h) * (C + 1);  // [C + 1]: row sums, then the seed sum
    if (tid < kw) red[tid] = kPipe ? seed : seed_sum();  // the seed's column sums over the V tiles, in order
    for (int i = tid; i < nc; i += kThreads) {  // row sums over the tile's columns, x in order
      float s = 0.f;
      for (int x = 0; x < kw; ++x) s += to_f(qs[i * LQ + x]) * dqs[i * LB + x] - to_f(ks[i * LQ + x]) * dks[i * LB + x];
      part[i] = s;
    }
    __syncthreads();
    if (tid == 0) {
      float s = 0.f;
      for (int x = 0; x < kw; ++x) s += red[x];
      part[C] = s;
    }
  }
}

/// 5. dv of one chunk and V tile. Grid (NT, H·ceil(V / kBV), N) (varlen: chunk_grid). Its operands are the forward's A,
/// prep's k ⊙ 2^(b_last − b) and kernel 3's G_c. Scalar gate: the CTA of V tile 0 also writes the
/// chunk's dg from kernel 4's K-tile partials (row sums and seed sums, added over the tiles in order).
template <class E, bool kScalarGate, int KP>
__global__ void __launch_bounds__(bwd_split::kThreads)
    sm90_glr_bwd_dv(const E* __restrict__ Kd, const E* __restrict__ dO, const E* __restrict__ A,
                    const E* __restrict__ dSws, E* __restrict__ dv, const float* __restrict__ dgp,
                    float* __restrict__ dg, const int64_t* __restrict__ cu, int64_t T, int64_t H, int64_t K,
                    int64_t V, int64_t NT, int64_t N, int64_t slots, int64_t nkt, float scale) {
  using namespace bwd_split;
  namespace wmma = nvcuda::wmma;
  static_assert(KP == 32 || KP == 64 || KP == 128 || KP == 256, "KP: 32, 64, 128 or 256");
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
  float* red = reinterpret_cast<float*>(smem_raw + plan.red);

  const int64_t nvt = cdiv(V, BV);
  const int64_t h = blockIdx.y / nvt, v0 = (blockIdx.y % nvt) * BV;
  int64_t bos, eos, chunk;
  const int64_t slot = chunk_cta(cu, blockIdx.x, blockIdx.z, N, T, NT, &chunk, &bos, &eos);
  const int64_t c0 = bos + chunk * C;
  if (c0 >= eos) return;  // uniform per CTA
  const int nc = int(eos - c0 < C ? eos - c0 : C), vw = int(V - v0 < BV ? V - v0 : BV);
  const int tid = threadIdx.x, warp = tid / 32;
  const bool dg_here = kScalarGate && v0 == 0;  // uniform per CTA

  // A's rows past the chunk are selected to 0 (there q = 0 may have met an infinite k: 0·Inf); k ⊙ 2^(b_last − b)
  // and G_c are 0 outside the live rows and columns.
  async_tile<C>(as, LA, A + (slot * H + h) * C * C, C, C, nc, C);
  async_tile<BV>(dos, LV, dO + (c0 * H + h) * V + v0, H * V, C, nc, vw);
  async_tile<BV>(gs, LV, dSws + (slot * H + h) * K * V + v0, V, KP, int(K), vw);
  async_tile<KP>(kt, LQ, Kd + (c0 * H + h) * K, H * K, C, nc, int(K));
  cp_async_commit();
  if (dg_here) {  // the K tiles' partials of the scalar gate's dg, added in tile order
    for (int i = tid; i <= C; i += kThreads) {
      if (i < nc || i == C) {
        float s = 0.f;
        for (int64_t t = 0; t < nkt; ++t) s += dgp[((t * slots + slot) * H + h) * (C + 1) + i];
        red[i] = s;
      }
    }
  }
  cp_async_wait<0>();
  __syncthreads();
  // Aᵀ·do over the off-diagonal blocks (ib > jb): rows of block jb.
  constexpr int kVT = BV / 16;
  for (int t = warp; t < 4 * kVT; t += kWarps) {
    const int jb = t / kVT, ct = t % kVT;
    FragC acc;
    wmma::fill_fragment(acc, 0.f);
    for (int ib = jb + 1; ib < 4; ++ib) {
      FragAT fa;
      FragB fb;
      wmma_smem::load(fa, as + (16 * ib) * LA + 16 * jb, LA);
      wmma_smem::load(fb, dos + (16 * ib) * LV + 16 * ct, LV);
      wmma::mma_sync(acc, fa, fb, acc);
    }
    wmma_smem::store(stg + (16 * jb) * LO + 16 * ct, acc, LO);
  }
  __syncthreads();
  {  // + the diagonal block over i >= j, then scale: a thread per (block jb, column y) holds the block's 16
     // sums and walks its rows once (do_i loaded once, A's row i as two 16-byte loads); each sum gets the
     // same terms in the same order (i ascending from j) as a loop per element would: the same bits
    static_assert(4 * BV == kThreads, "a thread per diagonal block and column");
    static_assert(LA % 8 == 0, "A's rows at 16-byte boundaries");
    const int s0 = 16 * (tid / BV), y = tid % BV;
    if (s0 < nc) {
      float a[16];
#pragma unroll
      for (int jj = 0; jj < 16; ++jj) a[jj] = stg[(s0 + jj) * LO + y];
#pragma unroll
      for (int ii = 0; ii < 16; ++ii) {
        const int i = s0 + ii;
        if (i < nc) {
          const float d = to_f(dos[i * LV + y]);
          alignas(16) E row[16];  // A_ij, j in the block
          *reinterpret_cast<uint4*>(row) = *reinterpret_cast<const uint4*>(as + i * LA + s0);
          *reinterpret_cast<uint4*>(row + 8) = *reinterpret_cast<const uint4*>(as + i * LA + s0 + 8);
#pragma unroll
          for (int jj = 0; jj <= ii; ++jj) a[jj] += to_f(row[jj]) * d;
        }
      }
#pragma unroll
      for (int jj = 0; jj < 16; ++jj)
        if (s0 + jj < nc) stg[(s0 + jj) * LO + y] = scale * a[jj];
    }
  }
  __syncthreads();
  for (int t = warp; t < 4 * kVT; t += kWarps) {  // += (k ⊙ 2^(b_last − b))·G_c
    const int jb = t / kVT, ct = t % kVT;
    FragC acc;
    wmma_smem::load(acc, stg + (16 * jb) * LO + 16 * ct, LO);
#pragma unroll
    for (int k0 = 0; k0 < KP; k0 += 16) {
      FragA fa;
      FragB fb;
      wmma_smem::load(fa, kt + (16 * jb) * LQ + k0, LQ);
      wmma_smem::load(fb, gs + k0 * LV + 16 * ct, LV);
      wmma::mma_sync(acc, fa, fb, acc);
    }
    wmma_smem::store(stg + (16 * jb) * LO + 16 * ct, acc, LO);
  }
  __syncthreads();
  for (int e = tid; e < C * BV; e += kThreads) {
    const int j = e / BV, y = e % BV;
    if (j < nc && y < vw) dv[((c0 + j) * H + h) * V + v0 + y] = from_f<E>(stg[j * LO + y]);
  }
  if (dg_here && tid == 0) {  // dg_i = Σ seed + Σ_{i' >= i} rows_{i'}, i' descending (read after the barriers above)
    float acc = red[C];
    for (int i = nc - 1; i >= 0; --i) {
      acc += red[i];
      dg[(c0 + i) * H + h] = acc;
    }
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

/// The V tile of kernel 3 (the only kernel of the backward whose grid the sequences and heads
/// limit): the widest whose grid, V tiles x K tiles x heads x sequences, fills the device, as the
/// forward split chooses its walk's (fwd_split::tiles).
template <int KT>
inline int dstate_bv(const Shape& s) {
  const int64_t walkers = s.H * s.sequences() * cdiv(s.K, KT), sms = fwd_tc::sm_count();
  if (s.V > 32 && cdiv(s.V, 64) * walkers >= sms) return 64;
  if (s.V > 16 && cdiv(s.V, 32) * walkers >= sms) return 32;
  return 16;
}

/// Kernel 3; returns the number of V tiles of its seeds in *nvt.
template <class E, int BV, int KT>
Status launch_dstate(const BwdParams& p, const Layout& l, cudaStream_t stream, int64_t* nvt) {
  const Shape& s = p.shape;
  auto* ws = static_cast<unsigned char*>(p.workspace);
  const unsigned char* sb = states_base(p);
  constexpr size_t bytes = DstatePlan(KT, BV).total;
  // sm_90's 228 KB of shared memory an SM, less the driver's 1 KB a CTA: kDstateCtas CTAs.
  static_assert(kDstateCtas * (bytes + 1024) <= 228 * 1024, "sm90_glr_bwd_dstate: kDstateCtas CTAs per SM");
  auto* kernel = &sm90_glr_bwd_dstate<E, BV, KT>;
  if (Status st = allow_smem(kernel, bytes); !st.ok()) return st;
  *nvt = cdiv(s.V, BV);
  kernel<<<dim3(unsigned(*nvt * cdiv(s.K, KT)), unsigned(s.H), unsigned(s.sequences())), kThreads, bytes, stream>>>(
      reinterpret_cast<const E*>(sb + l.Qg), static_cast<const E*>(p.dO), reinterpret_cast<const float*>(sb + l.El),
      static_cast<const float*>(p.dhT), reinterpret_cast<const E*>(sb + l.S),
      reinterpret_cast<const float*>(sb + l.hfin), reinterpret_cast<E*>(ws + l.dS),
      reinterpret_cast<float*>(ws + l.seeds), static_cast<float*>(p.dh0), s.cu_seqlens, s.T, s.H, s.K, s.V, l.NT,
      l.slots, float(p.scale));
  return {};
}

template <class E, int KT>
Status launch_dstates(const BwdParams& p, const Layout& l, cudaStream_t stream, int64_t* nvt) {
  switch (dstate_bv<KT>(p.shape)) {
    case 64: return launch_dstate<E, 64, KT>(p, l, stream, nvt);
    case 32: return launch_dstate<E, 32, KT>(p, l, stream, nvt);
    default: return launch_dstate<E, 16, KT>(p, l, stream, nvt);
  }
}

/// Kernel 4 with K tiles of KT columns, form kVar; returns their number in *nkt.
template <class E, bool kScalarGate, int KT, int kVar>
Status launch_dqk(const BwdParams& p, const Layout& l, cudaStream_t stream, int64_t nvt_seed, int64_t* nkt) {
  const Shape& s = p.shape;
  auto* ws = static_cast<unsigned char*>(p.workspace);
  *nkt = cdiv(s.K, KT);
  if (*nkt > l.nkt) return {"glr::cuda::backward (split): K tiles beyond the workspace's"};
  constexpr size_t bytes = DqkPlan(KT).total;
  static_assert(bytes <= 113 * 1024, "sm90_glr_bwd_dqk: two CTAs per SM");
  auto* dqk = &sm90_glr_bwd_dqk<E, kScalarGate, KT, kVar>;
  if (Status st = allow_smem(dqk, bytes); !st.ok()) return st;
  const fwd_split::ChunkGrid cg = fwd_split::chunk_grid(s, l.NT, l.slots);
  const dim3 grid = (kVar & kDqkRemap) ? dim3(unsigned(cg.x * *nkt), unsigned(s.H), unsigned(cg.z))
                                       : dim3(unsigned(cg.x), unsigned(s.H * *nkt), unsigned(cg.z));
  dqk<<<grid, kThreads, bytes, stream>>>(
      static_cast<const E*>(p.q), static_cast<const E*>(p.k), static_cast<const E*>(p.v), static_cast<const E*>(p.dO),
      static_cast<const float*>(p.g), reinterpret_cast<const E*>(states_base(p) + l.S),
      reinterpret_cast<const E*>(ws + l.dS),
      reinterpret_cast<const float*>(ws + l.seeds), static_cast<E*>(p.dq), static_cast<E*>(p.dk),
      static_cast<float*>(p.dg), reinterpret_cast<float*>(ws + l.dgp), s.cu_seqlens, s.T, s.H, s.K, s.V, l.NT,
      s.sequences(), l.slots, nvt_seed, float(p.scale));
  return {};
}

template <class E, bool kScalarGate, int KP>
Status launch_kp(const BwdParams& p, cudaStream_t stream) {
  const Shape& s = p.shape;
  const Layout l = layout(s, p.saved != nullptr);
  const int64_t N = s.sequences();
  constexpr int KT = k_tile(KP);
  auto* ws = static_cast<unsigned char*>(p.workspace);
  const unsigned char* sb = states_base(p);

  // Kernels 1 and 2: the forward split's prep and walk on its part of the workspace (A, q ⊙ 2^b,
  // k ⊙ 2^(b_last − b), 2^(b_last), every chunk's incoming S), the final state in fp32 to ws.hfin —
  // unless a forward of the same inputs kept them (BwdParams::saved).
  if (!p.saved) {
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
    f.workspace_bytes = fwd_split::layout(s, fwd_split::Walk::plain).bytes;
    if (Status st = fwd_split::launch_states<E, kScalarGate>(f, stream, fwd_split::Walk::plain); !st.ok()) return st;
  }
  int64_t nvt_seed = 0;
  if (Status st = launch_dstates<E, KT>(p, l, stream, &nvt_seed); !st.ok()) return st;
  if (l.NT > 0) {
    int64_t nkt = 0;
    constexpr int kMulti = kDqkPipe | kDqkRemap | kDqkVec, kOne = kDqkVec;  // dqk_form: several K tiles or one
    static_assert(dqk_form(256) == kMulti && dqk_form(64) == kOne, "dqk_form's two forms");
    const Status st = dqk_form(s.K) == kMulti ? launch_dqk<E, kScalarGate, KT, kMulti>(p, l, stream, nvt_seed, &nkt)
                                              : launch_dqk<E, kScalarGate, KT, kOne>(p, l, stream, nvt_seed, &nkt);
    if (!st.ok()) return st;
    constexpr size_t dv_bytes = DvPlan(KP).total;
    auto* dvk = &sm90_glr_bwd_dv<E, kScalarGate, KP>;
    if (Status st = allow_smem(dvk, dv_bytes); !st.ok()) return st;
    const fwd_split::ChunkGrid cg = fwd_split::chunk_grid(s, l.NT, l.slots);
    dvk<<<dim3(unsigned(cg.x), unsigned(s.H * cdiv(s.V, kBV)), unsigned(cg.z)), kThreads, dv_bytes, stream>>>(
        reinterpret_cast<const E*>(sb + l.Kd), static_cast<const E*>(p.dO), reinterpret_cast<const E*>(sb + l.A),
        reinterpret_cast<const E*>(ws + l.dS), static_cast<E*>(p.dv), reinterpret_cast<const float*>(ws + l.dgp),
        static_cast<float*>(p.dg), s.cu_seqlens, s.T, s.H, s.K, s.V, l.NT, N, l.slots, nkt, float(p.scale));
  }
  if (const cudaError_t e = cudaGetLastError(); e != cudaSuccess) return status("launch", e);
  return {};
}

template <class E, bool kScalarGate>
Status launch_gate(const BwdParams& p, cudaStream_t stream) {
  if (p.shape.K <= 32) return launch_kp<E, kScalarGate, 32>(p, stream);
  if (p.shape.K <= 64) return launch_kp<E, kScalarGate, 64>(p, stream);
  if (p.shape.K <= 128) return launch_kp<E, kScalarGate, 128>(p, stream);
  return launch_kp<E, kScalarGate, 256>(p, stream);
}

/// Whether the split backward takes this shape: bf16 and f16 inputs, K <= 256 (the forward split's
/// limit: kernels 1-2 are its own), chunk 64 (V any, in tiles), and grids inside the y/z limits.
inline bool takes(const Shape& s) {
  return (s.dtype == DType::bf16 || s.dtype == DType::f16) && s.K <= fwd_split::kMaxK && s.chunk == C &&
         s.sequences() <= 65535 && s.H * cdiv(s.V, kBV) <= 65535 && s.H * k_tiles(s.K) <= 65535 &&
         (cdiv(s.T, C) + (s.cu_seqlens ? 2 * s.sequences() : 0)) * k_tiles(s.K) <= 0x7fffffff;  // kernel 4's grid x (chunk_grid)
}

inline size_t workspace_bytes(const Shape& s) { return takes(s) ? layout(s).bytes : 0; }

template <class E>
Status launch(const BwdParams& p, cudaStream_t stream) {
  return p.shape.gate == Gate::scalar ? launch_gate<E, true>(p, stream) : launch_gate<E, false>(p, stream);
}

}  // namespace bwd_split

}  // namespace glr::cuda::sm90
