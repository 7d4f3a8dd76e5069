/// glr CUDA family, sm90 — the split forward's third kernel (glr_fwd_split.cuh, 3.), o = scale·(Qg·S_c + A·v),
/// on warpgroup MMAs (wgmma.cuh): taken on sm_90a devices (fwd_split::out_on_wgmma; the A/B run against the
/// WMMA kernel: bench/glr/device_wgmma_ab.sh, bench/results/glr-fwd-split.md "Session 27").
/// Included by glr_fwd_split.cuh only, after launch_out (it uses that file's fwd_split helpers).
///
/// Per (chunk, head, V tile of BV = 64 or 128), 256 threads = two warpgroups, each an m64n64 fp32
/// accumulator: the inter product Qg[64, KW]·S_c[KW, 64] (KW/16 K16 steps) and the intra product
/// A[64, 64]·v[64, 64] (4 steps) issued into the same accumulators, one commit, one wait, o written from
/// the registers as scale·d rounded to E — the same operands (A, v, Qg, S_c as the workspace holds them)
/// and rounding points as sm90_glr_fwd_out; only the fp32 accumulation order differs (inside the MMAs,
/// and A's diagonal blocks now on the tensor core instead of FFMA: a product of two 16-bit values is
/// exact in fp32). BV = 128 (V > 64, KP <= 128): warpgroup w owns columns [64w, 64w + 64). BV = 64: the
/// KW/16 + 4 K16 steps are split evenly between the two warpgroups (the first half, inter steps only; the
/// rest), the second's sums added to the first's through shared memory.
/// Tiles in shared memory, 128-byte swizzled (wgmma_desc.hpp), each 1024-byte aligned: Qg and A K-major
/// (sw128_offset), S_c [KW][BV] and v [C][BV] N-major (mn_sw128_offset, imm-trans-b = 1); KW = max(KP, 64)
/// (one whole 128-byte line; K columns past K are zero-filled in Qg and rows past K in S_c).
/// NOTES: causality. The m64 instruction multiplies every element of A, its selected zeros (j > i) too,
/// by v_j: with a non-finite v_j that is 0·Inf = NaN in rows the reference leaves finite (DESIGN §7: mask
/// by select, never by multiplying). So each thread checks the v chunks it loaded, and a CTA whose v tile
/// holds any NaN/Inf (__syncthreads_or) takes sm90_glr_fwd_out's path (fwd_split::out_tile, WMMA + FFMA,
/// V sub-tiles of 64) for the tile, which multiplies only j <= i. Every pass but sm_90a (wgmma exists only
/// there: sm_100a) takes that path always, with no trap.
#pragma once

#include <cstdint>
#include <type_traits>

#include "glr/cuda/sm90/tile_sw128.cuh"
#include "glr/cuda/sm90/wgmma.cuh"
#include "glr/cuda/sm90/wgmma_desc.hpp"

namespace glr::cuda::sm90 {

namespace fwd_split {

/// V tile of the wgmma out kernel: two warpgroups of N = 64 where V > 64 and the tiles fit three CTAs per
/// SM (KP <= 128); else 64, the K16 steps split between the warpgroups.
__host__ __device__ constexpr int out_wgmma_bv(int KP, int64_t V) { return V > 64 && KP <= 128 ? 128 : 64; }

/// Shared memory of sm90_glr_fwd_out_wgmma (byte offsets from the first 1024-byte boundary of the dynamic
/// shared memory; `bytes` includes the slack to reach it). The out_tile path (non-finite v, not sm_90a)
/// reuses the same memory for OutSmem<KP, 64>; the BV = 64 form's second warpgroup leaves its partial
/// sums at `red` once every MMA has read its tiles.
template <int KP, int BV>
struct OutWgmmaSmem {
  static constexpr int KW = KP < 64 ? 64 : KP;
  static constexpr size_t qs = 0;                           // Qg  [C, KW]  K-major, sw128 (E)
  static constexpr size_t ss = qs + size_t(C) * KW * 2;     // S_c [KW, BV] N-major, sw128 (E)
  static constexpr size_t as = ss + size_t(KW) * BV * 2;    // A   [C, C]   K-major, sw128 (E)
  static constexpr size_t vs = as + size_t(C) * C * 2;      // v   [C, BV]  N-major, sw128 (E)
  static constexpr size_t tiles = vs + size_t(C) * BV * 2;
  static constexpr size_t red = 0;                          // [C·64/128 registers][128 threads] (fp32)
  static constexpr size_t red_bytes = size_t(C) * 64 * 4;
  static constexpr size_t fallback = OutSmem<KP, 64>::bytes;
  static constexpr size_t bytes = kSw128Atom + (tiles > fallback ? tiles : fallback);
  static_assert(ss % kSw128Atom == 0 && as % kSw128Atom == 0 && vs % kSw128Atom == 0,
                "every 128B-swizzled tile starts on a 1024-byte boundary");
  static_assert(red + red_bytes <= tiles, "the partial sums fit where the tiles were");
  static_assert(BV == 64 || BV == 128, "one or two 64-column warpgroup tiles");
};

}  // namespace fwd_split

/// 3. (GLR_FWD_WGMMA) o = scale·((q ⊙ 2^b)·S_c + A·v) on wgmma; grid (NT, H·ceil(V / BV), N) (varlen:
/// chunk_grid), 256 threads.
template <class E, int BV, int KP>
__global__ void __launch_bounds__(fwd_split::kThreads)
    sm90_glr_fwd_out_wgmma(const E* __restrict__ Qg, const E* __restrict__ v, const E* __restrict__ A,
                           const E* __restrict__ Sws, E* __restrict__ o, const int64_t* __restrict__ cu, int64_t T,
                           int64_t H, int64_t K, int64_t V, int64_t NT, int64_t N, float scale) {
  using namespace fwd_split;
  using L = OutWgmmaSmem<KP, BV>;
  extern __shared__ __align__(1024) unsigned char smem_wg[];
  unsigned char* sm = smem_wg + (kSw128Atom - wgmma::smem_addr(smem_wg) % kSw128Atom) % kSw128Atom;
  const int64_t nvt = cdiv(V, BV);
  const int64_t h = blockIdx.y / nvt, v0 = (blockIdx.y % nvt) * BV;
  int64_t bos, eos, chunk;
  const int64_t slot = chunk_cta(cu, blockIdx.x, blockIdx.z, N, T, NT, &chunk, &bos, &eos);
  const int64_t c0 = bos + chunk * C;
  if (c0 >= eos) return;
#if defined(GLR_SM90A_DEVICE)
  {
    constexpr int KW = L::KW, kInter = KW / 16, kIntra = C / 16;
    constexpr auto ab = std::is_same_v<E, __nv_bfloat16> ? wgmma::Ab::bf16 : wgmma::Ab::f16;
    const int nc = int(eos - c0 < C ? eos - c0 : C), vw = int(V - v0 < BV ? V - v0 : BV);
    async_tile_sw128<KW>(sm + L::qs, Qg + (c0 * H + h) * K, H * K, C, nc, int(K));
    async_tile_sw128<BV>(sm + L::vs, v + (c0 * H + h) * V + v0, H * V, C, nc, vw);
    async_tile_sw128<C>(sm + L::as, A + (slot * H + h) * C * C, C, C, C, C);
    async_tile_sw128<BV>(sm + L::ss, Sws + (slot * H + h) * K * V + v0, V, KW, int(K), vw);
    cp_async_commit();
    cp_async_wait<0>();
    const bool bad = nonfinite_sw128<BV, E>(sm + L::vs, C);
    wgmma::fence_proxy_async();  // the tensor cores read what cp.async and the element copies wrote
    if (!__syncthreads_or(bad)) {  // uniform per CTA
      const int wg = threadIdx.x / 128, t = threadIdx.x % 128;
      const uint32_t qa = wgmma::smem_addr(sm + L::qs), sa = wgmma::smem_addr(sm + L::ss),
                     aa = wgmma::smem_addr(sm + L::as), va = wgmma::smem_addr(sm + L::vs);
      float d[32];  // [64, 64] of this warpgroup: (acc_row(t, i), acc_col(t, i))
      wgmma::fence();
      if constexpr (BV == 128) {  // warpgroup wg: columns [64·wg, 64·wg + 64), every K16 step
#pragma unroll
        for (int kk = 0; kk < kInter; ++kk)
          wgmma::mma_ss<64, ab, true>(d, sw128_desc(qa, kk, C), mn_sw128_desc(sa + wg * KW * 128, kk, KW), kk > 0);
#pragma unroll
        for (int kk = 0; kk < kIntra; ++kk)
          wgmma::mma_ss<64, ab, true>(d, sw128_desc(aa, kk, C), mn_sw128_desc(va + wg * C * 128, kk, C), true);
      } else {  // the K16 steps split evenly: warpgroup 0 the first half (inter), warpgroup 1 the rest
        // NOTES: the split is in the descriptors, not in the control flow: the same wgmma sequence in both
        // warpgroups. A branch per warpgroup made ptxas serialize the wgmma (C7520, "compiler-inserted
        // WG.AR in divergent path"), and a `?:` between descriptors became a branch that made it inject a
        // warpgroup.arrive before each (C7519); ptxas -v reports neither for this form (nvcc 13.0).
        constexpr int kHalf = (kInter + kIntra) / 2;
        static_assert((kInter + kIntra) % 2 == 0 && kHalf <= kInter, "warpgroup 0 takes inter steps only");
        constexpr int kBoth = kInter - kHalf;  // steps inter in both warpgroups; after them, warpgroup 1's are intra
        const uint64_t w1 = uint64_t(wg);        // 0 or 1: selects by arithmetic (a select here was a branch)
#pragma unroll
        for (int j = 0; j < kHalf; ++j) {
          uint64_t ad, bd;
          if (j < kBoth) {  // compile-time: inter step j (warpgroup 0) or kHalf + j (warpgroup 1)
            const int st = j + wg * kHalf;
            ad = sw128_desc(qa, st, C);
            bd = mn_sw128_desc(sa, st, KW);
          } else {  // compile-time: inter step j (warpgroup 0) or intra step j − kBoth (warpgroup 1)
            const uint64_t a0 = sw128_desc(qa, j, C), b0 = mn_sw128_desc(sa, j, KW);
            ad = a0 + w1 * (sw128_desc(aa, j - kBoth, C) - a0);
            bd = b0 + w1 * (mn_sw128_desc(va, j - kBoth, C) - b0);
          }
          wgmma::mma_ss<64, ab, true>(d, ad, bd, j > 0);
        }
      }
      wgmma::commit_group();
      wgmma::wait_group<0>();
      wgmma::fence_operands(d);
      if constexpr (BV == 64) {
        float* red = reinterpret_cast<float*>(sm + L::red);
        __syncthreads();  // every MMA has read its tiles: red takes their place
        if (wg == 1) {
#pragma unroll
          for (int i = 0; i < 32; ++i) red[i * 128 + t] = d[i];
        }
        __syncthreads();
        if (wg == 1) return;
#pragma unroll
        for (int i = 0; i < 32; ++i) d[i] += red[i * 128 + t];
      }
      const int vwl = vw - 64 * wg;
      E* ot = o + (c0 * H + h) * V + v0 + 64 * wg;
#pragma unroll
      for (int i = 0; i < 32; i += 2) {  // two adjacent columns per register pair
        const int r = acc_row(t, i), cc = acc_col(t, i);
        if (r >= nc) continue;
        E* p = ot + int64_t(r) * H * V + cc;
        alignas(4) E x[2] = {from_f<E>(scale * d[i]), from_f<E>(scale * d[i + 1])};
        if (cc + 1 < vwl && reinterpret_cast<uintptr_t>(p) % 4 == 0) {
          *reinterpret_cast<uint32_t*>(p) = *reinterpret_cast<const uint32_t*>(x);
        } else {
          if (cc < vwl) p[0] = x[0];
          if (cc + 1 < vwl) p[1] = x[1];
        }
      }
      return;
    }
  }
#endif
  // sm90_glr_fwd_out's path: a non-finite v tile, or no wgmma in this pass.
  // NOTES: two calls, not a loop over the sub-tiles: the loop took the sm_90a kernel from 70 registers to
  // 201 (BV = 128, KP = 64; ptxas, nvcc 13.0).
  out_tile<E, 64, KP>(sm, Qg, v, A, Sws, o, cu, T, H, K, V, NT, N, scale, h, v0);
  if (BV == 128 && v0 + 64 < V) {  // uniform per CTA
    __syncthreads();  // the first sub-tile's shared tiles are read no more
    out_tile<E, 64, KP>(sm, Qg, v, A, Sws, o, cu, T, H, K, V, NT, N, scale, h, v0 + 64);
  }
}

namespace fwd_split {

/// The wgmma out kernel's launch on place(p, layout(p.shape)), K <= KP; its own V tile (out_wgmma_bv).
template <class E, int KP>
Status launch_out_wgmma(const FwdParams& p, cudaStream_t stream) {
  const Shape& s = p.shape;
  const Layout l = layout(s);
  if (l.NT == 0) return {};
  auto* ws = place(p, l).st;
  auto go = [&](auto bv) -> Status {
    constexpr int BV = decltype(bv)::value;
    constexpr size_t bytes = OutWgmmaSmem<KP, BV>::bytes;
    auto* kernel = &sm90_glr_fwd_out_wgmma<E, BV, KP>;
    if (Status st = allow_smem(kernel, bytes); !st.ok()) return st;
    const ChunkGrid cg = chunk_grid(s, l.NT, l.slots);
    kernel<<<dim3(unsigned(cg.x), unsigned(s.H * cdiv(s.V, BV)), unsigned(cg.z)), kThreads, bytes, stream>>>(
        reinterpret_cast<const E*>(ws + l.Qg), static_cast<const E*>(p.v), reinterpret_cast<const E*>(ws + l.A),
        reinterpret_cast<const E*>(ws + l.S), static_cast<E*>(p.o), s.cu_seqlens, s.T, s.H, s.K, s.V, l.NT,
        s.sequences(), float(p.scale));
    return {};
  };
  if (out_wgmma_bv(KP, s.V) == 128) return go(std::integral_constant<int, 128>{});
  return go(std::integral_constant<int, 64>{});
}

}  // namespace fwd_split

}  // namespace glr::cuda::sm90
