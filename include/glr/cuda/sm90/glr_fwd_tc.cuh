/// glr CUDA family, sm90 tensor-core forward (sm90_glr_fwd_tc): the chunked algorithm of
/// glr/cpu_chunked.hpp for bf16/f16 inputs, its matrix products on the tensor cores (WMMA
/// m16n16k16, operands in the input dtype, fp32 accumulation), the state S [K, BV] in fp32 shared
/// memory. One CTA per (V tile, head, sequence), walking its sequence's chunks (C = 64) in order.
/// No longer routed: glr_fwd_split.cuh computes the same values in three kernels, faster (bench/
/// results/glr-fwd-split.md); this fused form stays as the split's arithmetic reference and its
/// shared helpers (tile loads, the factored A's block pairs), timed beside it by glr_fwd_time.
///
/// Per chunk (rows i, j in [0, 64), 16-row blocks ib, jb; b = cumulative log-gate from the chunk
/// start, kept in log2 units; r = the last row of block jb):
///   A, off-diagonal blocks (ib > jb):  Σ_k (q_ik 2^(b_ik − b_rk)) (k_jk 2^(b_rk − b_jk))   MMA
///   A, diagonal blocks, j <= i:        Σ_k q_ik k_jk 2^(b_ik − b_jk)                 FFMA, select
///   o_i = scale · ( (q ⊙ 2^b)_i · S  +  Σ_{jb < ib} A · v  +  Σ_{j in ib, j <= i} A_ij v_j )
///   S   ← 2^(b_last) ⊙ S + (k ⊙ 2^(b_last − b))ᵀ v                                      MMA
/// Every 2^ argument is <= 0 when g <= 0 (i > r >= j in the off-diagonal factors). The operands
/// q ⊙ 2^(…), k ⊙ 2^(…), A, S and v are rounded once to the input dtype, which the bf16/f16
/// contracts admit (docs/glr.md, "operand rounding"); the state itself, every sum and every
/// accumulation stay fp32. The diagonal blocks' A · v runs on FFMA over j <= i only, so that an
/// infinite v_j never meets a masked zero A_ij (0 · Inf) in a product: masking is by selection.
/// Deterministic: fixed WMMA tiling and fixed FFMA order, no atomics.
#pragma once

#include <mma.h>

#include <cstdint>
#include <string>
#include <type_traits>

#include "glr/cuda.hpp"
#include "glr/cuda/sm90/common.cuh"

namespace glr::cuda::sm90 {

namespace fwd_tc {

inline constexpr int kThreads = 256;  // 8 warps: warps 2b and 2b+1 own rows [16b, 16b+16) of a chunk
inline constexpr int kWarps = kThreads / 32;
inline constexpr int C = 64;          // chunk length of this kernel
inline constexpr int kMaxK = 128;
inline constexpr float kLog2e = 1.4426950408889634f;

/// Row strides (elements) of the shared tiles: +8 halves / +4 floats keep rows off the same banks
/// and every 16-row, 16-column WMMA tile 32-byte aligned.
__host__ __device__ constexpr int ld_half(int cols) { return cols + 8; }
__host__ __device__ constexpr int ld_float(int cols) { return cols + 4; }
__host__ __device__ constexpr size_t align128(size_t b) { return (b + 127) / 128 * 128; }

/// Shared-memory plan of one CTA (byte offsets from the base), for K padded to KP columns.
struct Plan {
  size_t qs = 0, ks = 0, bs = 0, vs = 0, kr = 0, qr = 0, of = 0, af = 0, ab = 0, s = 0, sb = 0, el = 0, bc = 0,
         total = 0;
  __host__ __device__ constexpr size_t take(size_t bytes) {
    const size_t here = total;
    total += align128(bytes);
    return here;
  }
  __host__ __device__ constexpr Plan(int KP, int BV) {
    const size_t qr_bytes = size_t(6) * 16 * ld_half(KP) * 2, of_bytes = size_t(C) * ld_float(BV) * 4;
    qs = take(size_t(C) * ld_half(KP) * 2);        // q, then q ⊙ 2^b            (E)
    ks = take(size_t(C) * ld_half(KP) * 2);        // k, then k ⊙ 2^(b_last − b) (E)
    bs = take(size_t(C) * ld_float(KP) * 4);       // g·log2e, then b           (fp32)
    vs = take(size_t(C) * ld_half(BV) * 2);        // v tile                      (E)
    kr = take(size_t(3) * 16 * ld_half(KP) * 2);   // k_j 2^(b_r − b_j), per jb < 3 (E)
    qr = take(qr_bytes > of_bytes ? qr_bytes : of_bytes);  // q_i 2^(b_i − b_r), per (ib > jb) (E)
    of = qr;                                       // o staging [C, BV] fp32: qr is dead by then
    af = take(size_t(C) * ld_float(C) * 4);        // A (fp32)
    ab = take(size_t(C) * ld_half(C) * 2);         // A rounded, j > i selected to 0 (E)
    s = take(size_t(KP) * ld_float(BV) * 4);       // the state tile (fp32)
    sb = take(size_t(KP) * ld_half(BV) * 2);       // the state rounded, MMA operand (E)
    el = take(size_t(KP) * 4);                     // 2^(b_last) per K row
    bc = take(size_t(C) * 4);                      // b (scalar gate)
  }
};

/// The six off-diagonal block pairs (ib > jb) in a fixed order; warp w takes pairs w and w + 4.
__device__ __forceinline__ void pair_of(int p, int* ib, int* jb) {  // (1,0) (2,0) (2,1) (3,0) (3,1) (3,2)
  *ib = p < 1 ? 1 : p < 3 ? 2 : 3;
  *jb = p < 1 ? 0 : p < 3 ? p - 1 : p - 3;
}

template <class E> __device__ __forceinline__ float to_f(E x) {
  if constexpr (std::is_same_v<E, __nv_bfloat16>) return __bfloat162float(x);
  else return __half2float(x);
}
template <class E> __device__ __forceinline__ E from_f(float x) {
  if constexpr (std::is_same_v<E, __nv_bfloat16>) return __float2bfloat16_rn(x);
  else return __float2half_rn(x);
}

/// rows x cols elements of E from global (row stride `stride` elements) into shared (row stride
/// ld), zero outside [0, live_rows) x [0, live_cols). 16-byte loads where the rows allow it.
template <int cols, class E>
__device__ __forceinline__ void load_tile(E* dst, int ld, const E* src, int64_t stride, int rows, int live_rows,
                                          int live_cols, bool vec) {
  if (vec) {  // live_cols == cols, cols % 8 == 0, src and stride 16-byte aligned
    const int per_row = cols / 8;
    for (int e = threadIdx.x; e < rows * per_row; e += kThreads) {
      const int i = e / per_row, c = (e % per_row) * 8;
      uint4 x = make_uint4(0, 0, 0, 0);
      if (i < live_rows) x = *reinterpret_cast<const uint4*>(src + i * stride + c);
      *reinterpret_cast<uint4*>(dst + i * ld + c) = x;
    }
    return;
  }
  for (int e = threadIdx.x; e < rows * cols; e += kThreads) {
    const int i = e / cols, c = e % cols;
    dst[i * ld + c] = (i < live_rows && c < live_cols) ? src[i * stride + c] : from_f<E>(0.f);
  }
}

}  // namespace fwd_tc

/// The tensor-core forward. Grid (ceil(V / BV), H, sequences); fwd_tc::kThreads threads.
/// Layouts as sm90_glr_fwd (glr_fwd.cuh); K <= KP (32, 64 or 128: K padded with zero columns), C = 64.
template <class E, bool kScalarGate, int BV, int KP>
__global__ void __launch_bounds__(fwd_tc::kThreads)
    sm90_glr_fwd_tc(const E* __restrict__ q, const E* __restrict__ k, const E* __restrict__ v,
                    const float* __restrict__ g, const float* __restrict__ h0, E* __restrict__ o,
                    float* __restrict__ hT, const int64_t* __restrict__ cu_seqlens, int64_t T, int64_t H, int64_t K,
                    int64_t V, float scale) {
  using namespace fwd_tc;
  namespace wmma = nvcuda::wmma;
  static_assert(BV == 16 || BV == 32 || BV == 64, "BV: 16, 32 or 64");
  static_assert(KP == 32 || KP == 64 || KP == 128, "KP: 32, 64 or 128");
  using FragA = wmma::fragment<wmma::matrix_a, 16, 16, 16, E, wmma::row_major>;
  using FragAT = wmma::fragment<wmma::matrix_a, 16, 16, 16, E, wmma::col_major>;
  using FragB = wmma::fragment<wmma::matrix_b, 16, 16, 16, E, wmma::row_major>;
  using FragBT = wmma::fragment<wmma::matrix_b, 16, 16, 16, E, wmma::col_major>;
  using FragC = wmma::fragment<wmma::accumulator, 16, 16, 16, float>;

  constexpr int LQ = ld_half(KP), LB = ld_float(KP), LV = ld_half(BV), LAF = ld_float(C), LAB = ld_half(C),
                LS = ld_float(BV), LSB = ld_half(BV);
  constexpr Plan plan(KP, BV);
  extern __shared__ __align__(128) unsigned char smem_raw[];
  E* qs = reinterpret_cast<E*>(smem_raw + plan.qs);
  E* ks = reinterpret_cast<E*>(smem_raw + plan.ks);
  float* bs = reinterpret_cast<float*>(smem_raw + plan.bs);
  E* vs = reinterpret_cast<E*>(smem_raw + plan.vs);
  E* kr = reinterpret_cast<E*>(smem_raw + plan.kr);
  E* qr = reinterpret_cast<E*>(smem_raw + plan.qr);
  float* of = reinterpret_cast<float*>(smem_raw + plan.of);
  float* af = reinterpret_cast<float*>(smem_raw + plan.af);
  E* ab = reinterpret_cast<E*>(smem_raw + plan.ab);
  float* S = reinterpret_cast<float*>(smem_raw + plan.s);
  E* sb = reinterpret_cast<E*>(smem_raw + plan.sb);
  float* el = reinterpret_cast<float*>(smem_raw + plan.el);
  float* bc = reinterpret_cast<float*>(smem_raw + plan.bc);

  const int tid = threadIdx.x, warp = tid / 32, lane = tid % 32;
  const int64_t v0 = int64_t(blockIdx.x) * BV;
  const int vw = int(V - v0 < BV ? V - v0 : BV);  // live V columns of this tile
  const int64_t h = blockIdx.y, n = blockIdx.z;
  int64_t bos, eos;
  sequence_range(cu_seqlens, n, T, &bos, &eos);

  // 16-byte loads when every row start is 16-byte aligned (uniform per launch).
  const bool vec_qk = K == KP && (K * H) % 8 == 0 && (reinterpret_cast<uintptr_t>(q) % 16) == 0 &&
                      (reinterpret_cast<uintptr_t>(k) % 16) == 0;
  const bool vec_v = vw == BV && (V * H) % 8 == 0 && V % 8 == 0 && (reinterpret_cast<uintptr_t>(v) % 16) == 0;

  for (int e = tid; e < KP * BV; e += kThreads) {  // S ← h0 (0 outside the live K x V)
    const int kk = e / BV, vv = e % BV;
    const float x = (h0 && kk < K && vv < vw) ? h0[((n * H + h) * K + kk) * V + v0 + vv] : 0.f;
    S[kk * LS + vv] = x;
    sb[kk * LSB + vv] = from_f<E>(x);
  }
  __syncthreads();

  for (int64_t c0 = bos; c0 < eos; c0 += C) {  // uniform per CTA: the barriers below are safe
    const int nc = int(eos - c0 < C ? eos - c0 : C);

    // ---- P1: q, k, v and the gate of the chunk (zero outside the live rows and columns) ----
    load_tile<KP>(qs, LQ, q + (c0 * H + h) * K, H * K, C, nc, int(K), vec_qk);
    load_tile<KP>(ks, LQ, k + (c0 * H + h) * K, H * K, C, nc, int(K), vec_qk);
    load_tile<BV>(vs, LV, v + (c0 * H + h) * V + v0, H * V, C, nc, vw, vec_v);
    if constexpr (kScalarGate) {
      for (int i = tid; i < C; i += kThreads) bc[i] = i < nc ? g[(c0 + i) * H + h] * kLog2e : 0.f;
    } else {
      for (int e = tid; e < C * KP; e += kThreads) {
        const int i = e / KP, kk = e % KP;
        bs[i * LB + kk] = (i < nc && kk < K) ? g[((c0 + i) * H + h) * K + kk] * kLog2e : 0.f;
      }
    }
    __syncthreads();

    // ---- P2: b, the cumulative log2-gate down each column, in order ----
    if constexpr (kScalarGate) {
      if (tid == 0) {
        float a = 0.f;
        for (int i = 0; i < C; ++i) {
          a += bc[i];
          bc[i] = a;
        }
      }
    } else {
      for (int kk = tid; kk < KP; kk += kThreads) {
        float a = 0.f;
        for (int i = 0; i < C; ++i) {
          a += bs[i * LB + kk];
          bs[i * LB + kk] = a;
        }
      }
    }
    __syncthreads();

    // ---- P3 (vector gate): the off-diagonal factors, and the diagonal blocks of A on FFMA ----
    if constexpr (!kScalarGate) {
      for (int e = tid; e < 3 * 16 * KP; e += kThreads) {  // kr[jb][j] = k_j 2^(b_r − b_j)
        const int jb = e / (16 * KP), j = (e / KP) % 16, kk = e % KP;
        const int row = 16 * jb + j, r = 16 * jb + 15;
        kr[(jb * 16 + j) * LQ + kk] =
            from_f<E>(to_f(ks[row * LQ + kk]) * exp2f(bs[r * LB + kk] - bs[row * LB + kk]));
      }
      for (int e = tid; e < 6 * 16 * KP; e += kThreads) {  // qr[p][i] = q_i 2^(b_i − b_r)
        const int p = e / (16 * KP), i = (e / KP) % 16, kk = e % KP;
        int ib, jb;
        pair_of(p, &ib, &jb);
        const int row = 16 * ib + i, r = 16 * jb + 15;
        qr[(p * 16 + i) * LQ + kk] =
            from_f<E>(to_f(qs[row * LQ + kk]) * exp2f(bs[row * LB + kk] - bs[r * LB + kk]));
      }
      {  // diagonal block warp/2: lane -> row i, four columns j (a quarter of the block); only j <= i is formed
        const int blk = warp >> 1, i = 16 * blk + (lane & 15), j0 = 16 * blk + 4 * ((warp & 1) * 2 + (lane >> 4));
        float a[4] = {0.f, 0.f, 0.f, 0.f};
#pragma unroll 4
        for (int kk = 0; kk < KP; ++kk) {
          const float qi = to_f(qs[i * LQ + kk]), bi = bs[i * LB + kk];
#pragma unroll
          for (int jj = 0; jj < 4; ++jj) {
            const int j = j0 + jj;
            if (j <= i) a[jj] += qi * (to_f(ks[j * LQ + kk]) * exp2f(bi - bs[j * LB + kk]));
          }
        }
#pragma unroll
        for (int jj = 0; jj < 4; ++jj) af[i * LAF + j0 + jj] = a[jj];  // j > i: 0, never read as A
      }
    }
    __syncthreads();

    // ---- P4: the MMA blocks of A: off-diagonal factors (vector), or q kᵀ on the lower blocks (scalar) ----
    if constexpr (!kScalarGate) {
      for (int p = warp; p < 6; p += kWarps) {
        int ib, jb;
        pair_of(p, &ib, &jb);
        FragC acc;
        wmma::fill_fragment(acc, 0.f);
        for (int k0 = 0; k0 < KP; k0 += 16) {
          FragA fa;
          FragBT fb;
          wmma::load_matrix_sync(fa, qr + (p * 16) * LQ + k0, LQ);
          wmma::load_matrix_sync(fb, kr + (jb * 16) * LQ + k0, LQ);
          wmma::mma_sync(acc, fa, fb, acc);
        }
        wmma::store_matrix_sync(af + (16 * ib) * LAF + 16 * jb, acc, LAF, wmma::mem_row_major);
      }
    } else {
      for (int p = warp; p < 10; p += kWarps) {  // lower blocks (ib >= jb), row-major order
        int ib = 0, jb = p;
        while (jb > ib) jb -= ++ib;
        FragC acc;
        wmma::fill_fragment(acc, 0.f);
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

    // ---- P5: A selected and rounded; q ⊙ 2^b and k ⊙ 2^(b_last − b) in place; S ← 2^(b_last) ⊙ S ----
    for (int e = tid; e < C * C; e += kThreads) {
      const int i = e / C, j = e % C;
      float a = 0.f;
      if (j <= i) {  // select: j > i is never read
        a = af[i * LAF + j];
        if constexpr (kScalarGate) a = a * exp2f(bc[i] - bc[j]);
        af[i * LAF + j] = a;
      }
      ab[i * LAB + j] = from_f<E>(a);
    }
    for (int e = tid; e < C * KP; e += kThreads) {
      const int i = e / KP, kk = e % KP;
      const float bi = kScalarGate ? bc[i] : bs[i * LB + kk];
      const float bl = kScalarGate ? bc[C - 1] : bs[(C - 1) * LB + kk];  // rows >= nc add 0: b_63 = b_last
      qs[i * LQ + kk] = from_f<E>(to_f(qs[i * LQ + kk]) * exp2f(bi));
      ks[i * LQ + kk] = from_f<E>(to_f(ks[i * LQ + kk]) * exp2f(bl - bi));
    }
    for (int kk = tid; kk < KP; kk += kThreads) el[kk] = exp2f(kScalarGate ? bc[C - 1] : bs[(C - 1) * LB + kk]);
    __syncthreads();
    for (int e = tid; e < KP * BV; e += kThreads) {
      const int kk = e / BV, vv = e % BV;
      S[kk * LS + vv] *= el[kk];
    }
    __syncthreads();

    // ---- P6a: o's MMA part (warps 2b, 2b+1: rows of block b, alternate column tiles) and the state update ----
    {
      constexpr int kTiles = BV / 16 > 1 ? BV / 32 : 1;  // column tiles per warp
      const int blk = warp >> 1, ct0 = warp & 1;
      if (ct0 < BV / 16) {
        FragC acc[kTiles];
#pragma unroll
        for (int t = 0; t < kTiles; ++t) wmma::fill_fragment(acc[t], 0.f);
#pragma unroll
        for (int k0 = 0; k0 < KP; k0 += 16) {  // (q ⊙ 2^b) · S, the old state
          FragA fa;
          wmma::load_matrix_sync(fa, qs + (16 * blk) * LQ + k0, LQ);
#pragma unroll
          for (int t = 0; t < kTiles; ++t) {
            FragB fb;
            wmma::load_matrix_sync(fb, sb + k0 * LSB + 16 * (ct0 + 2 * t), LSB);
            wmma::mma_sync(acc[t], fa, fb, acc[t]);
          }
        }
        for (int jb = 0; jb < blk; ++jb) {  // the off-diagonal blocks of A · v
          FragA fa;
          wmma::load_matrix_sync(fa, ab + (16 * blk) * LAB + 16 * jb, LAB);
#pragma unroll
          for (int t = 0; t < kTiles; ++t) {
            FragB fb;
            wmma::load_matrix_sync(fb, vs + (16 * jb) * LV + 16 * (ct0 + 2 * t), LV);
            wmma::mma_sync(acc[t], fa, fb, acc[t]);
          }
        }
#pragma unroll
        for (int t = 0; t < kTiles; ++t)
          wmma::store_matrix_sync(of + (16 * blk) * LS + 16 * (ct0 + 2 * t), acc[t], LS, wmma::mem_row_major);
      }
    }
    for (int t = warp; t < (KP / 16) * (BV / 16); t += kWarps) {  // S += (k ⊙ 2^(b_last − b))ᵀ v
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
    // the diagonal block of A · v on FFMA over j <= i, then o (warp: 8 rows of block warp/2; live only)
    for (int e = lane; e < 8 * BV; e += 32) {
      const int i = 16 * (warp >> 1) + 8 * (warp & 1) + e / BV, vv = e % BV;
      float a = of[i * LS + vv];
      for (int j = 16 * (warp >> 1); j <= i; ++j) a += af[i * LAF + j] * to_f(vs[j * LV + vv]);
      if (i < nc && vv < vw) o[((c0 + i) * H + h) * V + v0 + vv] = from_f<E>(scale * a);
    }
    __syncthreads();

    // ---- P6b: the state's rounded copy for the next chunk's inter product ----
    for (int e = tid; e < KP * BV; e += kThreads) {
      const int kk = e / BV, vv = e % BV;
      sb[kk * LSB + vv] = from_f<E>(S[kk * LS + vv]);
    }
    // NOTES: the next chunk's P1 writes qs, ks, bs, vs and bc only, none of which P6b reads; sb
    // is next read after the barriers of P1..P5.
  }

  if (hT) {
    __syncthreads();
    for (int e = tid; e < KP * BV; e += kThreads) {
      const int kk = e / BV, vv = e % BV;
      if (kk < K && vv < vw) hT[((n * H + h) * K + kk) * V + v0 + vv] = S[kk * LS + vv];
    }
  }
}

namespace fwd_tc {

inline int sm_count() {
  int dev = 0, n = 132;
  if (cudaGetDevice(&dev) == cudaSuccess) cudaDeviceGetAttribute(&n, cudaDevAttrMultiProcessorCount, dev);
  return n;
}

/// Whether the current device is of compute capability 9.0 (H100/H200), where glr's sm_90a code runs.
inline bool sm90a_device() {
  int dev = 0, major = 0, minor = 0;
  if (cudaGetDevice(&dev) != cudaSuccess) return false;
  if (cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, dev) != cudaSuccess) return false;
  if (cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, dev) != cudaSuccess) return false;
  return major == 9 && minor == 0;
}

/// The shapes the fused kernel handles (bf16, K <= 128, chunk 64); f16 runs in it as well, and
/// since the nonfinite gate's classes come from the reference's expansion the f16 contracts pass
/// it (H200, session 14, through the split kernels that share its arithmetic).
inline bool takes(const FwdParams& p) {
  const Shape& s = p.shape;
  return s.dtype == DType::bf16 && s.K <= kMaxK && s.chunk == C;
}

inline Status status(const char* what, cudaError_t e) {
  return {std::string("glr::cuda::forward (tensor cores): ") + what + ": " + cudaGetErrorName(e) + " (" +
          cudaGetErrorString(e) + ")"};
}

template <class E, bool kScalarGate, int BV, int KP>
Status launch_kp(const FwdParams& p, cudaStream_t stream) {
  const Shape& s = p.shape;
  constexpr size_t bytes = Plan(KP, BV).total;
  auto* kernel = &sm90_glr_fwd_tc<E, kScalarGate, BV, KP>;
  if (const cudaError_t e = cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, int(bytes));
      e != cudaSuccess)
    return status("cudaFuncSetAttribute", e);
  const dim3 grid(unsigned((s.V + BV - 1) / BV), unsigned(s.H), unsigned(s.sequences()));
  kernel<<<grid, kThreads, bytes, stream>>>(static_cast<const E*>(p.q), static_cast<const E*>(p.k),
                                            static_cast<const E*>(p.v), static_cast<const float*>(p.g),
                                            static_cast<const float*>(p.h0), static_cast<E*>(p.o),
                                            static_cast<float*>(p.hT), s.cu_seqlens, s.T, s.H, s.K, s.V,
                                            float(p.scale));
  if (const cudaError_t e = cudaGetLastError(); e != cudaSuccess) return status("sm90_glr_fwd_tc launch", e);
  return {};
}

/// KP: K rounded up to 32, 64 or 128.
template <class E, bool kScalarGate, int BV>
Status launch_bv(const FwdParams& p, cudaStream_t stream) {
  if (p.shape.K <= 32) return launch_kp<E, kScalarGate, BV, 32>(p, stream);
  if (p.shape.K <= 64) return launch_kp<E, kScalarGate, BV, 64>(p, stream);
  return launch_kp<E, kScalarGate, BV, 128>(p, stream);
}

/// BV: the widest V tile (64, 32, 16) whose grid still fills the device; no wider than V needs.
template <class E, bool kScalarGate>
Status launch_gate(const FwdParams& p, cudaStream_t stream) {
  const Shape& s = p.shape;
  const int64_t heads = s.H * s.sequences();
  const int64_t sms = sm_count();
  const auto ctas = [&](int64_t bv) { return (s.V + bv - 1) / bv * heads; };
  if (s.V > 32 && ctas(64) >= sms) return launch_bv<E, kScalarGate, 64>(p, stream);
  if (s.V > 16 && ctas(32) >= sms) return launch_bv<E, kScalarGate, 32>(p, stream);
  if (s.V > 32 && ctas(32) >= sms / 2) return launch_bv<E, kScalarGate, 32>(p, stream);
  return launch_bv<E, kScalarGate, 16>(p, stream);
}

template <class E>
Status launch(const FwdParams& p, cudaStream_t stream) {
  return p.shape.gate == Gate::scalar ? launch_gate<E, true>(p, stream) : launch_gate<E, false>(p, stream);
}

}  // namespace fwd_tc

}  // namespace glr::cuda::sm90
