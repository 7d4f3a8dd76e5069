/// glr CUDA family, sm90 — the decay of A's diagonal 16-blocks in the forward split's prep kernel
/// (sm90_glr_fwd_prep, glr_fwd_split.cuh), per column of a block: the factored form
///     q_i k_j 2^(b_i − b_j) = x_i·y_j,   x_i = q_i 2^(b_i − b_ρ),   y_j = k_j 2^(b_ρ − b_j)
/// with ρ the row before the block (b_ρ = 0 for the chunk's first block), where every |b_i − b_ρ|
/// of the block's column is within kSpan; else the per-pair form q_i·(k_j·2^(b_i − b_j)) of the
/// fused kernels, with x = q and y = k. All in fp32 (the diagonal blocks are not MMA operands).
///
/// NOTES: within kSpan both factors lie in [2^-kSpan, 2^kSpan], never 0 nor Inf: a nonfinite q or k
/// meets the same Inf/NaN as in the per-pair form, and x, y leave fp32's normal range only for
/// |q|, |k| beyond 2^(±(126 − kSpan)). A NaN or infinite b (a −Inf or NaN gate in the block or
/// before it) fails `within_span`, so the nonfinite semantics are the per-pair form's exactly: a −Inf
/// gate at step t of the block leaves rows i < t finite, and the pairs j < t <= i at 0. The factored
/// form costs one exp2f per (row, column) instead of one per (pair, column).
///
/// C++17, no CUDA headers: the kernel and the g++ unit test (glr/tests/unit/diag_decay_test.cpp,
/// a host emulation against the per-pair form at gate extremes) include the same file.
#pragma once

#include <math.h>

#if defined(__CUDACC__)
#define GLR_DIAG_HD __host__ __device__ __forceinline__
#else
#define GLR_DIAG_HD inline
#endif

namespace glr::cuda::sm90::diag_decay {

/// The widest |b_i − b_ρ| (log2 units: b = Σ g·log2e) of the factored form.
inline constexpr float kSpan = 32.f;

/// Whether row i's b allows the factored form against b_ρ (false for NaN, ±Inf, a wider span).
GLR_DIAG_HD bool within_span(float b, float bref) { return fabsf(b - bref) <= kSpan; }

/// The q side of a diagonal pair: q_i 2^(b_i − b_ρ) when factored, else q_i.
GLR_DIAG_HD float x_of(float q, float b, float bref, bool factored) { return factored ? q * exp2f(b - bref) : q; }

/// The k side of a diagonal pair: k_j 2^(b_ρ − b_j) when factored, else k_j.
GLR_DIAG_HD float y_of(float k, float b, float bref, bool factored) { return factored ? k * exp2f(bref - b) : k; }

/// acc + the pair's term: x_i·y_j when factored, else the per-pair x_i·(y_j·2^(b_i − b_j)).
GLR_DIAG_HD float add_term(float acc, float x, float y, float bi, float bj, bool factored) {
  return factored ? acc + x * y : acc + x * (y * exp2f(bi - bj));
}

}  // namespace glr::cuda::sm90::diag_decay

#undef GLR_DIAG_HD
