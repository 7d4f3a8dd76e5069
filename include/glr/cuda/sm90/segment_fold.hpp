/// glr CUDA family, sm90 — the segmented walk's arithmetic (docs/glr.md, "The segmented walk"):
/// the forward walk (glr_fwd_split.cuh) and the backward's reverse state pass (glr_bwd_split.cuh)
/// cut a long sequence into segments; each segment walks from 0 to (P, U), the product of its
/// per-chunk decays and its end state, and the state entering a segment is the incoming one folded
/// through the earlier segments, s ← P·s + U. Per element of the state:
///
///   walk:  s ← e_c·s + a_c  for every chunk c            (e_c = 2^(b_last) of the row, a_c the MMA sum)
///   fold:  s ← P·s + U,  P = Π e_c,  U = the walk from 0
///
/// P keeps the walk's non-finite classes: 0 once a factor is 0 (an infinite s meets Inf·0 = NaN, as
/// the walk does there), NaN with a NaN factor, and a product of positive factors that underflows is
/// kept at the smallest denormal instead of 0 (an infinite s stays infinite, as the walk keeps it
/// through positive factors; a finite s gets at most 2^-149 of its value). The sums are regrouped
/// (a segment's sum first), which the fp32-state error model covers.
///
/// C++17, no CUDA headers: the kernels and the g++ unit test (glr/tests/unit/segment_fold_test.cpp,
/// against the walk at extremes) include the same file.
#pragma once

#if defined(__CUDACC__)
#define GLR_SEG_HD __host__ __device__ __forceinline__
#else
#define GLR_SEG_HD inline
#endif

namespace glr::cuda::sm90::segment_fold {

/// The smallest positive fp32 (a denormal, 2^-149).
inline constexpr float kTinyDecay = 1.401298464e-45f;

/// P · e, a segment's decay product after one more chunk's factor e (P starts at 1).
GLR_SEG_HD float decay_product(float p, float e) {
  const float q = p * e;
  return (q == 0.f && p != 0.f && e != 0.f) ? kTinyDecay : q;
}

/// The state entering the next segment: P·s + U.
GLR_SEG_HD float fold(float p, float s, float u) { return p * s + u; }

}  // namespace glr::cuda::sm90::segment_fold
