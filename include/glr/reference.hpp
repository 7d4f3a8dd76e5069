/// glr — the fp64 reference of the gated linear recurrence (DESIGN §7), forward and backward
/// (reverse mode derived by hand), in recurrent form, for both gate forms and varlen. Beside every
/// output value it returns what the kcv error model (DESIGN §4) needs. Plain functions on
/// contiguous row-major double arrays (layouts in glr/problem.hpp); no kcv dependency, so CUDA
/// tests can use it too.
///
/// Error data, per output element r = Σ terms:
///   mag   = Σ |term|
///   depth = effective number of roundings a term passes (mag-weighted average), so that
///           depth·mag = Σ_term |term| · (len_term + contraction + 2), where len_term counts
///           the decay chain (t − s + 1) plus the longest chunk sum (min(64, sequence length))
///   amp   = Σ_term |term| · ζ_term: the absolute error of the term's exp argument in units of u.
///           A chunked evaluation forms exp(b_t − b_s) from cumulative log-gates b summed from its
///           chunk start; each addition errs by u·|b_r| ≤ u·W_r, W_r = |Σ of g over the 64
///           steps ending at r|, hence ζ = Σ_{r=s+1..t} W_r + 8·(W_s + W_t) (the 8: a tree scan
///           of a 64-chunk has depth 6). ζ = 0 for s = t: exp(0) = 1 exactly in every order.
///   under = number of roundings that may underflow (each loses at most one fp32 subnormal ulp,
///           2^-149), already multiplied by the largest factor such an error can meet later.
/// The kcv contract turns these into |got − r| ≤ c·u·(depth·mag + amp + under·2^-149/u) + u_out·|r|.
/// dg carries, on top of its direct form Σ_v dS_t ⊙ (exp(g_t) S_{t−1}), the budget of the chunked
/// identity dg_t = Σ_{t'=t..e} (q⊙dq − k⊙dk)_{t'} + Σ_v G ⊙ S_e (e = chunk end ≤ t + 63).
#pragma once

#include <cstdint>
#include <vector>

#include "glr/problem.hpp"

namespace glr {

/// Which evaluation the reference performs.
enum class Order {
  /// The recurrence, step by step, sums in natural order: the reference values and error data.
  sequential,
  /// The chunk-64 form of glr/cpu_chunked.hpp in fp64, exp factors and decayed products below
  /// FLT_MIN flushed to zero as an fp32 device may: values only (error data left zero). Its
  /// non-finite classes differ from the sequential ones exactly where the class depends on the
  /// evaluation order (Inf · underflowed decay, −Inf − −Inf in cumulative gates, …).
  chunked,
};

/// One output: per element (row-major) the value and the error-model data described above.
struct Estimate {
  std::vector<double> value, mag, depth, amp, under;
  void resize(std::size_t n) {
    value.assign(n, 0);
    mag.assign(n, 0);
    depth.assign(n, 0);
    amp.assign(n, 0);
    under.assign(n, 0);
  }
};

/// Forward operands: q, k [B,T,H,K]; v [B,T,H,V]; g [B,T,H,K] or [B,T,H]; h0 [S,H,K,V] (null: 0).
struct FwdInputs {
  const double *q = nullptr, *k = nullptr, *v = nullptr, *g = nullptr, *h0 = nullptr;
  double scale = 1;
};
/// Backward operands: the forward's, plus dO [B,T,H,V] and dhT [S,H,K,V] (null: 0).
struct BwdInputs {
  const double *q = nullptr, *k = nullptr, *v = nullptr, *g = nullptr, *h0 = nullptr;
  const double *dO = nullptr, *dhT = nullptr;
  double scale = 1;
};

struct FwdResult { Estimate o, hT; };                  // o [B,T,H,V], hT [S,H,K,V]
struct BwdResult { Estimate dq, dk, dv, dg, dh0; };    // dg shaped like g, dh0 like h0

/// Throws std::invalid_argument for an invalid problem.
FwdResult reference_fwd(const Problem& p, const FwdInputs& in, Order order = Order::sequential);
BwdResult reference_bwd(const Problem& p, const BwdInputs& in, Order order = Order::sequential);

/// The longest chunk a legitimate chunked evaluation may use; the error data assume it.
inline constexpr int64_t kMaxChunk = 64;

}  // namespace glr
