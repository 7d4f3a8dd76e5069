/// glr CUDA family, sm90 tensor-core forward split in three kernels (docs/glr.md, "Where the speed
/// is"): everything that does not depend on the state runs in parallel over chunks; only the state
/// pass walks, and it walks on precomputed operands.
///   1. sm90_glr_fwd_prep  per (chunk, head):         b = chunk-local Σ g·log2e (shared memory only),
///      (_scalar: the scalar gate)
///                                                    A (selected j <= i)             -> ws.A  [slot, H, C, C]
///                                                    q ⊙ 2^b                          -> ws.Qg [BT, H, K]
///                                                    k ⊙ 2^(b_last − b)               -> ws.Kd [BT, H, K]
///                                                    2^(b_last)                       -> ws.El [slot, H, K]
///   2. sm90_glr_fwd_walk  per (V tile, head, seq):   S ← El ⊙ S + Kdᵀ v per chunk; S entering each chunk
///                                                    -> ws.S [slot, H, K, V], the final S -> hT
///      (segmented: a long sequence with few walkers)  2a. per segment, from S = 0: U = its end state,
///                                                    P = Π El                -> ws.U, ws.P (fp32)
///                                                    2b. per segment: S entering it = h0 folded
///                                                    through the earlier segments' (P, U), then 2
///   3. sm90_glr_fwd_out   per (chunk, head, V tile): o = scale·(Qg·S_c + A·v)
///      (on sm_90a devices sm90_glr_fwd_out_wgmma, glr_fwd_out_wgmma.cuh, on warpgroup MMAs: out_on_wgmma)
/// The arithmetic is glr_fwd_tc.cuh's, operation for operation, with one exception: the vector-gate
/// prep forms the decay of A's diagonal 16-blocks (fp32, on FFMA, as there) per column as
/// 2^(b_i − b_ρ)·2^(b_ρ − b_j), ρ the row before the block, where every |b − b_ρ| of the block's
/// column is <= 32, and per pair as there elsewhere (diag_decay.hpp: the same Inf/NaN classes; a few
/// fp32 ulps apart), and sums those blocks over K in two halves per 32-column slice. The roundings
/// to the input dtype are unchanged (A, S_c, q⊙2^b, k⊙2^(b_last−b) and the factored off-diagonal
/// A operands once each; fp32 b, diagonal factors, state, sums and accumulation), so the contract
/// analysis holds unchanged; A's off-diagonal blocks, q⊙2^b, k⊙2^(b_last−b) and 2^(b_last) are
/// the fused kernel's bits. The factored prep was compiled for sm_90a/sm_100a and its factoring
/// emulated on the host (glr/tests/unit/diag_decay_test.cpp); on the H200 (session 15, call C)
/// glr_cuda_tests pass (33/33) — the 12 gates on this build are owed.
/// Every global tile is loaded with cp.async (16-byte copies,
/// zero-filled outside the live rows and columns; element copies where a row is not 16-byte
/// aligned), all of a kernel's tiles in flight at once, and the walk prefetches chunk c+1 while it
/// computes chunk c. Chunk slots: chunk c of sequence n is slot first_slot(n) + c with first_slot =
/// n·(NT+1) (fixed length) or 2n + ⌊bos/64⌋ (varlen), as the backward numbers them (glr_bwd.cuh):
/// unique and below slots() without reading cu_seqlens on the host. The parallel kernels launch
/// ceil(T/64) chunk CTAs per sequence at fixed length, one CTA per slot varlen (chunk_cta finds its
/// sequence on the device); a CTA past its sequence's end returns at once.
#pragma once

#include <mma.h>

#include <cstdint>
#include <string>
#include <type_traits>

#include "glr/cuda.hpp"
#include "glr/cuda/sm90/common.cuh"
#include "glr/cuda/sm90/wmma_smem.cuh"
#include "glr/cuda/sm90/diag_decay.hpp"
#include "glr/cuda/sm90/segment_fold.hpp"
#include "glr/cuda/sm90/glr_fwd_tc.cuh"

namespace glr::cuda::sm90 {

namespace fwd_split {

using fwd_tc::C;
using fwd_tc::kLog2e;
using fwd_tc::ld_float;
using fwd_tc::ld_half;
using fwd_tc::align128;
using fwd_tc::from_f;
using fwd_tc::to_f;
inline constexpr int kThreads = 256;
inline constexpr int kWarps = kThreads / 32;
/// GLR_DIAG_RANGE (switches.cuh): the factored diagonal kept within fp32's range, tested after the fact —
/// the prep recomputes a diagonal entry of A per pair where the factored sum is not finite
/// (redo_diagonal_per_pair), the backward's dqk a row of dq (docs/glr.md, "Range").
#ifdef GLR_DIAG_RANGE
inline constexpr bool kDiagRange = true;
#else
inline constexpr bool kDiagRange = false;
#endif

__host__ __device__ constexpr int64_t cdiv(int64_t a, int64_t b) { return (a + b - 1) / b; }

/// Workspace layout (byte offsets), from the shape alone.
struct Layout {
  int64_t NT = 0, slots = 0, BT = 0;
  int64_t segs = 1, seg_chunks = 0;  // the walk's segments per sequence and chunks per segment
  size_t A = 0, S = 0, Qg = 0, Kd = 0, El = 0, U = 0, P = 0, bytes = 0;
};

inline size_t align256(size_t x) { return (x + 255) / 256 * 256; }

/// The x and z extents of a per-chunk kernel's grid (chunk_cta): (NT, N) at fixed length, (slots, 1)
/// varlen — a CTA per slot, not one per chunk of every sequence's T.
struct ChunkGrid {
  int64_t x = 0, z = 0;
};
inline ChunkGrid chunk_grid(const Shape& s, int64_t NT, int64_t slots) {
  return s.cu_seqlens ? ChunkGrid{slots, 1} : ChunkGrid{NT, s.sequences()};
}

/// Columns of K per slice of the vector-gate prep kernel: 32 keeps its shared memory at 48 KB, four
/// CTAs per SM (PrepSmem).
inline constexpr int kPrepCols = 32;

/// Columns of K per slice of the scalar-gate prep kernel: 64 keeps its shared tiles at 52 KB.
__host__ __device__ constexpr int prep_scalar_cols(int KP) { return KP < 64 ? KP : 64; }

/// Shared memory of sm90_glr_fwd_prep (byte offsets), KS columns of K per slice.
template <int KS>
struct PrepSmem {
  static constexpr int LQ = ld_half(KS), LB = ld_float(KS), LX = ld_float(C), LAF = ld_float(C);
  static constexpr size_t qs = 0;                                 // q slice               [C, KS]    (E)
  static constexpr size_t ks = qs + align128(size_t(C) * LQ * 2);   // k slice               [C, KS]    (E)
  static constexpr size_t bs = ks + align128(size_t(C) * LQ * 2);   // g·log2e, then b       [C, KS]    (fp32)
  static constexpr size_t kr = bs + align128(size_t(C) * LB * 4);   // k_j 2^(b_r − b_j)     [3·16, KS] (E)
  static constexpr size_t qr = kr + align128(size_t(3) * 16 * LQ * 2);  // q_i 2^(b_i − b_r) [6·16, KS] (E)
  static constexpr size_t xt = qr + align128(size_t(6) * 16 * LQ * 2);  // x, transposed      [KS, C]    (fp32)
  static constexpr size_t yt = xt + align128(size_t(KS) * LX * 4);  // y, transposed         [KS, C]    (fp32)
  static constexpr size_t af = xt;                                // A after the last slice [C, C]    (fp32)
  static constexpr size_t end_xy = yt + align128(size_t(KS) * LX * 4), end_af = af + align128(size_t(C) * LAF * 4);
  static constexpr size_t bytes = end_xy > end_af ? end_xy : end_af;
};

/// Shared memory of sm90_glr_fwd_out (byte offsets): the fp32 sums of the MMAs take the place of
/// q ⊙ 2^b once every warp has read it (53 KB at K = 128, V tile 64: four CTAs per SM, not three).
template <int KP, int BV>
struct OutSmem {
  static constexpr int LQ = ld_half(KP), LV = ld_half(BV), LA = ld_half(C), LS = ld_half(BV), LO = ld_float(BV);
  static constexpr size_t qs_bytes = align128(size_t(C) * LQ * 2), of_bytes = align128(size_t(C) * LO * 4);
  static constexpr size_t qs = 0;                                               // q ⊙ 2^b   [C, KP] (E)
  static constexpr size_t of = 0;                                               // then o's MMA sums [C, BV] (fp32)
  static constexpr size_t vs = qs_bytes > of_bytes ? qs_bytes : of_bytes;       // v tile    [C, BV] (E)
  static constexpr size_t as = vs + align128(size_t(C) * LV * 2);               // A         [C, C]  (E)
  static constexpr size_t ss = as + align128(size_t(C) * LA * 2);               // S_c tile  [KP, BV] (E)
  static constexpr size_t bytes = ss + align128(size_t(KP) * LS * 2);
};

/// Chunks in flight in the walk: its per-chunk work is short, so one chunk ahead leaves it waiting on
/// the memory latency every step.
inline constexpr int kWalkStages = 4;

/// Rows of S per walk CTA: at most 64, so that K = 128 gives two CTAs per (V tile, head, sequence).
__host__ __device__ constexpr int walk_rows(int KP) { return KP < 64 ? KP : 64; }
/// K padded to the kernels' tiles (KP): 32, 64, 128 or 256.
__host__ __device__ constexpr int padded_k(int64_t K) { return K <= 32 ? 32 : K <= 64 ? 64 : K <= 128 ? 128 : 256; }

/// Walk CTAs resident per SM (its __launch_bounds__): three, their registers capped at 80, and no shared
/// state reserved (the state lives in registers): 73 KB a CTA at KT = BV = 64, so three fit the SM's
/// 228 KB with the driver's 1 KB each. Two until session 39 (switch GLR_WALK_3CTAS: the forward 4-12%
/// faster at five of the seven timer shapes, 3% slower at two; bench/results/glr-fwd-split.md).
inline constexpr int kWalkCtas = 3;

/// The walk's shared memory (offsets in bytes): kWalkStages buffers each of the Kd tile [C, KT],
/// the v tile [C, BV] and 2^(b_last) [KT]; then Pl, the segment's product of 2^(b_last) [KT] (kLocal).
template <int KT, int BV>
struct WalkSmem {
  static constexpr int LQ = ld_half(KT), LV = ld_half(BV);
  static constexpr size_t kd_bytes = align128(size_t(C) * LQ * 2), v_bytes = align128(size_t(C) * LV * 2),
                          el_bytes = align128(size_t(KT) * 4);
  static constexpr size_t kd = 0, vs = kd + kWalkStages * kd_bytes, el = vs + kWalkStages * v_bytes,
                          el_end = el + kWalkStages * el_bytes;
  static constexpr size_t p = el_end;  // Pl
  static constexpr size_t bytes = p + align128(size_t(KT) * 4);
};
// sm_90's 228 KB of shared memory an SM, less the driver's 1 KB a CTA: kWalkCtas of the largest tile.
static_assert(kWalkCtas * (WalkSmem<64, 64>::bytes + 1024) <= 228 * 1024, "kWalkCtas walk CTAs fit an SM");

/// The walk's segments (docs/glr.md, "The segmented walk"). The walk is a chain of dependent steps,
/// one per chunk, and a CTA per (K tile, V tile, head, sequence): with few heads and sequences and a
/// long T it runs on a fraction of the SMs for thousands of steps ((1, 65536, 16, 128): 64 CTAs of
/// V tile 64, 1024 steps). A segment of a sequence's chunks can walk from S = 0 at the same time as
/// the others (2a: its end state U and its decay product P), and the state entering segment g is
/// then h0 folded through (P, U) of segments 0..g−1 (S ← P ⊙ S + U, elementwise, 2b): the chain
/// becomes two walks of one segment each plus the fold, at twice the walk's arithmetic. Taken only
/// where that shortens the chain at least twofold and the chain is long: fixed length (a varlen
/// batch's lengths are on the device only), at least kMinSegWalk chunks (on the H200 the forward
/// lost 12% at 256 chunks, (2, 16384, 16, 128), and gained 12% at 1024, (1, 65536, 16, 128):
/// bench/results/glr-bwd-split.md, "The segmented walk on the H200"), at least kMinSegChunks chunks
/// per segment, at least 4 segments, as many as bring the walk's CTAs (V tiles of 64) to
/// kWalkCtasPerSm per SM.
/// The SM count the segments are planned for: a constant (the H200's), not the device's, so that
/// the workspace size and the bits of the result are the same on every device.
inline constexpr int64_t kMinSegWalk = 512, kMinSegChunks = 16, kWalkCtasPerSm = 4, kNominalSms = 132;
/// The backward's states pass walks plainly (Walk::plain): on the H200 its walk in segments cost
/// 2.7% at (1, 65536, 16, 128) where the forward's gained 12%.
enum class Walk { planned, plain };
inline int64_t walk_segments(const Shape& s, int64_t sms, Walk walk = Walk::planned) {
#ifdef GLR_WALK_SEGMENTS_OFF  // A/B timing builds only (bench/glr: glr_fwd_time_noseg, glr_bwd_time_noseg)
  walk = Walk::plain;
#endif
  if (walk == Walk::plain || sms < 1) return 1;
  const int64_t NT = cdiv(s.T < 0 ? 0 : s.T, C), N = s.sequences() < 1 ? 1 : s.sequences();
  if (s.cu_seqlens || NT < kMinSegWalk || s.K < 1 || s.V < 1 || s.H < 1) return 1;
  const int64_t walkers = cdiv(s.V, 64) * cdiv(s.K, walk_rows(padded_k(s.K))) * s.H * N;
  int64_t g = cdiv(kWalkCtasPerSm * sms, walkers);
  if (g > NT / kMinSegChunks) g = NT / kMinSegChunks;
  if (g > 65535 / N) g = 65535 / N;  // grid z = N · segments
  return g >= 4 ? g : 1;
}

inline Layout layout(const Shape& s, Walk walk = Walk::planned) {
  Layout l;
  const int64_t H = s.H < 1 ? 1 : s.H, K = s.K < 1 ? 1 : s.K, V = s.V < 1 ? 1 : s.V;
  const int64_t N = s.sequences() < 1 ? 1 : s.sequences();
  l.NT = cdiv(s.T < 0 ? 0 : s.T, C);
  l.slots = s.cu_seqlens ? l.NT + 2 * N : N * (l.NT + 1);
  l.BT = (s.cu_seqlens ? 1 : N) * (s.T < 0 ? 0 : s.T);
  const size_t es = 2;  // bf16 / f16
  l.A = 0;
  l.S = l.A + align256(size_t(l.slots) * H * C * C * es);
  l.Qg = l.S + align256(size_t(l.slots) * H * K * V * es);
  l.Kd = l.Qg + align256(size_t(l.BT) * H * K * es);
  l.El = l.Kd + align256(size_t(l.BT) * H * K * es);
  l.seg_chunks = cdiv(l.NT, walk_segments(s, kNominalSms, walk));
  l.segs = l.seg_chunks > 0 ? cdiv(l.NT, l.seg_chunks) : 1;  // every segment holds a chunk
  const size_t seg_states = l.segs > 1 ? size_t(N) * l.segs * H : 0;
  l.U = l.El + align256(size_t(l.slots) * H * K * 4);
  l.P = l.U + align256(seg_states * K * V * 4);  // U [N, segs, H, K, V] fp32
  l.bytes = l.P + align256(seg_states * K * 4);  // P [N, segs, H, K] fp32
  return l;
}

/// Sequence n's time range and its chunk 0's slot.
__device__ __forceinline__ int64_t first_slot(const int64_t* cu, int64_t n, int64_t T, int64_t NT, int64_t* bos,
                                              int64_t* eos) {
  sequence_range(cu, n, T, bos, eos);
  return cu ? 2 * n + *bos / C : n * (NT + 1);
}

/// The chunk that CTA (x, ·, z) of a per-chunk kernel (prep, out, dqk, dv) owns: its sequence's time
/// range in [*bos, *eos), the chunk's index in *chunk; returns its slot. The grid is chunk_grid's:
///   - fixed length, (NT, ·, N): sequence z, chunk x;
///   - varlen, (slots, ·, 1), N >= 1: x is the slot itself. The sequence is the last n whose chunk 0's
///     slot f(n) = 2n + ⌊bos_n/C⌋ is <= x, and the chunk is x − f(n); a slot past its sequence's chunks
///     (at most three between two sequences) owns none (chunk·C >= eos − bos: the caller returns).
/// f increases with n (cu non-decreasing, clamped as sequence_range clamps it), so each warp finds n by
/// itself: 32 values of f a round, ⌈log32 N⌉ rounds, the same n in every warp. Where cu breaks its
/// contract the search still ends at an n with f(n) <= x (or owns none), so no two CTAs own one
/// (n, chunk). NOTES: one first_slot call for both forms, after the search — with a call in each
/// branch the vector prep spilled 48 B at its 64-register cap (nvcc 13, -Xptxas -v).
/// Why not (NT, ·, N) for varlen as well: N·NT CTAs of which all but about NT + N return at once — at
/// 16 sequences 94% of them, each holding an SM's slot while it reads cu (bench/results/glr-bwd-split.md,
/// "Session 47").
__device__ __forceinline__ int64_t chunk_cta(const int64_t* cu, int64_t x, int64_t z, int64_t N, int64_t T,
                                             int64_t NT, int64_t* chunk, int64_t* bos, int64_t* eos) {
  int64_t n = z;
  *chunk = x;
  if (cu) {
    auto f = [&](int64_t m) {  // chunk 0's slot of sequence m
      const int64_t b = cu[m];
      return 2 * m + (b < 0 ? 0 : (b > T ? T : b)) / C;
    };
    int64_t lo = 0, hi = N;  // the sequence is in [lo, hi); f(lo) <= x unless no sequence's is (lo = 0)
    const int lane = int(threadIdx.x % 32);
    while (hi - lo > 1) {  // uniform per warp
      const int64_t step = (hi - lo + 31) / 32, m = lo + step * lane;
      const unsigned le = __ballot_sync(0xffffffffu, m < hi && f(m) <= x);
      lo += step * (31 - __clz(int(le | 1u)));  // the last lane whose f is <= x; lane 0 (m = lo) if none
      hi = lo + step < hi ? lo + step : hi;
    }
    n = lo;
    const int64_t f0 = f(lo);
    *chunk = f0 <= x ? x - f0 : NT + 1;  // before sequence 0's first chunk: none (past any sequence's end)
  }
  return first_slot(cu, n, T, NT, bos, eos) + *chunk;
}

/// 2^(b_i − b_r) for the later factor of an off-diagonal block (i > r, r the reference row):
/// 0 where b_i and b_r are both −Inf. A −Inf gate at a step t <= r makes every later b −Inf, and
/// −Inf − (−Inf) is NaN, yet every pair (i, j) with j < t that this factor meets decays to exactly
/// 0 through step t (the other factor, 2^(b_r − b_j), is 0 there): the select keeps those pairs 0, as
/// the per-pair 2^(b_i − b_j) of the FFMA kernels does. Pairs with b_j = −Inf still meet a NaN
/// 2^(b_r − b_j) (the chunk-local cumsum cannot say how far apart two steps past a −Inf are), and a
/// NaN b (a NaN gate) still gives NaN.
__device__ __forceinline__ float decay_past_ref(float bi, float br) {
  const float neg_inf = __int_as_float(0xff800000);
  return (bi == neg_inf && br == neg_inf) ? 0.f : exp2f(bi - br);
}

/// One 16-byte cp.async (global -> shared), reading `bytes` (0..16) and zero-filling the rest.
__device__ __forceinline__ void cp_async16(void* dst, const void* src, int bytes) {
  const unsigned d = static_cast<unsigned>(__cvta_generic_to_shared(dst));
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(d), "l"(src), "r"(bytes) : "memory");
}
__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::: "memory"); }
template <int kPending> __device__ __forceinline__ void cp_async_wait() {
  asm volatile("cp.async.wait_group %0;\n" ::"n"(kPending) : "memory");
}

/// Warp-level tensor-core pieces with documented fragment layouts (PTX ISA, "mma.m16n8k16"): the
/// walk keeps its state in accumulator registers across chunks, which WMMA's opaque layout does not
/// allow (a per-row decay needs to know each register's row). For m16n8k16 with lane = 4·g + t:
/// A (16×16, row-major) a0 = A[g][2t..2t+1], a1 = A[g+8][2t..], a2 = A[g][2t+8..], a3 = A[g+8][2t+8..];
/// B (16×8) b0 = B[2t..2t+1][g], b1 = B[2t+8..2t+9][g]; C/D c0, c1 = C[g][2t..2t+1], c2, c3 = C[g+8][2t..].
/// ldmatrix .trans hands lane the elements [g][2t..2t+1] of each addressed 8×8 matrix, transposed.
__device__ __forceinline__ void ldsm_x4_trans(uint32_t (&r)[4], const void* p) {
  const unsigned a = static_cast<unsigned>(__cvta_generic_to_shared(p));
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0,%1,%2,%3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(a));
}
__device__ __forceinline__ void ldsm_x2_trans(uint32_t (&r)[2], const void* p) {
  const unsigned a = static_cast<unsigned>(__cvta_generic_to_shared(p));
  asm volatile("ldmatrix.sync.aligned.m8n8.x2.trans.shared.b16 {%0,%1}, [%2];\n" : "=r"(r[0]), "=r"(r[1]) : "r"(a));
}
/// d += a·b, fp32 accumulation (bf16 or f16 operands, as E).
template <class E>
__device__ __forceinline__ void mma16816(float (&d)[4], const uint32_t (&a)[4], const uint32_t (&b)[2]) {
  if constexpr (std::is_same_v<E, __nv_bfloat16>)
    asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
                 "{%0,%1,%2,%3};\n"
                 : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
  else
    asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
                 "{%0,%1,%2,%3};\n"
                 : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
}

/// Starts loading rows x cols elements of T from global (row stride `stride` elements) into shared
/// (row stride ld, 16-byte aligned rows), zero outside [0, live_rows) x [0, live_cols): 16-byte
/// cp.async copies where src and stride are 16-byte aligned (the part of a copy past live_cols is
/// zero-filled, never read), else element copies through registers (complete on return). The
/// caller commits, waits and synchronizes. Out-of-range copies read nothing (src = the tile's base).
/// kNoHoist: the thread's offsets are computed at each call, not hoisted out of the caller's loop (an
/// empty asm hides threadIdx.x from the optimizer): for the chunk loops of the walk and dstate, where the
/// hoisted 64-bit offsets of the prefetch spilled (ptxas, nvcc 13: the 80-register walk 40 B and dstate
/// up to 96 B, the two-CTA walk of sessions 34-38 68 B; none with it): bwd_split::kDstateNoHoist.
template <class T>
__device__ __forceinline__ bool copies_16b(const T* src, int64_t stride) {  // every row starts 16-byte aligned
  return reinterpret_cast<uintptr_t>(src) % 16 == 0 && (stride * int64_t(sizeof(T))) % 16 == 0;
}
template <int cols, bool kNoHoist = false, class T>
__device__ __forceinline__ void async_tile(T* dst, int ld, const T* src, int64_t stride, int rows, int live_rows,
                                           int live_cols) {
  constexpr int per = 16 / int(sizeof(T));
  static_assert(cols % per == 0, "a shared row is a whole number of 16-byte copies");
  const bool vec = copies_16b(src, stride);
  int tid = threadIdx.x;
  if constexpr (kNoHoist) asm volatile("" : "+r"(tid));
  if (vec && live_rows == rows && live_cols == cols) {  // a whole tile: no copy is partial or empty
    constexpr int per_row = cols / per;
    for (int e = tid; e < rows * per_row; e += kThreads) {
      const int i = e / per_row, c = (e % per_row) * per;
      cp_async16(dst + i * ld + c, src + i * stride + c, 16);
    }
    return;
  }
  if (vec) {
    constexpr int per_row = cols / per;
    for (int e = tid; e < rows * per_row; e += kThreads) {
      const int i = e / per_row, c = (e % per_row) * per;
      const int live = (i < live_rows && c < live_cols) ? (live_cols - c < per ? live_cols - c : per) : 0;
      cp_async16(dst + i * ld + c, live ? static_cast<const void*>(src + i * stride + c) : src,
                 live * int(sizeof(T)));
    }
    return;
  }
#pragma unroll 2  // by four, prep and the walk spill (sm90_glr_fwd_prep's notes)
  for (int e = tid; e < rows * cols; e += kThreads) {
    const int i = e / cols, c = e % cols;
    T x;
    if constexpr (std::is_same_v<T, float>) x = 0.f;
    else x = from_f<T>(0.f);
    if (i < live_rows && c < live_cols) x = src[i * stride + c];
    dst[i * ld + c] = x;
  }
}

/// Stores x's first min(live, 4) elements, rounded to E (2 bytes), at dst: one 8-byte store when
/// `vec` (dst 8-byte aligned) and all four are live, else element by element.
template <class E>
__device__ __forceinline__ void store4(E* dst, float4 x, int live, bool vec) {
  static_assert(sizeof(E) == 2, "four elements of E are one 8-byte store");
  if (vec && live >= 4) {
    alignas(8) E y[4] = {from_f<E>(x.x), from_f<E>(x.y), from_f<E>(x.z), from_f<E>(x.w)};
    *reinterpret_cast<uint2*>(dst) = *reinterpret_cast<const uint2*>(y);
    return;
  }
  const float xs[4] = {x.x, x.y, x.z, x.w};
#pragma unroll
  for (int t = 0; t < 4; ++t)
    if (t < live) dst[t] = from_f<E>(xs[t]);
}

/// Two adjacent elements as one 4-byte store (dst 4-byte aligned).
template <class E>
__device__ __forceinline__ void store_pair(E* dst, E a, E b) {
  alignas(4) E two[2] = {a, b};
  *reinterpret_cast<uint32_t*>(dst) = *reinterpret_cast<const uint32_t*>(two);
}

/// store4 for two elements already rounded: the first min(live, 2) of a, b at dst, one 4-byte store
/// when `vec` (dst 4-byte aligned) and both are live, else element by element.
template <class E>
__device__ __forceinline__ void store2(E* dst, E a, E b, int live, bool vec) {
  if (vec && live >= 2) {
    store_pair(dst, a, b);
    return;
  }
  if (live > 0) dst[0] = a;
  if (live > 1) dst[1] = b;
}

/// Bits 0-15 of x at the even bits 0, 2, ..., 30 (the prep's flags of even columns from one ballot).
__device__ __forceinline__ unsigned spread_even16(unsigned x) {
  x &= 0xffffu;
  x = (x | (x << 8)) & 0x00ff00ffu;
  x = (x | (x << 4)) & 0x0f0f0f0fu;
  x = (x | (x << 2)) & 0x33333333u;
  return (x | (x << 1)) & 0x55555555u;
}

/// Stores a chunk's rows [0, nc) x columns [0, K) of f(i, kk) (rounded to E) to dst (row stride
/// `stride`), eight columns per thread, 16-byte stores where the rows allow it.
template <int KP, class E, class F>
__device__ __forceinline__ void store_rows(E* dst, int64_t stride, int nc, int K, F f) {
  const bool vec = K == KP && reinterpret_cast<uintptr_t>(dst) % 16 == 0 && (stride * 2) % 16 == 0;
  for (int e = threadIdx.x; e < C * (KP / 8); e += kThreads) {
    const int i = e / (KP / 8), k0 = (e % (KP / 8)) * 8;
    if (i >= nc) continue;
    if (vec) {
      alignas(16) E x[8];
#pragma unroll
      for (int t = 0; t < 8; ++t) x[t] = from_f<E>(f(i, k0 + t));
      *reinterpret_cast<uint4*>(dst + i * stride + k0) = *reinterpret_cast<const uint4*>(x);
    } else {
      for (int t = 0; t < 8 && k0 + t < K; ++t) dst[i * stride + k0 + t] = from_f<E>(f(i, k0 + t));
    }
  }
}

/// The prep's slice of q, k (E) and g·log2e (fp32) into shared memory, then b = Σ_{i' <= i} g·log2e down
/// each column, in order (rows past the chunk add 0, columns past the slice's kw hold 0). q, k and g
/// point at the slice's first element, rows `stride` apart. Every thread of the CTA; ends at a barrier.
template <int KS, class E>
__device__ __forceinline__ void load_prep_slice(E* qs, E* ks, float* bs, const E* q, const E* k, const float* g,
                                                int64_t stride, int nc, int kw) {
  using L = PrepSmem<KS>;
  async_tile<KS>(qs, L::LQ, q, stride, C, nc, kw);
  async_tile<KS>(ks, L::LQ, k, stride, C, nc, kw);
  async_tile<KS>(bs, L::LB, g, stride, C, nc, kw);
  cp_async_commit();
  cp_async_wait<0>();
  __syncthreads();
  const int tid = threadIdx.x;
  if (tid < KS) {  // b, down each column, in order
    float a = 0.f;
#pragma unroll 8
    for (int i = 0; i < C; ++i) {
      a += bs[i * L::LB + tid] * kLog2e;
      bs[i * L::LB + tid] = a;
    }
  }
  __syncthreads();
}

/// GLR_DIAG_RANGE, the prep's cold path: the live entries (j <= i < nc) of A's four diagonal blocks in
/// `af` (fp32 sums) that are not finite, recomputed in the per-pair form q_i·(k_j·2^(b_i − b_j)) — the
/// terms and order of the prep's per-pair branch (each half of a slice's columns summed over the slices,
/// then first + second). The factored form x_i·y_j equals the per-pair term up to rounding and only
/// y = k_j 2^(b_ρ − b_j) can leave fp32's range (x <= q; kr, qr, Kd carry exponents <= 0), so a finite
/// entry is kept as it is and a non-finite one is either an overflowed y (per pair: finite where the
/// reference is) or an input that is not finite (per pair: the reference's class). q, k and g point at the
/// chunk's first row (its column 0), rows `stride` apart; reloads them slice by slice into qs, ks and bs
/// (free after the K loop). Every thread of the CTA (the caller's vote is uniform); ends at a barrier.
template <int KS, class E>
__device__ __forceinline__ void redo_diagonal_per_pair(E* qs, E* ks, float* bs, float* af, const E* q, const E* k,
                                                        const float* g, int64_t stride, int64_t K, int nc) {
  using L = PrepSmem<KS>;
  constexpr int KH = KS / 2;
  const int r = threadIdx.x / 16, c = threadIdx.x % 16;  // entry (16·blk + r, 16·blk + c) of each block blk
  static_assert(kThreads == 256, "a thread per (row, column) of a 16-block");
  bool live[4];
  float acc[4][2];
#pragma unroll
  for (int blk = 0; blk < 4; ++blk) {
    const int i = 16 * blk + r, j = 16 * blk + c;
    live[blk] = j <= i && i < nc && !isfinite(af[i * L::LAF + j]);
    acc[blk][0] = acc[blk][1] = 0.f;
  }
  for (int64_t k0 = 0; k0 < K; k0 += KS) {
    const int kw = int(K - k0 < KS ? K - k0 : KS);
    __syncthreads();  // the previous slice's (or the K loop's last) shared tiles are no longer read
    load_prep_slice<KS>(qs, ks, bs, q + k0, k + k0, g + k0, stride, nc, kw);
#pragma unroll
    for (int blk = 0; blk < 4; ++blk) {
      if (!live[blk]) continue;
      const int i = 16 * blk + r, j = 16 * blk + c;
#pragma unroll
      for (int half = 0; half < 2; ++half)
#pragma unroll 1
        for (int kk = KH * half; kk < KH * half + KH; ++kk)
          acc[blk][half] = diag_decay::add_term(acc[blk][half], to_f(qs[i * L::LQ + kk]), to_f(ks[j * L::LQ + kk]),
                                                bs[i * L::LB + kk], bs[j * L::LB + kk], false);
    }
  }
#pragma unroll
  for (int blk = 0; blk < 4; ++blk)
    if (live[blk]) af[(16 * blk + r) * L::LAF + 16 * blk + c] = acc[blk][0] + acc[blk][1];
  __syncthreads();
}

}  // namespace fwd_split

/// 1a. Everything of one chunk that the state does not touch, vector gate; grid (NT, H, N) (varlen: (slots, H,
/// 1), chunk_grid). K runs in
/// slices of KS = 32 columns (48 KB of shared memory, four CTAs per SM); per slice:
///   - b = Σ_{i' <= i} g·log2e down each column, in order, in shared memory (rows past the chunk's
///     end add 0, so they hold b_last; columns past K hold 0);
///   - one pass over the slice, thread = (block ib = warp/2, rows 8·(warp%2) .. +7 of it, column
///     lane): q ⊙ 2^b and k ⊙ 2^(b_last − b) to the workspace; the off-diagonal blocks' operands
///     q_i 2^(b_i − b_r) and k_j 2^(b_r − b_j) (rounded; r = the last row of block jb, so both
///     exponents are <= 0); the diagonal block's fp32 factors x_i = q_i 2^(b_i − b_ρ) and
///     y_j = k_j 2^(b_ρ − b_j), ρ = the row before block ib (b_ρ = 0 for block 0), where every
///     |b_i − b_ρ| of the block's column is <= diag_decay::kSpan (its flag 1), else x = q and y = k (flag 0);
///   - A's off-diagonal blocks as WMMAs of those operands (warps 0-5, one block pair each, the
///     accumulators in registers across slices); the diagonal blocks on FFMA, a warp = block warp/2
///     and half the slice's columns, a thread = a 4x2 tile: x_i·y_j where the flag is 1, else
///     x_i·(y_j·2^(b_i − b_j)), the per-pair form of the fused kernel.
/// After the last slice the two halves' partial sums are added (first + second); under GLR_DIAG_RANGE a
/// CTA whose live diagonal entries are not all finite redoes those per pair (redo_diagonal_per_pair: the
/// vote rides on the barrier after the halves, the cold path after it); then A (rounded, j > i selected
/// to 0) to the workspace.
/// NOTES: the factored diagonal is what makes this kernel fast: the per-pair form costs an exp2f
/// per (i, j, k), 16x the factors' one per (i, k), and the old kernel spent most of its time there.
/// Why it is safe (nonfinite classes, range, accuracy): diag_decay.hpp. Slices of 32 columns keep
/// four CTAs per SM within 64 registers; the diagonal's two halves keep its flag uniform per warp.
/// The flags are a ballot of the slice pass's warp (bit kk: column kk factored), which the diagonal
/// pass's warp is: a half whose 16 columns all take the factored form (the common case) runs its
/// steps unrolled by four without a per-column test (the same FFMAs in the same order). ptxas keeps
/// this kernel at 64 registers without a spill only with async_tile's element-copy loop unrolled by
/// two (by four: 64 B spilled here, 16 B in the walk; nvcc 13, -Xptxas -v).
template <class E, int KS>
__global__ void __launch_bounds__(fwd_split::kThreads, 4)
    sm90_glr_fwd_prep(const E* __restrict__ q, const E* __restrict__ k, const float* __restrict__ g,
                      E* __restrict__ A, E* __restrict__ Qg, E* __restrict__ Kd, float* __restrict__ El,
                      const int64_t* __restrict__ cu, int64_t T, int64_t H, int64_t K, int64_t NT, int64_t N) {
  using namespace fwd_split;
  namespace wmma = nvcuda::wmma;
  using FragA = wmma::fragment<wmma::matrix_a, 16, 16, 16, E, wmma::row_major>;
  using FragBT = wmma::fragment<wmma::matrix_b, 16, 16, 16, E, wmma::col_major>;
  using FragC = wmma::fragment<wmma::accumulator, 16, 16, 16, float>;
  using L = PrepSmem<KS>;
  static_assert(KS == 32 && kThreads == 256, "the slice pass maps 4 blocks x 2 half-blocks x 32 columns to 256 threads");
  constexpr int LQ = L::LQ, LB = L::LB, LX = L::LX, LAF = L::LAF, KH = KS / 2;
  extern __shared__ __align__(128) unsigned char smem_raw[];
  E* qs = reinterpret_cast<E*>(smem_raw + L::qs);
  E* ks = reinterpret_cast<E*>(smem_raw + L::ks);
  float* bs = reinterpret_cast<float*>(smem_raw + L::bs);
  E* kr = reinterpret_cast<E*>(smem_raw + L::kr);
  E* qr = reinterpret_cast<E*>(smem_raw + L::qr);
  float* xt = reinterpret_cast<float*>(smem_raw + L::xt);
  float* yt = reinterpret_cast<float*>(smem_raw + L::yt);
  float* af = reinterpret_cast<float*>(smem_raw + L::af);

  int64_t bos, eos, chunk;
  const int64_t slot = chunk_cta(cu, blockIdx.x, blockIdx.z, N, T, NT, &chunk, &bos, &eos);
  const int64_t c0 = bos + chunk * C, h = blockIdx.y;
  if (c0 >= eos) return;
  const int nc = int(eos - c0 < C ? eos - c0 : C);
  const int tid = threadIdx.x, warp = tid / 32, lane = tid % 32;
  const int ib = warp >> 1;                                                  // this warp's 16-block
  const int i0 = 16 * ib + 8 * (warp & 1);                                   // slice pass: rows i0 .. i0 + 7
  const int ti = lane >> 3, tj = lane & 7, kh = warp & 1;                   // diagonal: 4x2 tile, half of the slice
  const int64_t HK = H * K;

  // A sums over K: its partial sums stay in registers across slices (the off-diagonal pair's WMMA
  // accumulator, this thread's 4x2 diagonal tile over its half of each slice).
  float d[4][2];
#pragma unroll
  for (int a = 0; a < 4; ++a) d[a][0] = d[a][1] = 0.f;
  FragC acc;
  wmma::fill_fragment(acc, 0.f);
  unsigned factored = 0;  // the slice's columns of block ib that take the factored form (bit kk)
  for (int64_t k0 = 0; k0 < K; k0 += KS) {  // uniform per CTA
    const int kw = int(K - k0 < KS ? K - k0 : KS);
    if (k0 > 0) __syncthreads();  // the previous slice's shared tiles are no longer read
    load_prep_slice<KS>(qs, ks, bs, q + (c0 * H + h) * K + k0, k + (c0 * H + h) * K + k0, g + (c0 * H + h) * K + k0,
                        HK, nc, kw);
    if (tid < kw) El[(slot * H + h) * K + k0 + tid] = exp2f(bs[(C - 1) * LB + tid]);
    {  // the slice pass: columns kk0, kk0 + 1 (kk0 = 2·(lane % 16)), rows r0 .. r0 + 3 (r0 = i0 + 4·(lane / 16))
      // NOTES: b_ρ and b_last are read from shared memory where they are used, and the k side of the
      // rows runs before their q side, each its own loop: with both in one loop body and b_ρ, b_last
      // in registers, prep spilled 64-128 B at its 64-register cap (four CTAs per SM; nvcc 13).
      const int kk0 = 2 * (lane & 15), r0 = i0 + 4 * (lane >> 4);
      const int ref = (16 * ib - 1) * LB + kk0;  // b_ρ at bs[ref] (read only when ib > 0)
      bool ok0 = true, ok1 = true;  // the block's columns kk0, kk0 + 1 take the factored form (diag_decay.hpp)
      {
        const float2 br = ib ? *reinterpret_cast<const float2*>(bs + ref) : make_float2(0.f, 0.f);
#pragma unroll
        for (int r = 0; r < 16; ++r) {
          const float2 b = *reinterpret_cast<const float2*>(bs + (16 * ib + r) * LB + kk0);
          ok0 = ok0 & diag_decay::within_span(b.x, br.x);
          ok1 = ok1 & diag_decay::within_span(b.y, br.y);
        }
      }
      // Both warps of block ib: its columns' flags, bit kk (lanes 16-31 repeat lanes 0-15's columns).
      factored = spread_even16(__ballot_sync(0xffffffffu, ok0)) | (spread_even16(__ballot_sync(0xffffffffu, ok1)) << 1);
      // The pair's live columns (0-2); both live at an even element offset ((c0·H + h + i·H)·K + k0 +
      // kk0: K even) of 4-byte aligned Qg and Kd store as one word.
      const int live = kw - kk0 < 0 ? 0 : kw - kk0 < 2 ? kw - kk0 : 2;
      const bool vec = K % 2 == 0 && ((reinterpret_cast<uintptr_t>(Qg) | reinterpret_cast<uintptr_t>(Kd)) & 3) == 0;
      const int64_t row0 = (c0 * H + h) * K + k0 + kk0;  // row i of Qg and Kd at row0 + i·HK
#pragma unroll 1
      for (int r = 0; r < 4; ++r) {  // the k side: k ⊙ 2^(b_last − b), kr, y
        const int i = r0 + r;
        const float2 bi = *reinterpret_cast<const float2*>(bs + i * LB + kk0);
        const float k0v = to_f(ks[i * LQ + kk0]), k1v = to_f(ks[i * LQ + kk0 + 1]);
        if (i < nc) {
          const float2 bl = *reinterpret_cast<const float2*>(bs + (C - 1) * LB + kk0);
          const E d0 = from_f<E>(k0v * exp2f(bl.x - bi.x)), d1 = from_f<E>(k1v * exp2f(bl.y - bi.y));
          store2(Kd + row0 + i * HK, d0, d1, live, vec);
        }
        if (ib < 3) {  // kr[jb = ib]
          const float2 br = *reinterpret_cast<const float2*>(bs + (16 * ib + 15) * LB + kk0);
          store_pair(kr + i * LQ + kk0, from_f<E>(k0v * exp2f(br.x - bi.x)), from_f<E>(k1v * exp2f(br.y - bi.y)));
        }
        const float2 br = ib ? *reinterpret_cast<const float2*>(bs + ref) : make_float2(0.f, 0.f);
        yt[kk0 * LX + i] = diag_decay::y_of(k0v, bi.x, br.x, ok0);
        yt[(kk0 + 1) * LX + i] = diag_decay::y_of(k1v, bi.y, br.y, ok1);
      }
#pragma unroll 1
      for (int r = 0; r < 4; ++r) {  // the q side: q ⊙ 2^b, qr, x
        const int i = r0 + r;
        const float2 bi = *reinterpret_cast<const float2*>(bs + i * LB + kk0);
        const float q0 = to_f(qs[i * LQ + kk0]), q1 = to_f(qs[i * LQ + kk0 + 1]);
        const float eq0 = exp2f(bi.x), eq1 = exp2f(bi.y);
        if (i < nc) {
          const E g0 = from_f<E>(q0 * eq0), g1 = from_f<E>(q1 * eq1);
          store2(Qg + row0 + i * HK, g0, g1, live, vec);
        }
        float x0 = q0 * eq0, x1 = q1 * eq1;  // after the loop: q_i 2^(b_i − b_ρ), ρ = 16·ib − 1
        for (int jb = 0; jb < ib; ++jb) {  // qr[pair (ib, jb)][i] = q_i 2^(b_i − b_r)
          const float2 br = *reinterpret_cast<const float2*>(bs + (16 * jb + 15) * LB + kk0);
          x0 = q0 * decay_past_ref(bi.x, br.x);
          x1 = q1 * decay_past_ref(bi.y, br.y);
          store_pair(qr + ((ib * (ib - 1) / 2 + jb) * 16 + i - 16 * ib) * LQ + kk0, from_f<E>(x0), from_f<E>(x1));
        }
        xt[kk0 * LX + i] = ok0 ? x0 : q0;  // diag_decay::x_of, its exp2f shared with qr
        xt[(kk0 + 1) * LX + i] = ok1 ? x1 : q1;
      }
    }
    __syncthreads();
    if (warp < 6) {  // off-diagonal block pair warp: (ib, jb), qr[warp] · kr[jb]ᵀ
      int pib, pjb;
      fwd_tc::pair_of(warp, &pib, &pjb);
#pragma unroll
      for (int kc = 0; kc < KS; kc += 16) {
        FragA fa;
        FragBT fb;
        wmma_smem::load(fa, qr + (warp * 16) * LQ + kc, LQ);
        wmma_smem::load(fb, kr + (pjb * 16) * LQ + kc, LQ);
        wmma::mma_sync(acc, fa, fb, acc);
      }
    }
    {  // diagonal block ib: rows 16ib + 4ti + a, columns 16ib + 2tj + c, slice columns [KH·kh, KH·kh + KH)
      const int ri = 16 * ib + 4 * ti, rj = 16 * ib + 2 * tj;
      const unsigned half = (factored >> (KH * kh)) & ((1u << KH) - 1u);  // this warp's columns' flags
      if (half == (1u << KH) - 1u) {  // every column factored (the common case): the same terms, unrolled
#pragma unroll 4
        for (int u = 0; u < KH; ++u) {
          const int kk = KH * kh + u;
          const float4 x4 = *reinterpret_cast<const float4*>(xt + kk * LX + ri);
          const float2 y2 = *reinterpret_cast<const float2*>(yt + kk * LX + rj);
          const float x[4] = {x4.x, x4.y, x4.z, x4.w}, y[2] = {y2.x, y2.y};
#pragma unroll
          for (int a = 0; a < 4; ++a)
#pragma unroll
            for (int c = 0; c < 2; ++c) d[a][c] = diag_decay::add_term(d[a][c], x[a], y[c], 0.f, 0.f, true);
        }
      } else {
#pragma unroll 1
        for (int u = 0; u < KH; ++u) {
          const int kk = KH * kh + u;
          const float4 x4 = *reinterpret_cast<const float4*>(xt + kk * LX + ri);
          const float2 y2 = *reinterpret_cast<const float2*>(yt + kk * LX + rj);
          const float x[4] = {x4.x, x4.y, x4.z, x4.w}, y[2] = {y2.x, y2.y};
          if ((half >> u) & 1u) {  // uniform per warp
#pragma unroll
            for (int a = 0; a < 4; ++a)
#pragma unroll
              for (int c = 0; c < 2; ++c) d[a][c] = diag_decay::add_term(d[a][c], x[a], y[c], 0.f, 0.f, true);
          } else {  // x = q, y = k: the per-pair decay (j > i is computed, never read)
#pragma unroll
            for (int a = 0; a < 4; ++a) {
              const float bi = bs[(ri + a) * LB + kk];
#pragma unroll
              for (int c = 0; c < 2; ++c)
                d[a][c] = diag_decay::add_term(d[a][c], x[a], y[c], bi, bs[(rj + c) * LB + kk], false);
            }
          }
        }
      }
    }
  }

  __syncthreads();  // xt, yt are read no more: af takes their place
  if (warp < 6) {
    int pib, pjb;
    fwd_tc::pair_of(warp, &pib, &pjb);
    wmma_smem::store(af + (16 * pib) * LAF + 16 * pjb, acc, LAF);
  }
  bool redo = false;  // GLR_DIAG_RANGE: a live diagonal entry of A is not finite (the CTA's vote)
  for (int part = 0; part < 2; ++part) {  // the diagonal blocks: the two halves' partial sums, in order
    bool nonfinite = false;
    if (kh == part) {
#pragma unroll
      for (int a = 0; a < 4; ++a)
#pragma unroll
        for (int c = 0; c < 2; ++c) {
          float& s = af[(16 * ib + 4 * ti + a) * LAF + 16 * ib + 2 * tj + c];
          s = part ? s + d[a][c] : d[a][c];
          if constexpr (kDiagRange)
            nonfinite = nonfinite | (2 * tj + c <= 4 * ti + a && 16 * ib + 4 * ti + a < nc && !isfinite(s));
        }
    }
    if (kDiagRange && part == 1)
      redo = __syncthreads_or(nonfinite);
    else
      __syncthreads();
  }
  if constexpr (kDiagRange)
    if (redo) redo_diagonal_per_pair<KS>(qs, ks, bs, af, q + (c0 * H + h) * K, k + (c0 * H + h) * K,
                                         g + (c0 * H + h) * K, HK, K, nc);
  E* Aout = A + (slot * H + h) * C * C;
  for (int e = tid; e < C * C / 8; e += kThreads) {  // select: j > i is never read
    const int i = e / (C / 8), j0 = (e % (C / 8)) * 8;
    alignas(16) E x[8];
#pragma unroll
    for (int t = 0; t < 8; ++t) {
      const int j = j0 + t;
      x[t] = from_f<E>(j <= i ? af[i * LAF + j] : 0.f);
    }
    *reinterpret_cast<uint4*>(Aout + i * C + j0) = *reinterpret_cast<const uint4*>(x);
  }
}

/// 1b. The same for the scalar gate; grid (NT, H, N) (varlen: chunk_grid), K in slices of KS = min(KP, 64) columns. b =
/// Σ g·log2e down the chunk (one column, broadcast over the slice); q·kᵀ on the lower 16-blocks
/// (WMMA, the accumulators in registers across slices), then A_ij = (q·kᵀ)_ij 2^(b_i − b_j)
/// (rounded, j > i selected to 0); q ⊙ 2^b, k ⊙ 2^(b_last − b) and 2^(b_last) to the workspace.
template <class E, int KS>
__global__ void __launch_bounds__(fwd_split::kThreads, 3)
    sm90_glr_fwd_prep_scalar(const E* __restrict__ q, const E* __restrict__ k, const float* __restrict__ g,
                             E* __restrict__ A, E* __restrict__ Qg, E* __restrict__ Kd, float* __restrict__ El,
                             const int64_t* __restrict__ cu, int64_t T, int64_t H, int64_t K, int64_t NT,
                             int64_t N) {
  using namespace fwd_split;
  namespace wmma = nvcuda::wmma;
  using FragA = wmma::fragment<wmma::matrix_a, 16, 16, 16, E, wmma::row_major>;
  using FragBT = wmma::fragment<wmma::matrix_b, 16, 16, 16, E, wmma::col_major>;
  using FragC = wmma::fragment<wmma::accumulator, 16, 16, 16, float>;
  constexpr int LQ = ld_half(KS), LB = ld_float(KS), LAF = ld_float(C);
  constexpr size_t o_qs = 0, o_ks = o_qs + align128(size_t(C) * LQ * 2), o_bs = o_ks + align128(size_t(C) * LQ * 2),
                   o_af = o_bs + align128(size_t(C) * LB * 4);
  extern __shared__ __align__(128) unsigned char smem_raw[];
  E* qs = reinterpret_cast<E*>(smem_raw + o_qs);
  E* ks = reinterpret_cast<E*>(smem_raw + o_ks);
  float* bs = reinterpret_cast<float*>(smem_raw + o_bs);
  float* af = reinterpret_cast<float*>(smem_raw + o_af);

  int64_t bos, eos, chunk;
  const int64_t slot = chunk_cta(cu, blockIdx.x, blockIdx.z, N, T, NT, &chunk, &bos, &eos);
  const int64_t c0 = bos + chunk * C, h = blockIdx.y;
  if (c0 >= eos) return;
  const int nc = int(eos - c0 < C ? eos - c0 : C);
  const int tid = threadIdx.x, warp = tid / 32;

  FragC acc[2];  // lower block pairs warp and warp + 8
  wmma::fill_fragment(acc[0], 0.f);
  wmma::fill_fragment(acc[1], 0.f);
  for (int64_t k0 = 0; k0 < K; k0 += KS) {  // uniform per CTA
    const int kw = int(K - k0 < KS ? K - k0 : KS);
    if (k0 > 0) __syncthreads();  // the previous slice's shared tiles are no longer read
    async_tile<KS>(qs, LQ, q + (c0 * H + h) * K + k0, H * K, C, nc, kw);
    async_tile<KS>(ks, LQ, k + (c0 * H + h) * K + k0, H * K, C, nc, kw);
    if (k0 == 0)
      for (int i = tid; i < C; i += kThreads) bs[i * LB] = i < nc ? g[(c0 + i) * H + h] : 0.f;
    cp_async_commit();
    cp_async_wait<0>();
    __syncthreads();
    if (k0 == 0) {
      if (tid == 0) {  // b, down the chunk, in order
        float a = 0.f;
#pragma unroll 8
        for (int i = 0; i < C; ++i) {
          a += bs[i * LB] * kLog2e;
          bs[i * LB] = a;
        }
      }
      __syncthreads();
      for (int e = tid; e < C * KS; e += kThreads) {
        const int i = e / KS, kk = e % KS;
        if (kk) bs[i * LB + kk] = bs[i * LB];
      }
      __syncthreads();
    }
    for (int p = warp, t = 0; p < 10; p += kWarps, ++t) {  // lower blocks (ib >= jb)
      int ib = 0, jb = p;
      while (jb > ib) jb -= ++ib;
#pragma unroll
      for (int kc = 0; kc < KS; kc += 16) {
        FragA fa;
        FragBT fb;
        wmma_smem::load(fa, qs + (16 * ib) * LQ + kc, LQ);
        wmma_smem::load(fb, ks + (16 * jb) * LQ + kc, LQ);
        wmma::mma_sync(acc[t], fa, fb, acc[t]);
      }
    }
    store_rows<KS>(Qg + (c0 * H + h) * K + k0, H * K, nc, kw,
                   [&](int i, int kk) { return to_f(qs[i * LQ + kk]) * exp2f(bs[i * LB + kk]); });
    store_rows<KS>(Kd + (c0 * H + h) * K + k0, H * K, nc, kw, [&](int i, int kk) {
      return to_f(ks[i * LQ + kk]) * exp2f(bs[(C - 1) * LB + kk] - bs[i * LB + kk]);
    });
    for (int kk = tid; kk < kw; kk += kThreads) El[(slot * H + h) * K + k0 + kk] = exp2f(bs[(C - 1) * LB + kk]);
  }

  for (int p = warp, t = 0; p < 10; p += kWarps, ++t) {
    int ib = 0, jb = p;
    while (jb > ib) jb -= ++ib;
    wmma_smem::store(af + (16 * ib) * LAF + 16 * jb, acc[t], LAF);
  }
  __syncthreads();
  E* Aout = A + (slot * H + h) * C * C;
  for (int e = tid; e < C * C / 8; e += kThreads) {  // select: j > i is never read
    const int i = e / (C / 8), j0 = (e % (C / 8)) * 8;
    alignas(16) E x[8];
#pragma unroll
    for (int t = 0; t < 8; ++t) {
      const int j = j0 + t;
      float a = 0.f;
      if (j <= i) a = af[i * LAF + j] * exp2f(bs[i * LB] - bs[j * LB]);
      x[t] = from_f<E>(a);
    }
    *reinterpret_cast<uint4*>(Aout + i * C + j0) = *reinterpret_cast<const uint4*>(x);
  }
}

/// 2. The state pass: S ← 2^(b_last) ⊙ S + (k ⊙ 2^(b_last − b))ᵀ v per chunk, both factors from
/// the prep kernel, storing the S that enters each chunk (rounded to E: an MMA operand of the out
/// kernel) to ws.S [slot, H, K, V] and the final S to hT. The rows of S are independent (row kk
/// decays by its own 2^(b_last)), so a CTA owns a KT x BV tile: grid (ceil(V / BV)·ceil(K / KT), H,
/// N·segs). The operands of chunks c+1 … c+kWalkStages−1 are in flight (cp.async, a ring of buffers)
/// while chunk c is computed.
/// Segmented (segs > 1, walk_segments): CTA z = n·segs + g walks chunks [g·seg_chunks, (g+1)·seg_chunks)
/// of sequence n. kLocal (2a): from S = 0, no stores but its end state U and the product P of its
/// 2^(b_last) (fp32), for every segment but the last. Otherwise (2b): S entering the segment =
/// h0 (or 0) folded through segments 0..g−1, S ← P ⊙ S + U in segment order (fp32), then the walk
/// with its stores; the last segment writes hT. segs = 1 is the plain walk.
template <class E, int BV, int KP, bool kLocal>
__global__ void __launch_bounds__(fwd_split::kThreads, fwd_split::kWalkCtas)
    sm90_glr_fwd_walk(const E* __restrict__ Kd, const E* __restrict__ v, const float* __restrict__ El,
                      const float* __restrict__ h0, E* __restrict__ Sws, float* __restrict__ hT,
                      float* __restrict__ Useg, float* __restrict__ Pseg, const int64_t* __restrict__ cu,
                      int64_t T, int64_t H, int64_t K, int64_t V, int64_t NT, int64_t segs, int64_t seg_chunks) {
  using namespace fwd_split;
  using L = WalkSmem<KP, BV>;
  constexpr int LQ = L::LQ, LV = L::LV;
  constexpr int NS = kWalkStages;
  extern __shared__ __align__(128) unsigned char smem_raw[];
  float* Pl = reinterpret_cast<float*>(smem_raw + L::p);  // kLocal: Π 2^(b_last) of the rows   [KP]

  const int tid = threadIdx.x, warp = tid / 32;
  const int64_t nkt = cdiv(K, KP);
  const int64_t vt = blockIdx.x / nkt, v0 = vt * BV, k0 = int64_t(blockIdx.x % nkt) * KP, h = blockIdx.y,
                n = blockIdx.z / segs, g = blockIdx.z % segs;
  const int vw = int(V - v0 < BV ? V - v0 : BV), kw = int(K - k0 < KP ? K - k0 : KP);
  int64_t bos, eos;
  const int64_t slot0 = first_slot(cu, n, T, NT, &bos, &eos);
  // This CTA's chunks [cb, ce) of the sequence (all of them when segs = 1).
  const int64_t nch = cdiv(eos - bos, C), cb = g * seg_chunks,
                ce = segs == 1 ? nch : (cb + seg_chunks < nch ? cb + seg_chunks : nch);
  if (kLocal && (g == segs - 1 || cb >= ce)) return;  // uniform per CTA: the last segment's U is never needed
  auto kd_at = [&](int buf) { return reinterpret_cast<E*>(smem_raw + L::kd + buf * L::kd_bytes); };
  auto vs_at = [&](int buf) { return reinterpret_cast<E*>(smem_raw + L::vs + buf * L::v_bytes); };
  auto el_at = [&](int buf) { return reinterpret_cast<float*>(smem_raw + L::el + buf * L::el_bytes); };
  auto prefetch = [&](int64_t c, int buf) {  // chunk c of the sequence; a group is committed always
    const int64_t c0 = bos + c * C;
    if (c < ce && c0 < eos) {
      const int nc = int(eos - c0 < C ? eos - c0 : C);
      // kNoHoist: at 80 registers the hoisted offsets spilled (async_tile)
      async_tile<KP, true>(kd_at(buf), LQ, Kd + (c0 * H + h) * K + k0, H * K, C, nc, kw);
      async_tile<BV, true>(vs_at(buf), LV, v + (c0 * H + h) * V + v0, H * V, C, nc, vw);
      async_tile<KP, true>(el_at(buf), KP, El + ((slot0 + c) * H + h) * K + k0, K, 1, 1, kw);
    }
    cp_async_commit();
  };
  // Segment states: U [N, segs, H, K, V] and P [N, segs, H, K], fp32.
  auto u_at = [&](int64_t gg) { return Useg + (((n * segs + gg) * H + h) * K + k0) * V + v0; };
  auto p_at = [&](int64_t gg) { return Pseg + ((n * segs + gg) * H + h) * K + k0; };

#pragma unroll
  for (int c = 0; c < NS - 1; ++c) prefetch(cb + c, c);
  // The state entering the CTA's first chunk: h0 (or 0) folded through the earlier segments.
  auto initial = [&](int kk, int vv) {
    const bool live = kk < kw && vv < vw;
    float st = (!kLocal && h0 && live) ? h0[((n * H + h) * K + k0 + kk) * V + v0 + vv] : 0.f;
    if (!kLocal && live)
      for (int64_t gg = 0; gg < g; ++gg) st = segment_fold::fold(p_at(gg)[kk], st, u_at(gg)[kk * V + vv]);
    return st;
  };
  if (kLocal)
    for (int kk = tid; kk < KP; kk += kThreads) Pl[kk] = 1.f;

  // The state lives between chunks in the warps' mma.sync accumulator registers for the whole walk
  // (1–8% faster on the H200 than a shared-memory S round-tripped through WMMA fragments,
  // bench/results/glr-fwd-split.md, session 30): kRegTiles m16n8 tiles per warp, lane 4·gq + tq
  // holding rows 16·mt + gq, + 8 and columns 8·nt + 2·tq, + 1 of tile (mt, nt); a step then needs
  // only the buffer ring's barrier.
  constexpr int kTilesN = BV / 8, kTiles = (KP / 16) * kTilesN, kRegTiles = (kTiles + kWarps - 1) / kWarps;
  const int lane = tid % 32, gq = lane / 4, tq = lane % 4;
  float acc[kRegTiles][4];
  auto row_of = [&](int i, int e) { return 16 * ((warp + kWarps * i) / kTilesN) + gq + (e >= 2 ? 8 : 0); };
  auto col_of = [&](int i, int e) { return 8 * ((warp + kWarps * i) % kTilesN) + 2 * tq + (e & 1); };
#pragma unroll
  for (int i = 0; i < kRegTiles; ++i)
#pragma unroll
    for (int e = 0; e < 4; ++e) acc[i][e] = warp + kWarps * i < kTiles ? initial(row_of(i, e), col_of(i, e)) : 0.f;
  auto each_live = [&](auto&& f) {
#pragma unroll
    for (int i = 0; i < kRegTiles; ++i)
      if (warp + kWarps * i < kTiles)
#pragma unroll
        for (int e = 0; e < 4; ++e) {
          const int kk = row_of(i, e), vv = col_of(i, e);
          if (kk < kw && vv < vw) f(kk, vv, acc[i][e]);
        }
  };

  // Whether S's rows take 8-byte stores of four elements (V and the workspace allow it: v0 is a
  // multiple of BV, so every row's first element is 8-byte aligned then).
  const bool out_vec = V % 4 == 0 && reinterpret_cast<uintptr_t>(Sws) % 8 == 0;
  int64_t slot = slot0 + cb, c = cb;
  int buf = 0;
  for (; c < ce; ++slot, ++c, buf = buf + 1 == NS ? 0 : buf + 1) {  // uniform per CTA
    cp_async_wait<NS - 2>();  // this thread's copies of chunk c have landed
    __syncthreads();  // everyone's have; every thread is done with chunk c−1, whose buffer is refilled next
    prefetch(c + NS - 1, buf == 0 ? NS - 1 : buf - 1);
    const E* ks = kd_at(buf);
    const E* vs = vs_at(buf);
    const float* el = el_at(buf);
    E* Sout = Sws + ((slot * H + h) * K + k0) * V + v0;
    // Store the S entering this chunk (rounded: an MMA operand of the out kernel), then decay it.
#pragma unroll
    for (int i = 0; i < kRegTiles; ++i) {
      if (warp + kWarps * i >= kTiles) continue;  // uniform per warp
#pragma unroll
      for (int e = 0; e < 4; e += 2) {  // a lane's two neighbouring columns of one row: one 4-byte store
        const int kk = row_of(i, e), vv = col_of(i, e);
        if (!kLocal && kk < kw) {
          if (out_vec && vv + 1 < vw) {
            const E pair[2] = {from_f<E>(acc[i][e]), from_f<E>(acc[i][e + 1])};
            *reinterpret_cast<uint32_t*>(Sout + kk * V + vv) = *reinterpret_cast<const uint32_t*>(pair);
          } else {
            if (vv < vw) Sout[kk * V + vv] = from_f<E>(acc[i][e]);
            if (vv + 1 < vw) Sout[kk * V + vv + 1] = from_f<E>(acc[i][e + 1]);
          }
        }
        const float f = kk < kw ? el[kk] : 1.f;
        acc[i][e] *= f;
        acc[i][e + 1] *= f;
      }
    }
    if (kLocal)  // P keeps the walk's non-finite classes (segment_fold.hpp); row kk is thread kk's only
      for (int kk = tid; kk < kw; kk += kThreads) Pl[kk] = segment_fold::decay_product(Pl[kk], el[kk]);
    // S += (k ⊙ 2^(b_last − b))ᵀ v over the chunk's 64 steps, in 16-step MMAs.
    const int r = lane % 8, mat = lane / 8;  // the row this lane addresses in 8×8 matrix `mat`
    // A warp's tiles share their column block (nt = warp % kTilesN: kTilesN divides kWarps), so v's
    // fragment is loaded once a 16-step block, not once a tile; and the blocks are not unrolled. Both
    // for the 80 registers of three CTAs an SM (ptxas, nvcc 13: unrolled, KT = BV = 64 spilled 84 B;
    // so, 40 B in the plain walk, none in the segments' local walk or at other tiles).
    static_assert(kWarps % kTilesN == 0, "a warp's register tiles share one column block");
#pragma unroll 1
    for (int jb = 0; jb < C / 16; ++jb) {
      uint32_t b[2];
      ldsm_x2_trans(b, vs + (16 * jb + 8 * (mat & 1) + r) * LV + 8 * (warp % kTilesN));
#pragma unroll
      for (int i = 0; i < kRegTiles; ++i) {
        const int t = warp + kWarps * i;
        if (t >= kTiles) continue;
        const int mt = t / kTilesN;
        uint32_t a[4];
        ldsm_x4_trans(a, ks + (16 * jb + 8 * (mat >> 1) + r) * LQ + 16 * mt + 8 * (mat & 1));
        mma16816<E>(acc[i], a, b);
      }
    }
  }
  cp_async_wait<0>();  // nothing of a prefetch past the segment is left in flight
  __syncthreads();     // Pl complete
  if (kLocal) {
    float* U = u_at(g);
    each_live([&](int kk, int vv, float x) { U[kk * V + vv] = x; });
    if (vt == 0)
      for (int kk = tid; kk < kw; kk += kThreads) p_at(g)[kk] = Pl[kk];
    return;
  }
  if (hT && ce == nch)  // the sequence's last segment (or the whole walk)
    each_live([&](int kk, int vv, float x) { hT[((n * H + h) * K + k0 + kk) * V + v0 + vv] = x; });
}

namespace fwd_split {

/// The body of sm90_glr_fwd_out for head h and V columns [v0, v0 + BV): all kThreads threads, OutSmem<KP, BV>
/// at smem_raw (128-byte aligned). Also the wgmma out kernel's path for tiles it must not take on wgmma
/// (glr_fwd_out_wgmma.cuh).
template <class E, int BV, int KP>
__device__ __forceinline__ void out_tile(unsigned char* smem_raw, const E* __restrict__ Qg, const E* __restrict__ v,
                                         const E* __restrict__ A, const E* __restrict__ Sws, E* __restrict__ o,
                                         const int64_t* __restrict__ cu, int64_t T, int64_t H, int64_t K, int64_t V,
                                         int64_t NT, int64_t N, float scale, int64_t h, int64_t v0) {
  namespace wmma = nvcuda::wmma;
  using FragA = wmma::fragment<wmma::matrix_a, 16, 16, 16, E, wmma::row_major>;
  using FragB = wmma::fragment<wmma::matrix_b, 16, 16, 16, E, wmma::row_major>;
  using FragC = wmma::fragment<wmma::accumulator, 16, 16, 16, float>;
  using L = OutSmem<KP, BV>;
  constexpr int LQ = L::LQ, LV = L::LV, LA = L::LA, LS = L::LS, LO = L::LO;
  E* qs = reinterpret_cast<E*>(smem_raw + L::qs);
  E* vs = reinterpret_cast<E*>(smem_raw + L::vs);
  E* as = reinterpret_cast<E*>(smem_raw + L::as);
  E* ss = reinterpret_cast<E*>(smem_raw + L::ss);
  float* of = reinterpret_cast<float*>(smem_raw + L::of);

  int64_t bos, eos, chunk;
  const int64_t slot = chunk_cta(cu, blockIdx.x, blockIdx.z, N, T, NT, &chunk, &bos, &eos);
  const int64_t c0 = bos + chunk * C;
  if (c0 >= eos) return;
  const int nc = int(eos - c0 < C ? eos - c0 : C), vw = int(V - v0 < BV ? V - v0 : BV);
  const int tid = threadIdx.x, warp = tid / 32, lane = tid % 32;

  async_tile<KP>(qs, LQ, Qg + (c0 * H + h) * K, H * K, C, nc, int(K));
  async_tile<BV>(vs, LV, v + (c0 * H + h) * V + v0, H * V, C, nc, vw);
  async_tile<C>(as, LA, A + (slot * H + h) * C * C, C, C, C, C);
  async_tile<BV>(ss, LS, Sws + (slot * H + h) * K * V + v0, V, KP, int(K), vw);
  cp_async_commit();
  cp_async_wait<0>();
  __syncthreads();
  {
    constexpr int kTiles = BV / 16 > 1 ? BV / 32 : 1;
    const int blk = warp >> 1, ct0 = warp & 1;
    const bool mma = ct0 < BV / 16;
    FragC acc[kTiles];
    if (mma) {
#pragma unroll
      for (int t = 0; t < kTiles; ++t) wmma::fill_fragment(acc[t], 0.f);
#pragma unroll
      for (int k0 = 0; k0 < KP; k0 += 16) {
        FragA fa;
        wmma_smem::load(fa, qs + (16 * blk) * LQ + k0, LQ);
#pragma unroll
        for (int t = 0; t < kTiles; ++t) {
          FragB fb;
          wmma_smem::load(fb, ss + k0 * LS + 16 * (ct0 + 2 * t), LS);
          wmma::mma_sync(acc[t], fa, fb, acc[t]);
        }
      }
      for (int jb = 0; jb < blk; ++jb) {
        FragA fa;
        wmma_smem::load(fa, as + (16 * blk) * LA + 16 * jb, LA);
#pragma unroll
        for (int t = 0; t < kTiles; ++t) {
          FragB fb;
          wmma_smem::load(fb, vs + (16 * jb) * LV + 16 * (ct0 + 2 * t), LV);
          wmma::mma_sync(acc[t], fa, fb, acc[t]);
        }
      }
    }
    __syncthreads();  // every warp is done with qs: of takes its place
    if (mma) {
#pragma unroll
      for (int t = 0; t < kTiles; ++t)
        wmma_smem::store(of + (16 * blk) * LO + 16 * (ct0 + 2 * t), acc[t], LO);
    }
  }
  __syncthreads();
  for (int e = lane; e < 8 * BV; e += 32) {  // warp: 8 rows of block warp/2
    const int i = 16 * (warp >> 1) + 8 * (warp & 1) + e / BV, vv = e % BV;
    float a = of[i * LO + vv];
    for (int j = 16 * (warp >> 1); j <= i; ++j) a += to_f(as[i * LA + j]) * to_f(vs[j * LV + vv]);
    if (i < nc && vv < vw) o[((c0 + i) * H + h) * V + v0 + vv] = from_f<E>(scale * a);
  }
}

}  // namespace fwd_split

/// 3. o = scale·((q ⊙ 2^b)·S_c + A·v): MMAs for the inter product and A's off-diagonal blocks, the
/// diagonal blocks' A·v on FFMA over j <= i. Grid (NT, H·ceil(V / BV), N) (varlen: chunk_grid).
template <class E, int BV, int KP>
__global__ void __launch_bounds__(fwd_split::kThreads)
    sm90_glr_fwd_out(const E* __restrict__ Qg, const E* __restrict__ v, const E* __restrict__ A,
                     const E* __restrict__ Sws, E* __restrict__ o, const int64_t* __restrict__ cu, int64_t T,
                     int64_t H, int64_t K, int64_t V, int64_t NT, int64_t N, float scale) {
  extern __shared__ __align__(128) unsigned char smem_raw[];
  const int64_t nvt = fwd_split::cdiv(V, BV);
  fwd_split::out_tile<E, BV, KP>(smem_raw, Qg, v, A, Sws, o, cu, T, H, K, V, NT, N, scale, blockIdx.y / nvt,
                                 (blockIdx.y % nvt) * BV);
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

/// What a forward keeps for the backward (FwdParams::saved): A, S, q ⊙ 2^b, k ⊙ 2^(b_last − b)
/// and 2^(b_last) at their layout offsets ([0, U)), then the final state in fp32 at U.
inline size_t states_bytes(const Shape& s) { return layout(s).U; }
inline size_t saved_bytes(const Shape& s) {
  const int64_t H = s.H < 1 ? 1 : s.H, K = s.K < 1 ? 1 : s.K, V = s.V < 1 ? 1 : s.V;
  const int64_t N = s.sequences() < 1 ? 1 : s.sequences();
  return states_bytes(s) + align256(size_t(N) * H * K * V * 4);
}

/// Where one call's products live: the states (A … 2^(b_last), layout offsets) from `st`, which is
/// p.saved when the call keeps them and p.workspace otherwise; the walk's segment sums U and P in
/// p.workspace after the states, or from its start when the states are kept.
struct Place {
  unsigned char* st = nullptr;
  unsigned char* U = nullptr;
  unsigned char* P = nullptr;
};
inline Place place(const FwdParams& p, const Layout& l) {
  auto* ws = static_cast<unsigned char*>(p.workspace);
  if (p.saved) return {static_cast<unsigned char*>(p.saved), ws, ws + (l.P - l.U)};
  return {ws, ws + l.U, ws + l.P};
}

/// The three kernels' launches on place(p, layout(p.shape)); K <= KP, BV the walk's and out's V tile.
template <class E, bool kScalarGate, int KP>
Status launch_prep(const FwdParams& p, cudaStream_t stream) {
  const Shape& s = p.shape;
  const Layout l = layout(s);
  if (l.NT == 0) return {};
  auto* ws = place(p, l).st;
  const ChunkGrid cg = chunk_grid(s, l.NT, l.slots);
  const dim3 grid(unsigned(cg.x), unsigned(s.H), unsigned(cg.z));
  auto go = [&](auto* kernel, size_t bytes) -> Status {
    if (Status st = allow_smem(kernel, bytes); !st.ok()) return st;
    kernel<<<grid, kThreads, bytes, stream>>>(
        static_cast<const E*>(p.q), static_cast<const E*>(p.k), static_cast<const float*>(p.g),
        reinterpret_cast<E*>(ws + l.A), reinterpret_cast<E*>(ws + l.Qg), reinterpret_cast<E*>(ws + l.Kd),
        reinterpret_cast<float*>(ws + l.El), s.cu_seqlens, s.T, s.H, s.K, l.NT, s.sequences());
    return {};
  };
  if constexpr (kScalarGate) {
    constexpr int KS = prep_scalar_cols(KP);
    constexpr size_t bytes = 2 * align128(size_t(C) * ld_half(KS) * 2) + align128(size_t(C) * ld_float(KS) * 4) +
                             align128(size_t(C) * ld_float(C) * 4);
    return go(&sm90_glr_fwd_prep_scalar<E, KS>, bytes);
  } else {
    return go(&sm90_glr_fwd_prep<E, kPrepCols>, PrepSmem<kPrepCols>::bytes);
  }
}

template <class E, int BV, int KP>
Status launch_walk(const FwdParams& p, cudaStream_t stream, Walk walk) {
  const Shape& s = p.shape;
  const Layout l = layout(s, walk);
  const Place at = place(p, l);
  auto* ws = at.st;
  // NOTES: a call that keeps its states writes the final state beside them (the backward's dg seed);
  // launch_gate copies it to p.hT.
  float* hT = p.saved ? reinterpret_cast<float*>(ws + states_bytes(s)) : static_cast<float*>(p.hT);
  constexpr int KT = walk_rows(KP);
  constexpr size_t bytes = WalkSmem<KT, BV>::bytes;
  const dim3 grid(unsigned(cdiv(s.V, BV) * cdiv(s.K, KT)), unsigned(s.H), unsigned(s.sequences() * l.segs));
  auto go = [&](auto* kernel) -> Status {
    if (Status st = allow_smem(kernel, bytes); !st.ok()) return st;
    kernel<<<grid, kThreads, bytes, stream>>>(
        reinterpret_cast<const E*>(ws + l.Kd), static_cast<const E*>(p.v), reinterpret_cast<const float*>(ws + l.El),
        static_cast<const float*>(p.h0), reinterpret_cast<E*>(ws + l.S), hT, reinterpret_cast<float*>(at.U),
        reinterpret_cast<float*>(at.P), s.cu_seqlens, s.T, s.H, s.K, s.V,
        l.NT, l.segs, l.seg_chunks);
    return {};
  };
  if (l.segs > 1)
    if (Status st = go(&sm90_glr_fwd_walk<E, BV, KT, true>); !st.ok()) return st;
  return go(&sm90_glr_fwd_walk<E, BV, KT, false>);
}

template <class E, int BV, int KP>
Status launch_out(const FwdParams& p, cudaStream_t stream) {
  const Shape& s = p.shape;
  const Layout l = layout(s);
  if (l.NT == 0) return {};
  auto* ws = place(p, l).st;
  constexpr size_t bytes = OutSmem<KP, BV>::bytes;
  auto* kernel = &sm90_glr_fwd_out<E, BV, KP>;
  if (Status st = allow_smem(kernel, bytes); !st.ok()) return st;
  const ChunkGrid cg = chunk_grid(s, l.NT, l.slots);
  kernel<<<dim3(unsigned(cg.x), unsigned(s.H * cdiv(s.V, BV)), unsigned(cg.z)), kThreads, bytes, stream>>>(
      reinterpret_cast<const E*>(ws + l.Qg), static_cast<const E*>(p.v), reinterpret_cast<const E*>(ws + l.A),
      reinterpret_cast<const E*>(ws + l.S), static_cast<E*>(p.o), s.cu_seqlens, s.T, s.H, s.K, s.V, l.NT,
      s.sequences(), float(p.scale));
  return {};
}

}  // namespace fwd_split
}  // namespace glr::cuda::sm90
#if !defined(GLR_FWD_WMMA_OUT)
#include "glr/cuda/sm90/glr_fwd_out_wgmma.cuh"
#endif
namespace glr::cuda::sm90 {
namespace fwd_split {

/// Whether the out kernel runs on wgmma (glr_fwd_out_wgmma.cuh): on a device of compute capability 9.0,
/// whose code is the sm_90a build (glr builds 90a, never plain 90: wgmma exists only there; H200,
/// session 27: the forward tests and gates pass, out 15–24% faster, bench/results/glr-fwd-split.md);
/// elsewhere (sm_100a) sm90_glr_fwd_out. Build switches for A/B runs and the host simulation:
/// GLR_FWD_WMMA_OUT always the WMMA/FFMA kernel, GLR_FWD_WGMMA always wgmma (no device asked).
inline bool out_on_wgmma() {
#if defined(GLR_FWD_WMMA_OUT)
  return false;
#elif defined(GLR_FWD_WGMMA)
  return true;
#else
  return fwd_tc::sm90a_device();
#endif
}

/// Which tiles a shape runs with: KP (K padded: 32, 64, 128 or 256) and BV (the walk's and out's
/// V tile: the widest whose walk grid, V tiles x K tiles x heads x sequences, still fills the device).
struct Tiles {
  int KP = 0, BV = 0;
};
inline Tiles tiles(const Shape& s, Walk walk = Walk::planned) {
  Tiles t;
  t.KP = padded_k(s.K);
  const int64_t walkers = s.H * s.sequences() * cdiv(s.K, walk_rows(t.KP)), sms = fwd_tc::sm_count();
  t.BV = s.V > 32 && cdiv(s.V, 64) * walkers >= sms ? 64 : s.V > 16 && cdiv(s.V, 32) * walkers >= sms ? 32 : 16;
  if (walk_segments(s, kNominalSms, walk) > 1) t.BV = s.V > 32 ? 64 : s.V > 16 ? 32 : 16;  // the segments fill the device
  return t;
}

/// Calls f(kp, bv) with the shape's tiles as std::integral_constant<int, …> (compile-time in f).
template <class F>
Status with_tiles(const Shape& s, F&& f, Walk walk = Walk::planned) {
  const Tiles t = tiles(s, walk);
  auto by_bv = [&](auto kp) -> Status {
    if (t.BV == 64) return f(kp, std::integral_constant<int, 64>{});
    if (t.BV == 32) return f(kp, std::integral_constant<int, 32>{});
    return f(kp, std::integral_constant<int, 16>{});
  };
  if (t.KP == 32) return by_bv(std::integral_constant<int, 32>{});
  if (t.KP == 64) return by_bv(std::integral_constant<int, 64>{});
  if (t.KP == 128) return by_bv(std::integral_constant<int, 128>{});
  return by_bv(std::integral_constant<int, 256>{});
}

/// prep then walk: A, q⊙2^b, k⊙2^(b_last−b), 2^(b_last) and every chunk's incoming S in the
/// workspace, the final S to p.hT (the backward's first two steps as well, walked plainly; prep's
/// part of the workspace is laid out the same either way).
template <class E, bool kScalarGate>
Status launch_states(const FwdParams& p, cudaStream_t stream, Walk walk = Walk::planned) {
  return with_tiles(
      p.shape,
      [&](auto kp, auto bv) -> Status {
        constexpr int KP = decltype(kp)::value, BV = decltype(bv)::value;
        if (Status st = launch_prep<E, kScalarGate, KP>(p, stream); !st.ok()) return st;
        return launch_walk<E, BV, KP>(p, stream, walk);
      },
      walk);
}

template <class E, bool kScalarGate>
Status launch_gate(const FwdParams& p, cudaStream_t stream) {
  if (Status st = launch_states<E, kScalarGate>(p, stream); !st.ok()) return st;
  if (Status st = with_tiles(p.shape,
                             [&](auto kp, auto bv) -> Status {
#if !defined(GLR_FWD_WMMA_OUT)
                               if (out_on_wgmma())  // its own V tile (out reads ws.S whole)
                                 return launch_out_wgmma<E, decltype(kp)::value>(p, stream);
#endif
                               return launch_out<E, decltype(bv)::value, decltype(kp)::value>(p, stream);
                             });
      !st.ok())
    return st;
  if (p.saved && p.hT) {
    const Shape& s = p.shape;
    const size_t bytes = size_t(s.sequences()) * s.H * s.K * s.V * 4;
    if (const cudaError_t e = cudaMemcpyAsync(p.hT, static_cast<unsigned char*>(p.saved) + states_bytes(s), bytes,
                                              cudaMemcpyDeviceToDevice, stream);
        e != cudaSuccess)
      return status("the final state's copy", e);
  }
  if (const cudaError_t e = cudaGetLastError(); e != cudaSuccess) return status("launch", e);
  return {};
}

/// Whether the split forward takes this shape: bf16 and f16 inputs, K <= 256, chunk 64.
inline constexpr int64_t kMaxK = 256;
inline bool takes(const Shape& s) {
  return (s.dtype == DType::bf16 || s.dtype == DType::f16) && s.K <= kMaxK && s.chunk == C;
}

inline size_t workspace_bytes(const Shape& s) { return takes(s) ? layout(s).bytes : 0; }
/// Beside kept states: the walk's segment sums only.
inline size_t workspace_bytes_saving(const Shape& s) {
  if (!takes(s)) return 0;
  const Layout l = layout(s);
  return l.bytes - l.U;
}

template <class E>
Status launch(const FwdParams& p, cudaStream_t stream) {
  return p.shape.gate == Gate::scalar ? launch_gate<E, true>(p, stream) : launch_gate<E, false>(p, stream);
}

}  // namespace fwd_split

}  // namespace glr::cuda::sm90
