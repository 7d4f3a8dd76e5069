// glr fp64 reference, forward: the recurrence step by step per (sequence, head), with the error
// data of glr/reference/reference.hpp. The chunked order (Order::chunked) lives in reference_chunked.cpp.
#include <algorithm>
#include <cmath>

#include "glr/reference/reference.hpp"
#include "detail.hpp"

namespace glr {

FwdResult reference_chunked_fwd(const Problem& p, const FwdInputs& in);  // reference_chunked.cpp
bool any_nonfinite(const double* x, int64_t n);                          // reference_terms.cpp
void classify_fwd(const Problem& p, const FwdInputs& in, FwdResult& out);

FwdResult reference_fwd(const Problem& p, const FwdInputs& in, Order order) {
  p.validate();
  if (order == Order::chunked) return reference_chunked_fwd(p, in);
  FwdResult out;
  out.o.resize(p.v_elems());
  out.hT.resize(p.state_elems());
  const int64_t K = p.K, V = p.V, H = p.H, T = p.T;
  const double big = std::max({detail::max_abs(in.q, p.qk_elems()), detail::max_abs(in.k, p.qk_elems()),
                               detail::max_abs(in.v, p.v_elems()), detail::max_abs(in.h0, p.state_elems())});
  detail::SliceIn s;
  detail::FwdState st;
  std::vector<double> val(V), mag(V), nm(V), amp(V);
  for (int64_t n = 0; n < p.sequences(); ++n)
    for (int64_t h = 0; h < H; ++h) {
      s.gather(p, n, h, in.q, in.k, in.v, in.g, in.h0, nullptr, nullptr, in.scale);
      const double under = detail::underflow_slack(p, s.L, big, in.scale, 3);
      const double sc = std::fabs(in.scale);
      st.init(s);
      // The largest state S (an operand of q⊙exp(b)·S) and intra-chunk A = q·(k⊙exp): ovf of o.
      double mS = detail::max_finite_of(st.A0.data(), K * V);
      const double mA = detail::max_window_dot(s.q, s.k, s.L, K);
      for (int64_t i = 0; i < s.L; ++i) {
        st.step(s, i);
        mS = std::max(mS, detail::max_finite_of(st.A0.data(), K * V));
        // o_i[y] = scale Σ_x q_i[x] S_i[x, y]: a K-term contraction on top of each state term.
        std::fill(val.begin(), val.end(), 0.0);
        std::fill(mag.begin(), mag.end(), 0.0);
        std::fill(nm.begin(), nm.end(), 0.0);
        std::fill(amp.begin(), amp.end(), 0.0);
        for (int64_t x = 0; x < K; ++x) {
          const double qx = s.q[i * K + x], aq = std::fabs(qx);
          for (int64_t y = 0; y < V; ++y) {
            const int64_t e = x * V + y;
            val[y] += qx * st.S[e];
            mag[y] += aq * st.A0[e];
            nm[y] += aq * (st.nm(s, e) + double(K + 2) * st.A0[e]);
            amp[y] += aq * st.amp(s, i, e);
          }
        }
        const int64_t row = ((s.b * T + s.t0 + i) * H + h) * V;
        for (int64_t y = 0; y < V; ++y) {
          out.o.value[row + y] = in.scale * val[y];
          out.o.mag[row + y] = sc * mag[y];
          out.o.amp[row + y] = sc * amp[y];
          detail::put_budget(nm[y], mag[y], out.o.depth[row + y], out.o.amp[row + y]);
          out.o.under[row + y] = under;
          out.o.op[row + y] = kRhoO * sc * mag[y];
        }
      }
      // opu (glr/reference/reference.hpp): co-factors of every rounded operand, o: q⊙exp(b) (× S), S (× q),
      // k⊙exp in the state updates (× v × q, over the sequence), A's two operands (× k or q, × v)
      // and A (× v), the latter over one chunk; hT: k⊙exp (× v) over the sequence.
      const double mq = detail::max_abs(s.q.data(), s.L * K), mk = detail::max_abs(s.k.data(), s.L * K);
      const double mv = detail::max_abs(s.v.data(), s.L * V), Lw = double(s.Lc), L = double(s.L);
      const double opu_o = sc * (K * (mS + mq) + K * L * mq * mv + Lw * K * (mk + mq) * mv + Lw * mv);
      const double ovf = std::max(mS, mA);
      for (int64_t i = 0; i < s.L; ++i) {
        const int64_t row = ((s.b * T + s.t0 + i) * H + h) * V;
        std::fill_n(out.o.ovf.begin() + row, V, ovf);
        std::fill_n(out.o.opu.begin() + row, V, opu_o);
      }
      const int64_t base = (n * H + h) * K * V;
      for (int64_t e = 0; e < K * V; ++e) {
        out.hT.value[base + e] = st.S[e];
        out.hT.mag[base + e] = st.A0[e];
        out.hT.amp[base + e] = s.L > 0 ? st.amp(s, s.L - 1, e) : 0.0;
        detail::put_budget(st.nm(s, e), st.A0[e], out.hT.depth[base + e], out.hT.amp[base + e]);
        out.hT.under[base + e] = under;
        out.hT.op[base + e] = kRhoHT * st.A0[e];  // ovf 0: k⊙exp(b_last − b_j) stays within k's range
        out.hT.opu[base + e] = double(s.L) * mv;
      }
    }
  if (any_nonfinite(in.q, p.qk_elems()) || any_nonfinite(in.k, p.qk_elems()) || any_nonfinite(in.v, p.v_elems()) ||
      any_nonfinite(in.g, p.g_elems()) || any_nonfinite(in.h0, p.state_elems()))
    classify_fwd(p, in, out);
  return out;
}

}  // namespace glr
