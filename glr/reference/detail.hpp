// glr reference internals: per-slice gathering, the exp-argument magnitudes W of the cumulative
// log-gates, and the products the error data use. Private to glr/reference/.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <deque>
#include <vector>

#include "glr/problem.hpp"
#include "glr/reference/reference.hpp"

namespace glr::detail {

/// a·b where an exact zero wins over Inf: an exactly vanished decay (g = −Inf) carries no error.
inline double bmul(double a, double b) { return (a == 0 || b == 0) ? 0.0 : a * b; }

/// M_r of the exp-argument term (glr/reference/reference.hpp) for one gate column g[r·stride], r < L: the
/// largest |Σ_{c..r} g| over the chunk starts c ∈ [r − kMaxChunk + 1, r], c ≥ 0, that a chunk of at
/// most kMaxChunk steps allows — the largest |b_r| any legitimate chunking can form. With prefix
/// sums P (P before step 0 is 0), M_r = max(P_r − min P_{c−1}, max P_{c−1} − P_r) over the window
/// (monotone deques, O(L); for g ≤ 0 it is |Σ of the kMaxChunk steps ending at r|). A window that
/// holds a non-finite gate gives its plain sum (±Inf or NaN), as such a chunk's b would.
inline void chunk_start_magnitudes(const double* g, int64_t stride, int64_t L, double* M, int64_t mstride) {
  constexpr int64_t Wn = kMaxChunk;
  std::vector<double> P(L + 1, 0.0);  // P[k] = Σ g over [base, k), base = the step after the last non-finite
  std::deque<int64_t> lo, hi;         // indices k of P, increasing; P[lo] increasing, P[hi] decreasing
  int64_t nf = -1;                    // the last step with a non-finite gate
  for (int64_t r = 0; r < L; ++r) {
    const double gr = g[r * stride];
    if (!std::isfinite(gr)) {
      nf = r;
      lo.clear();
      hi.clear();
      P[r + 1] = 0;
    } else {
      // candidate chunk start c = r: P[r] (reset to 0 right after a non-finite gate)
      while (!lo.empty() && P[lo.back()] >= P[r]) lo.pop_back();
      lo.push_back(r);
      while (!hi.empty() && P[hi.back()] <= P[r]) hi.pop_back();
      hi.push_back(r);
      P[r + 1] = P[r] + gr;
    }
    const int64_t first = std::max<int64_t>(0, r - Wn + 1);
    if (nf >= first) {  // the window holds a non-finite gate
      double sum = 0;
      for (int64_t c = first; c <= r; ++c) sum += g[c * stride];
      M[r * mstride] = std::fabs(sum);
      continue;
    }
    while (lo.front() < first) lo.pop_front();
    while (hi.front() < first) hi.pop_front();
    M[r * mstride] = std::max(P[r + 1] - P[lo.front()], P[hi.front()] - P[r + 1]);
  }
}

/// One (sequence, head) slice of the operands, copied contiguous: q, k [L,K], v, dO [L,V],
/// g [L,GW], h0, dhT [K,V] (zero when absent), and W [L,GW]: M_r / kBoundC, the cumulative-gate
/// magnitude of the exp-argument term in the units of amp (c·u).
struct SliceIn {
  int64_t n = 0, h = 0, b = 0, t0 = 0, L = 0, K = 1, V = 1, GW = 1, Lc = 0;
  std::vector<double> q, k, v, g, h0, dO, dhT, W;
  double scale = 1;

  void gather(const Problem& p, int64_t n_, int64_t h_, const double* Q, const double* Kk,
              const double* Vv, const double* G, const double* H0, const double* DO,
              const double* DHT, double scale_) {
    n = n_; h = h_; b = p.batch_of(n); t0 = p.begin(n); L = p.end(n) - t0;
    K = p.K; V = p.V; GW = p.gate_width(); Lc = std::min<int64_t>(kMaxChunk, L);
    scale = scale_;
    const int64_t H = p.H, T = p.T;
    q.resize(L * K); k.resize(L * K); v.resize(L * V); g.resize(L * GW);
    dO.assign(DO ? L * V : 0, 0.0);
    for (int64_t i = 0; i < L; ++i) {
      const int64_t row = (b * T + t0 + i) * H + h;
      std::copy_n(Q + row * K, K, q.begin() + i * K);
      std::copy_n(Kk + row * K, K, k.begin() + i * K);
      std::copy_n(Vv + row * V, V, v.begin() + i * V);
      std::copy_n(G + row * GW, GW, g.begin() + i * GW);
      if (DO) std::copy_n(DO + row * V, V, dO.begin() + i * V);
    }
    const int64_t st = (n * H + h) * K * V;
    h0.assign(K * V, 0.0);
    dhT.assign(K * V, 0.0);
    if (H0) std::copy_n(H0 + st, K * V, h0.begin());
    if (DHT) std::copy_n(DHT + st, K * V, dhT.begin());
    W.assign(L * GW, 0.0);
    for (int64_t x = 0; x < GW; ++x) chunk_start_magnitudes(g.data() + x, GW, L, W.data() + x, GW);
    for (double& w : W) w /= kBoundC;
  }
  double a(int64_t i, int64_t x) const { return std::exp(g[i * GW + (GW == 1 ? 0 : x)]); }
  double w(int64_t i, int64_t x) const { return i < 0 ? 0.0 : W[i * GW + (GW == 1 ? 0 : x)]; }
};

/// The forward recurrence of one slice with its error data, per state element (x, y):
///   S  the state;  A0 = Σ|term|;  A1 = Σ|term|·(t − s + 1);
///   Y = Σ_{s<t}|term|·(Σ_{r=s+1..t} W_r + kScanDepth·W_s) (amp adds kScanDepth·W_t)
///   dec = exp(g_t)·A0_{t−1} (the part of A0 from s < t).
struct FwdState {
  int64_t KV = 0;
  std::vector<double> S, A0, A1, Y, dec;

  void init(const SliceIn& s) {
    KV = s.K * s.V;
    S = s.h0;
    A0.resize(KV); A1.resize(KV);
    for (int64_t e = 0; e < KV; ++e) A0[e] = A1[e] = std::fabs(s.h0[e]);
    Y.assign(KV, 0.0);
    dec.assign(KV, 0.0);
  }
  /// S_{i−1} → S_i.
  void step(const SliceIn& s, int64_t i) {
    const int64_t K = s.K, V = s.V;
    for (int64_t x = 0; x < K; ++x) {
      const double a = s.a(i, x), W = s.w(i, x), Wp = s.w(i - 1, x);
      const double kx = s.k[i * K + x], kpx = i > 0 ? s.k[(i - 1) * K + x] : 0.0;
      for (int64_t y = 0; y < V; ++y) {
        const int64_t e = x * V + y;
        const double term = kx * s.v[i * V + y];
        const double prev = i > 0 ? std::fabs(kpx * s.v[(i - 1) * V + y]) : 0.0;
        Y[e] = bmul(a, Y[e] + bmul(W, A0[e]) + kScanDepth * bmul(Wp, prev));
        A1[e] = bmul(a, A1[e] + A0[e]) + std::fabs(term);
        dec[e] = bmul(a, A0[e]);
        A0[e] = dec[e] + std::fabs(term);
        S[e] = a * S[e] + term;
      }
    }
  }
  /// Error data of S_i[e] (after step(i)): depth·mag part and amp part, in units of u.
  double nm(const SliceIn& s, int64_t e) const { return A1[e] + double(s.Lc + 2) * A0[e]; }
  double amp(const SliceIn& s, int64_t i, int64_t e) const {
    return Y[e] + kScanDepth * bmul(s.w(i, e / s.V), dec[e]);
  }
};

/// Underflow slack per output element: roundings on the longest path × the largest factor
/// (inputs' magnitude to `power`, and the scale) a subnormal error can meet on its way out.
inline double underflow_slack(const Problem& p, int64_t L, double max_abs_input, double scale, int power) {
  const double f = std::pow(std::max(1.0, max_abs_input), power) * std::max(1.0, std::fabs(scale));
  return double(2 * (L + kMaxChunk + p.K + p.V) + 10) * f;
}

inline double max_abs(const double* x, int64_t n) {
  double m = 0;
  if (x)
    for (int64_t i = 0; i < n; ++i)
      if (std::isfinite(x[i])) m = std::max(m, std::fabs(x[i]));
  return m;
}

/// The largest finite value of x[0..n).
inline double max_finite_of(const double* x, int64_t n) {
  double m = 0;
  for (int64_t i = 0; i < n; ++i)
    if (std::isfinite(x[i])) m = std::max(m, x[i]);
  return m;
}

/// max over i and j ∈ (i − kMaxChunk, i] of Σ_x |a_i[x]|·|b_j[x]| (rows of width W, finite
/// products only): the largest magnitude of an intra-chunk product such as A_ij = q_i·k_j or
/// do_i·v_j, at any chunk size up to kMaxChunk.
inline double max_window_dot(const std::vector<double>& a, const std::vector<double>& b, int64_t L, int64_t W) {
  double m = 0;
  for (int64_t i = 0; i < L; ++i)
    for (int64_t j = std::max<int64_t>(0, i - kMaxChunk + 1); j <= i; ++j) {
      double s = 0;
      for (int64_t x = 0; x < W; ++x) s += std::fabs(a[i * W + x]) * std::fabs(b[j * W + x]);
      if (std::isfinite(s)) m = std::max(m, s);
    }
  return m;
}

/// Stores a budget nm (= depth·mag, units of u) as depth = nm / mag; where the direct magnitude is
/// 0 but the budget is not (dg when the decay vanishes: the chunked identity still cancels terms
/// of the size of q·dq), the budget joins amp instead.
inline void put_budget(double nm, double mag, double& depth, double& amp) {
  if (mag > 0) {
    depth = nm / mag;
  } else {
    depth = 0;
    amp += nm;
  }
}

}  // namespace glr::detail
