/// glr — geometry of one gated-linear-recurrence problem (DESIGN §7), shared by the fp64 reference,
/// the CPU chunked algorithm and the tests. Header-only, no dependencies.
///
///   S_t = Diag(exp(g_t)) S_{t-1} + k_tᵀ v_t,   o_t = scale · q_t S_t,   S_{-1} = h0,  hT = S_last
///
/// Layout (row-major, logical): q, k [B,T,H,K]; v, o [B,T,H,V]; g [B,T,H,K] (vector gate) or
/// [B,T,H] (scalar gate); h0, hT [S,H,K,V] with S = B (fixed length) or N (varlen: B = 1 and
/// cu_seqlens[N+1], first 0, last T, non-decreasing, empty sequences allowed).
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>

namespace glr {

enum class GateForm { vector, scalar };

struct Problem {
  int64_t B = 1, T = 1, H = 1, K = 1, V = 1;
  GateForm gate = GateForm::vector;
  const int64_t* cu_seqlens = nullptr;  ///< varlen when non-null (B must be 1)
  int64_t N = 0;                        ///< number of sequences when varlen

  bool varlen() const { return cu_seqlens != nullptr; }
  /// Number of independent sequences (= rows of h0/hT).
  int64_t sequences() const { return varlen() ? N : B; }
  /// Elements of g per (b, t, h): K for the vector gate, 1 for the scalar gate.
  int64_t gate_width() const { return gate == GateForm::vector ? K : 1; }
  /// Batch row and time range [t0, t1) of sequence n.
  int64_t batch_of(int64_t n) const { return varlen() ? 0 : n; }
  int64_t begin(int64_t n) const { return varlen() ? cu_seqlens[n] : 0; }
  int64_t end(int64_t n) const { return varlen() ? cu_seqlens[n + 1] : T; }

  int64_t qk_elems() const { return B * T * H * K; }
  int64_t v_elems() const { return B * T * H * V; }
  int64_t g_elems() const { return B * T * H * gate_width(); }
  int64_t state_elems() const { return sequences() * H * K * V; }

  /// Throws std::invalid_argument when the geometry or cu_seqlens is not valid.
  void validate() const {
    auto fail = [](const std::string& why) { throw std::invalid_argument("glr problem: " + why); };
    if (B < 1 || T < 0 || H < 1 || K < 1 || V < 1) fail("sizes must be positive");
    if (!varlen()) return;
    if (B != 1) fail("varlen needs B == 1");
    if (N < 1) fail("varlen needs N >= 1");
    if (cu_seqlens[0] != 0) fail("cu_seqlens[0] must be 0");
    if (cu_seqlens[N] != T) fail("cu_seqlens[N] must be T");
    for (int64_t n = 0; n < N; ++n)
      if (cu_seqlens[n + 1] < cu_seqlens[n]) fail("cu_seqlens must be non-decreasing");
  }
};

}  // namespace glr
