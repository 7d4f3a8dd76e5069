/// glr CUDA family, sm90 forward (sm90_glr_fwd): the chunked algorithm of glr/cpu_chunked.hpp
/// (fwd_slice) on the GPU, one CTA per (V tile, head, sequence), walking its sequence's chunks in
/// order with the state tile S [K, BV] in shared memory. Header-only: the library
/// (glr/cuda/api.cu) and the kcv candidates (glr/controls/cuda/) compile this same source.
///
/// Per chunk of n ≤ C positions c0 .. c0+n-1 (C = shape.chunk), K walked in tiles of BK columns:
///   b_i   = g_{c0} + … + g_{c0+i}                  cumulative log-gate, per column   [n, BK]
///   A_ij += Σ_{k∈tile} q_ik (k_jk exp(b_ik − b_jk)),  j ≤ i only (select, never a mask multiply)
///   acc_i += Σ_{k∈tile} (q_ik exp(b_ik)) S_k        the inter-chunk part, old S       [n, BV]
///   S_k   ← exp(b_last,k) S_k + Σ_j (k_jk exp(b_last,k − b_jk)) v_j    the tile's rows only
/// then (scalar gate: A_ij ← A_ij exp(b_i − b_j)) o_i = scale · (acc_i + Σ_{j≤i} A_ij v_j).
/// A K tile's update touches only its own rows of S, which no later tile of the chunk reads, so
/// the per-tile update equals the CPU's whole-chunk one; every sum runs in the CPU's order.
/// Every exp argument is b_i − b_j (i ≥ j), b_i or b_last − b_j: ≤ 0 whenever g ≤ 0.
///
/// Precision: Acc (fp32; fp64 when the stored type is double) for loads, state and sums; the
/// stored type E only at the loads (exact widening) and the o store (one rounding). Deterministic:
/// every sum has a fixed order, no atomics. FFMA: f32 and f64 inputs, chunks 16 and 32, and the
/// negative controls' faults; bf16 and f16 with K <= 256 and chunk 64 run the tensor-core split
/// forward (glr_fwd_split.cuh).
#pragma once

#include <algorithm>
#include <string>
#include <type_traits>

#include "glr/cuda.hpp"
#include "glr/cuda/built.hpp"
#include "glr/cuda/sm90/common.cuh"
#include "glr/cuda/sm90/fault.cuh"
#include "glr/cuda/sm90/glr_fwd_split.cuh"
#include "glr/cuda/sm90/glr_fwd_tc.cuh"

namespace glr::cuda::sm90 {

namespace fwd {

inline constexpr int kThreads = 256;
inline constexpr int kWarps = kThreads / 32;
inline constexpr int kMaxChunk = 64;
inline constexpr int kRows = kMaxChunk / kWarps;  // output rows per thread (registers)

/// Tile widths: BV columns of V per CTA (one lane each), BK columns of K per pass.
template <class Acc> struct Tile {
  static constexpr int BK = 64, BV = 32;
};
template <> struct Tile<double> {
  static constexpr int BK = 32, BV = 32;  // half the K tile: fp64 doubles every byte
};

/// Dynamic shared memory of one CTA, in bytes: S [K, BV], q/k/b tiles [C, BK] each, v [C, BV],
/// A [C, C], exp(b_last) [BK], scalar-gate b [C]. fp32, K = 256, C = 64: 107 KB; fp64: 165 KB.
template <class Acc>
constexpr size_t smem_bytes(int64_t K, int C) {
  constexpr int BK = Tile<Acc>::BK, BV = Tile<Acc>::BV;
  return (size_t(K) * BV + 3 * size_t(C) * BK + size_t(C) * BV + size_t(C) * C + BK + C) * sizeof(Acc);
}

template <class Acc> __device__ __forceinline__ Acc round_state_bf16(Acc s) {
  if constexpr (std::is_same_v<Acc, float>) return __bfloat162float(__float2bfloat16_rn(s));
  else return s;
}

}  // namespace fwd

/// The forward kernel. Grid (ceil(V / BV), H, sequences); kThreads threads.
/// q, k [*, H, K] and v, o [*, H, V] indexed by flattened time (b·T + t, or t when varlen);
/// g [*, H, K] (vector) or [*, H] (scalar); h0, hT [N, H, K, V], each nullable.
template <class E, class Acc, bool kScalarGate>
__global__ void __launch_bounds__(fwd::kThreads)
    sm90_glr_fwd(const E* __restrict__ q, const E* __restrict__ k, const E* __restrict__ v,
                 const Acc* __restrict__ g, const Acc* __restrict__ h0, E* __restrict__ o, Acc* __restrict__ hT,
                 const int64_t* __restrict__ cu_seqlens, int64_t T, int64_t H, int64_t K, int64_t V, int C,
                 Acc scale) {
  using namespace fwd;
  constexpr int BK = Tile<Acc>::BK, BV = Tile<Acc>::BV;
  static_assert(BV == 32, "one lane per V column");
  // The same alignment as every other sm90 kernel's declaration of smem_raw (one symbol per module):
  // dynamic shared memory starts at least that aligned anyway.
  extern __shared__ __align__(128) unsigned char smem_raw[];
  Acc* S = reinterpret_cast<Acc*>(smem_raw);  // [K, BV]   the state tile
  Acc* qs = S + K * BV;                       // [C, BK]   q, then q ⊙ exp(b)
  Acc* ks = qs + C * BK;                      // [C, BK]   k, then k ⊙ exp(b_last − b)
  Acc* bs = ks + C * BK;                      // [C, BK]   g, then b (vector gate)
  Acc* vs = bs + C * BK;                      // [C, BV]
  Acc* A = vs + C * BV;                       // [C, C]    j ≤ i only
  Acc* el = A + C * C;                        // [BK]      exp(b_last)
  Acc* bc = el + BK;                          // [C]       b (scalar gate)

  const int tid = threadIdx.x, warp = tid / 32, lane = tid % 32;
  const int64_t v0 = int64_t(blockIdx.x) * BV;
  const int vw = int(V - v0 < BV ? V - v0 : BV);  // live V columns of this tile
  const int64_t h = blockIdx.y, n = blockIdx.z;
  int64_t bos, eos;
  sequence_range(cu_seqlens, n, T, &bos, &eos);
  int64_t eos_read = eos;  // the last step (exclusive) the state takes in
  if constexpr (kFault == Fault::varlen_bleed) {
    if (cu_seqlens && eos < T) eos_read = eos + 1;  // THE FLAW: the next sequence's first step leaks in
  }

  for (int64_t e = tid; e < K * BV; e += kThreads) {
    const int64_t kk = e / BV;
    const int vv = int(e % BV);
    S[e] = (h0 && vv < vw) ? h0[((n * H + h) * K + kk) * V + v0 + vv] : Acc(0);
  }
  __syncthreads();

  for (int64_t c0 = bos; c0 < eos_read; c0 += C) {  // uniform per CTA: barriers below are safe
    const int nc = int(eos_read - c0 < C ? eos_read - c0 : C);
    for (int e = tid; e < nc * BV; e += kThreads) {
      const int i = e / BV, vv = e % BV;
      vs[e] = vv < vw ? load_as<Acc>(v + ((c0 + i) * H + h) * V + v0 + vv) : Acc(0);
    }
    if constexpr (kScalarGate) {
      if (tid == 0) {
        Acc a = Acc(0);
        for (int i = 0; i < nc; ++i) {
          a += g[(c0 + i) * H + h];
          bc[i] = a;
        }
      }
    }
    Acc acc[kRows];  // acc[r]: row warp + kWarps·r, column lane
#pragma unroll
    for (int r = 0; r < kRows; ++r) acc[r] = Acc(0);

    for (int64_t k0 = 0; k0 < K; k0 += BK) {
      const int kw = int(K - k0 < BK ? K - k0 : BK);
      for (int e = tid; e < nc * BK; e += kThreads) {  // q, k, g of the tile
        const int i = e / BK, kk = e % BK;
        if (kk < kw) {
          const int64_t at = ((c0 + i) * H + h) * K + k0 + kk;
          qs[e] = load_as<Acc>(q + at);
          ks[e] = load_as<Acc>(k + at);
          if constexpr (!kScalarGate) bs[e] = g[at];
        }
      }
      __syncthreads();
      if constexpr (!kScalarGate) {  // b: cumulative sum down each column, in order
        for (int kk = tid; kk < kw; kk += kThreads) {
          Acc a = Acc(0);
          for (int i = 0; i < nc; ++i) {
            a += bs[i * BK + kk];
            bs[i * BK + kk] = a;
          }
        }
        __syncthreads();
      }
      // A_ij += Σ_k q_ik k_jk exp(b_ik − b_jk) over the tile (scalar gate: the decay comes after K)
      for (int p = tid; p < nc * nc; p += kThreads) {
        const int i = p / nc, j = p % nc;
        if (j > i && kFault != Fault::mask_by_multiply) continue;  // select: j > i is never formed
        Acc a = k0 == 0 ? Acc(0) : A[i * C + j];
        if constexpr (kScalarGate) {
          for (int kk = 0; kk < kw; ++kk) a += qs[i * BK + kk] * ks[j * BK + kk];
        } else {
          for (int kk = 0; kk < kw; ++kk)
            a += qs[i * BK + kk] * (ks[j * BK + kk] * exp_of(bs[i * BK + kk] - bs[j * BK + kk]));
        }
        A[i * C + j] = a;
      }
      __syncthreads();
      for (int e = tid; e < nc * BK; e += kThreads) {  // q ⊙ exp(b), k ⊙ exp(b_last − b)
        const int i = e / BK, kk = e % BK;
        if (kk < kw) {
          const Acc bi = kScalarGate ? bc[i] : bs[e];
          const Acc bl = kScalarGate ? bc[nc - 1] : bs[(nc - 1) * BK + kk];
          qs[e] = qs[e] * exp_of(bi);
          ks[e] = ks[e] * exp_of(bl - bi);
        }
      }
      for (int kk = tid; kk < kw; kk += kThreads) el[kk] = exp_of(kScalarGate ? bc[nc - 1] : bs[(nc - 1) * BK + kk]);
      __syncthreads();
      if (lane < vw) {  // inter-chunk: acc_i += (q_i ⊙ exp(b_i)) S over the tile's rows (old S)
#pragma unroll
        for (int r = 0; r < kRows; ++r) {
          const int i = warp + kWarps * r;
          if (i < nc) {
            Acc a = acc[r];
            for (int kk = 0; kk < kw; ++kk) a += qs[i * BK + kk] * S[(k0 + kk) * BV + lane];
            acc[r] = a;
          }
        }
      }
      // NOTES: this barrier keeps the update below behind every warp's reads of S above.
      if constexpr (kFault != Fault::inter_race) __syncthreads();
      const bool carry = !(kFault == Fault::drop_last_state && nc < C);  // THE FLAW when false
      for (int e = tid; carry && e < kw * BV; e += kThreads) {  // S ← exp(b_last) S + Σ_j k̃_jᵀ v_j
        const int kk = e / BV, vv = e % BV;
        if (vv < vw) {
          Acc s = S[(k0 + kk) * BV + vv];
          if constexpr (kFault == Fault::gate_after_update) {
            for (int j = 0; j < nc; ++j) s += ks[j * BK + kk] * vs[j * BV + vv];
            s = el[kk] * s;  // THE FLAW: the decay after the add
          } else {
            s = el[kk] * s;
            for (int j = 0; j < nc; ++j) s += ks[j * BK + kk] * vs[j * BV + vv];
          }
          if constexpr (kFault == Fault::state_bf16) s = round_state_bf16(s);  // THE FLAW
          S[(k0 + kk) * BV + vv] = s;
        }
      }
      __syncthreads();  // the next tile overwrites qs, ks, bs, el
    }

    if constexpr (kScalarGate || kFault == Fault::mask_by_multiply) {
      for (int p = tid; p < nc * nc; p += kThreads) {
        const int i = p / nc, j = p % nc;
        Acc a = A[i * C + j];
        if constexpr (kFault == Fault::mask_by_multiply) {
          if constexpr (kScalarGate) a = a * exp_of(bc[i] - bc[j]);
          a = a * Acc(j <= i ? 1 : 0);  // THE FLAW: 0 · Inf and 0 · NaN are NaN
        } else {
          if (j > i) continue;
          a = a * exp_of(bc[i] - bc[j]);
        }
        A[i * C + j] = a;
      }
      __syncthreads();
    }
    if (lane < vw) {  // intra-chunk: o_i = scale · (acc_i + Σ_{j≤i} A_ij v_j)
#pragma unroll
      for (int r = 0; r < kRows; ++r) {
        const int i = warp + kWarps * r;
        if (i < nc) {
          Acc a = acc[r];
          const int last = kFault == Fault::mask_by_multiply ? nc - 1 : i;
          for (int j = 0; j <= last; ++j) a += A[i * C + j] * vs[j * BV + lane];
          if (c0 + i < eos) store_from(o + ((c0 + i) * H + h) * V + v0 + lane, scale * a);
        }
      }
    }
    __syncthreads();  // the next chunk overwrites vs, A, bc
  }

  if (hT) {
    for (int64_t e = tid; e < K * BV; e += kThreads) {
      const int64_t kk = e / BV;
      const int vv = int(e % BV);
      if (vv < vw) hT[((n * H + h) * K + kk) * V + v0 + vv] = S[e];
    }
  }
}

inline size_t fwd_workspace_bytes(const Shape& s) { return fwd_split::workspace_bytes(s); }

namespace fwd {

inline Status cuda_status(const char* what, cudaError_t e) {
  return {std::string("glr::cuda::forward: ") + what + ": " + cudaGetErrorName(e) + " (" + cudaGetErrorString(e) +
          ")"};
}

template <class E, class Acc, bool kScalarGate>
Status launch(const FwdParams& p, cudaStream_t stream) {
  const Shape& s = p.shape;
  const int64_t N = s.sequences();
  const size_t bytes = smem_bytes<Acc>(s.K, s.chunk);
  auto* kernel = &sm90_glr_fwd<E, Acc, kScalarGate>;
  if (bytes > 48 * 1024) {
    const cudaError_t e = cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, int(bytes));
    if (e != cudaSuccess) return cuda_status("cudaFuncSetAttribute", e);
  }
  const dim3 grid(unsigned((s.V + Tile<Acc>::BV - 1) / Tile<Acc>::BV), unsigned(s.H), unsigned(N));
  kernel<<<grid, kThreads, bytes, stream>>>(
      static_cast<const E*>(p.q), static_cast<const E*>(p.k), static_cast<const E*>(p.v),
      static_cast<const Acc*>(p.g), static_cast<const Acc*>(p.h0), static_cast<E*>(p.o), static_cast<Acc*>(p.hT),
      s.cu_seqlens, s.T, s.H, s.K, s.V, s.chunk, Acc(p.scale));
  if (const cudaError_t e = cudaGetLastError(); e != cudaSuccess) return cuda_status("sm90_glr_fwd launch", e);
  return {};
}

template <class E, class Acc>
Status launch_gate(const FwdParams& p, cudaStream_t stream) {
  return p.shape.gate == Gate::scalar ? launch<E, Acc, true>(p, stream) : launch<E, Acc, false>(p, stream);
}

}  // namespace fwd

/// Whether launch_fwd runs the tensor-core split forward (glr_fwd_split.cuh) for this shape: bf16
/// and f16 with K <= 256 and chunk 64. The negative controls' faults live in the FFMA kernel: a
/// control that sets one runs it.
inline bool fwd_tensor_cores(const Shape& s) {
  constexpr bool kTensorCores = kFault == Fault::none || kFault == Fault::default_stream;
  return kTensorCores && fwd_split::takes(s);
}

/// Enqueues the forward on `stream` after the checks the kernel needs beyond impl::unsupported.
inline Status launch_fwd(const FwdParams& p, cudaStream_t stream) {
  const Shape& s = p.shape;
  if (s.chunk > fwd::kMaxChunk) return {"glr::cuda::forward: chunk above 64"};
  if (s.H > 65535 || s.sequences() > 65535)
    return {"glr::cuda::forward: H and the number of sequences must be <= 65535 (grid y, z)"};
  const bool any_step = s.B * s.T > 0;
  if (any_step && (!p.q || !p.k || !p.v || !p.g || !p.o))
    return {"glr::cuda::forward: q, k, v, g and o must be non-null when B·T > 0"};
  if (!any_step && !p.hT && !p.saved) return {};  // nothing to write
  return built::for_type(s.dtype, "glr::cuda::forward", [&](auto t) -> Status {
    using E = typename decltype(t)::E;
    if constexpr (sizeof(E) == 2)  // bf16, f16: the split tensor-core kernels where they take the shape
      if (fwd_tensor_cores(s)) return fwd_split::launch<E>(p, stream);
    return fwd::launch_gate<E, typename decltype(t)::Acc>(p, stream);
  });
}

}  // namespace glr::cuda::sm90
