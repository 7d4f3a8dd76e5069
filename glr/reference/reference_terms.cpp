// glr fp64 reference: the classes of every output from the terms of its expansion (kcv/terms.hpp,
// docs/nonfinite-classes.md), for inputs that hold NaN or ±Inf. Every output is a sum of products
// of inputs, the scale and decays exp(Σ g); the state carries the kinds of its terms through the
// recurrence as it carries values, and each output combines them as its value does.
//
// Two things are particular to the chunked forms a legitimate kernel uses (glr/cpu_chunked.hpp):
//  - a decay over (s, i] is formed as exp(b_i − b_s) from prefix sums b that start at a chunk start
//    c0 ≤ s, so a gate that is not finite at a step r ≤ s (r in the same sequence: the chunk may be
//    as long as it) appears in both b_i and b_s: Inf − Inf, NaN − NaN. Such a term's decay is NaN in
//    some orders (Terms::nan_maybe): the terms created at s (k_s v_s in the state, the dS terms at
//    the lower end s of their span). Decays from a chunk start (exp(b_i), exp(b_last)) are direct.
//  - a kernel may also factor a decay over (s, i] at a point ρ in between, exp(b_i − b_ρ)·exp(b_ρ − b_s)
//    with prefix sums from a chunk start c0 ≤ ρ (FLA's intra-chunk sub-blocks, glr's factored
//    off-diagonal A blocks): a non-finite gate at r with c0 ≤ r ≤ ρ is then Inf − Inf in the first
//    factor. Chunks and sub-blocks may start anywhere in the sequence, so every term whose span
//    ends at i after a non-finite gate at some r < i is maybe-NaN (Gates::before): in the forward
//    the terms the state holds when step i decays it, in the backward the terms created at i
//    (q_i do_i), which reach every earlier step. An output that already holds a maybe-NaN term
//    (the forward's o_i) is unchanged by it; gradients at steps before the gate and hT are not.
//  - dg is formed by the chunk identity dg_t = Σ_{t'=t..e} (q⊙dq − k⊙dk)_{t'} + Σ_v G_e ⊙ S_e
//    (e the end of t's chunk, G_e the gradient reaching S_e from later steps), whose terms are not
//    those of the direct form exp(g_t)·Σ_v dS_t ⊙ S_{t−1}: they cancel in exact arithmetic, not
//    with infinities among them. Every chunk end e ≥ t is some chunk size's: the classes of the
//    direct form and of the identity at every e are all accepted.
#include <algorithm>
#include <cmath>

#include "glr/reference/reference.hpp"
#include "detail.hpp"

namespace glr {

namespace {

using kcv::Terms;

/// The smallest normal of the precision a kernel forms partial products in: an fp32 device may
/// flush below FLT_MIN (bf16 has fp32's range); an f16 MMA operand below 2^-14.
double tiny_of(OperandDtype o) { return o == OperandDtype::f16 ? 0x1p-14 : 0x1p-126; }

/// Per slice: the decay factor exp(g_i) of every step and gate column, and whether a gate at a
/// step ≤ i of the sequence is not finite (then terms created at i have a maybe-NaN decay).
struct Gates {
  int64_t GW = 1;
  std::vector<Terms> dec;
  std::vector<uint8_t> upto;
  void build(const detail::SliceIn& s) {
    GW = s.GW;
    dec.resize(s.L * GW);
    upto.assign(s.L * GW, 0);
    for (int64_t i = 0; i < s.L; ++i)
      for (int64_t x = 0; x < GW; ++x) {
        const double g = s.g[i * GW + x];
        dec[i * GW + x] = Terms::exp_factor(g);
        upto[i * GW + x] = !std::isfinite(g) || (i > 0 && upto[(i - 1) * GW + x]);
      }
  }
  int64_t col(int64_t x) const { return GW == 1 ? 0 : x; }
  const Terms& decay(int64_t i, int64_t x) const { return dec[i * GW + col(x)]; }
  bool maybe(int64_t i, int64_t x) const { return upto[i * GW + col(x)] != 0; }
  /// Whether a gate at a step < i is not finite: a decay over a span ending at i may be factored
  /// at a point after it (Inf − Inf), so the terms reaching i across such a span are maybe-NaN.
  bool before(int64_t i, int64_t x) const { return i > 0 && maybe(i - 1, x); }
};

bool finite(const std::vector<double>& x) {
  return std::all_of(x.begin(), x.end(), [](double v) { return std::isfinite(v); });
}

/// Whether every operand of the slice is finite: then so is every term of its outputs, which keep
/// kClassFinite (only the slices an injection reaches are expanded).
bool finite(const detail::SliceIn& s) {
  return finite(s.q) && finite(s.k) && finite(s.v) && finite(s.g) && finite(s.h0) && finite(s.dO) && finite(s.dhT);
}

std::vector<Terms> factors(const std::vector<double>& x) {
  std::vector<Terms> t(x.size());
  for (std::size_t i = 0; i < x.size(); ++i) t[i] = Terms::factor(x[i]);
  return t;
}

/// S_i = exp(g_i) ⊙ S_{i−1} + k_iᵀ v_i on terms; new terms maybe-NaN after a non-finite gate at a
/// step ≤ i, the terms carried maybe-NaN after one at a step < i (a factoring point between).
void step_state(const detail::SliceIn& s, const Gates& gt, const std::vector<Terms>& k,
                const std::vector<Terms>& v, int64_t i, Terms* S) {
  for (int64_t x = 0; x < s.K; ++x) {
    const Terms& a = gt.decay(i, x);
    const bool maybe = gt.maybe(i, x), carried = gt.before(i, x);
    for (int64_t y = 0; y < s.V; ++y) {
      Terms& e = S[x * s.V + y];
      e = (a * e).maybe_nan(carried) + (k[i * s.K + x] * v[i * s.V + y]).maybe_nan(maybe);
    }
  }
}

}  // namespace

bool any_nonfinite(const double* x, int64_t n) {
  if (x)
    for (int64_t i = 0; i < n; ++i)
      if (!std::isfinite(x[i])) return true;
  return false;
}

void classify_fwd(const Problem& p, const FwdInputs& in, FwdResult& out) {
  const double tiny = tiny_of(in.operands);
  const int64_t K = p.K, V = p.V, H = p.H, T = p.T;
  const Terms sc = Terms::factor(in.scale);
  detail::SliceIn s;
  Gates gt;
  std::vector<Terms> S;
  for (int64_t n = 0; n < p.sequences(); ++n)
    for (int64_t h = 0; h < H; ++h) {
      s.gather(p, n, h, in.q, in.k, in.v, in.g, in.h0, nullptr, nullptr, in.scale);
      if (finite(s) && std::isfinite(in.scale)) continue;
      gt.build(s);
      const std::vector<Terms> q = factors(s.q), k = factors(s.k), v = factors(s.v);
      S = factors(s.h0);
      for (int64_t i = 0; i < s.L; ++i) {
        step_state(s, gt, k, v, i, S.data());
        const int64_t row = ((s.b * T + s.t0 + i) * H + h) * V;
        for (int64_t y = 0; y < V; ++y) {
          Terms o;
          for (int64_t x = 0; x < K; ++x) o += q[i * K + x] * S[x * V + y];
          out.o.classes[row + y] = (sc * o).classes(tiny);
        }
      }
      const int64_t base = (n * H + h) * K * V;
      for (int64_t e = 0; e < K * V; ++e) out.hT.classes[base + e] = S[e].classes(tiny);
    }
}

void classify_bwd(const Problem& p, const BwdInputs& in, BwdResult& out) {
  const double tiny = tiny_of(in.operands);
  const int64_t K = p.K, V = p.V, H = p.H, T = p.T, KV = K * V, GW = p.gate_width();
  const Terms sc = Terms::factor(in.scale);
  detail::SliceIn s;
  Gates gt;
  std::vector<Terms> St, G, dSraw, dS, QK, GS, direct;
  for (int64_t n = 0; n < p.sequences(); ++n)
    for (int64_t h = 0; h < H; ++h) {
      s.gather(p, n, h, in.q, in.k, in.v, in.g, in.h0, in.dO, in.dhT, in.scale);
      if (finite(s) && std::isfinite(in.scale)) continue;
      gt.build(s);
      const int64_t L = s.L;
      const std::vector<Terms> q = factors(s.q), k = factors(s.k), v = factors(s.v), d = factors(s.dO);
      // Every state: St[j·KV ..] = S_{j−1} (j = 0: h0).
      St.resize((L + 1) * KV);
      const std::vector<Terms> h0 = factors(s.h0);
      std::copy(h0.begin(), h0.end(), St.begin());
      for (int64_t i = 0; i < L; ++i) {
        std::copy(St.begin() + i * KV, St.begin() + (i + 1) * KV, St.begin() + (i + 1) * KV);
        step_state(s, gt, k, v, i, St.data() + (i + 1) * KV);
      }
      G = factors(s.dhT);  // the gradient reaching S_i from later steps (direct decays)
      dSraw.resize(KV);
      dS.resize(KV);
      QK.assign(L * GW, Terms{});
      GS.assign(L * GW, Terms{});
      direct.assign(L * GW, Terms{});
      for (int64_t i = L - 1; i >= 0; --i) {
        const Terms* Si = St.data() + (i + 1) * KV;
        const Terms* Sp = St.data() + i * KV;
        const int64_t rowk = ((s.b * T + s.t0 + i) * H + h) * K;
        const int64_t rowv = ((s.b * T + s.t0 + i) * H + h) * V;
        for (int64_t x = 0; x < K; ++x) {
          const bool maybe = gt.maybe(i, x);
          const Terms fresh = (sc * q[i * K + x]).maybe_nan(gt.before(i, x));
          Terms gs;
          for (int64_t y = 0; y < V; ++y) {
            const int64_t e = x * V + y;
            gs += G[e] * Si[e];
            dSraw[e] = G[e] + fresh * d[i * V + y];
            dS[e] = dSraw[e].maybe_nan(maybe);
          }
          Terms dq, dk, dgd;
          for (int64_t y = 0; y < V; ++y) {
            const int64_t e = x * V + y;
            dq += d[i * V + y] * Si[e];
            dk += dS[e] * v[i * V + y];
            dgd += dS[e] * Sp[e];
          }
          dq = sc * dq;
          out.dq.classes[rowk + x] = dq.classes(tiny);
          out.dk.classes[rowk + x] = dk.classes(tiny);
          const int64_t c = i * GW + gt.col(x);
          GS[c] += gs;
          direct[c] += gt.decay(i, x) * dgd;
          QK[c] += q[i * K + x] * dq + (-k[i * K + x]) * dk;
        }
        for (int64_t y = 0; y < V; ++y) {
          Terms dv;
          for (int64_t x = 0; x < K; ++x) dv += k[i * K + x] * dS[x * V + y];
          out.dv.classes[rowv + y] = dv.classes(tiny);
        }
        for (int64_t x = 0; x < K; ++x)
          for (int64_t y = 0; y < V; ++y) G[x * V + y] = gt.decay(i, x) * dSraw[x * V + y];
      }
      const int64_t base = (n * H + h) * KV;
      for (int64_t e = 0; e < KV; ++e) out.dh0.classes[base + e] = G[e].classes(tiny);
      // dg: the direct form and the chunk identity for every chunk end e ≥ i.
      for (int64_t i = 0; i < L; ++i) {
        const int64_t rowg = ((s.b * T + s.t0 + i) * H + h) * GW;
        for (int64_t c = 0; c < GW; ++c) {
          uint8_t m = direct[i * GW + c].classes(tiny);
          Terms acc;
          for (int64_t e = i; e < L && m != kcv::kClassAny; ++e) {
            acc += QK[e * GW + c];
            m |= (acc + GS[e * GW + c]).classes(tiny);
          }
          out.dg.classes[rowg + c] = m;
        }
      }
    }
}

}  // namespace glr
