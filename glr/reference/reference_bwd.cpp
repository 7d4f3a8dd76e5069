// glr fp64 reference, backward: reverse mode of the recurrence, derived by hand.
//
//   dS_t = scale q_tᵀ do_t + exp(g_{t+1}) ⊙ dS_{t+1},   dS_last = scale q_lastᵀ do_last + dhT
//   dq_t = scale do_t S_tᵀ        dk_t = dS_t v_tᵀ (per k)        dv_t = k_t dS_t
//   dg_t = exp(g_t) ⊙ Σ_v dS_t ⊙ S_{t−1}   (scalar gate: also Σ_k)      dh0 = exp(g_0) ⊙ dS_0
//
// Per (sequence, head): a forward pass keeps the state every 64 steps; the reverse pass recomputes
// one 64-step segment of states at a time and walks it backwards beside dS (segments of the
// reference's own walk, unrelated to the chunks a kernel may use). Error data as in
// glr/reference/reference.hpp; the reverse chain mirrors the forward one (B0, B1, Y' for dS as A0, A1, Y for S).
#include <algorithm>
#include <cmath>

#include "glr/reference/reference.hpp"
#include "detail.hpp"

namespace glr {

BwdResult reference_chunked_bwd(const Problem& p, const BwdInputs& in);  // reference_chunked.cpp
bool any_nonfinite(const double* x, int64_t n);                          // reference_terms.cpp
void classify_bwd(const Problem& p, const BwdInputs& in, BwdResult& out);

namespace {

struct Out {
  Estimate* e;
  void put(int64_t i, double value, double mag, double nm, double amp, double under, double op) const {
    e->value[i] = value;
    e->mag[i] = mag;
    e->amp[i] = amp;
    detail::put_budget(nm, mag, e->depth[i], e->amp[i]);
    e->under[i] = under;
    e->op[i] = op;
  }
};

}  // namespace

BwdResult reference_bwd(const Problem& p, const BwdInputs& in, Order order) {
  p.validate();
  if (order == Order::chunked) return reference_chunked_bwd(p, in);
  BwdResult out;
  out.dq.resize(p.qk_elems());
  out.dk.resize(p.qk_elems());
  out.dv.resize(p.v_elems());
  out.dg.resize(p.g_elems());
  out.dh0.resize(p.state_elems());
  const int64_t K = p.K, V = p.V, H = p.H, T = p.T, KV = K * V, GW = p.gate_width();
  const bool scalar = p.gate == GateForm::scalar;
  const double big = std::max({detail::max_abs(in.q, p.qk_elems()), detail::max_abs(in.k, p.qk_elems()),
                               detail::max_abs(in.v, p.v_elems()), detail::max_abs(in.h0, p.state_elems()),
                               detail::max_abs(in.dO, p.v_elems()), detail::max_abs(in.dhT, p.state_elems())});
  const double sc = std::fabs(in.scale);
  constexpr int64_t Sg = 64;  // checkpoint segment length

  detail::SliceIn s;
  std::vector<detail::FwdState> ck;
  std::vector<double> Sbuf, A0b, nmSb, ampSb, decb;            // one segment of forward data
  std::vector<double> G(KV), FB0(KV), FB1(KV), FY(KV);          // dS chain, decayed future part
  std::vector<double> dS(KV), B0(KV), B1(KV), X(KV), nmD(KV), ampD(KV);
  std::vector<double> Qr, Gr, Mr, Ur;                           // dg windows: ring of Lc rows × K
  std::vector<double> vy(V), my(V), ny(V), ay(V);
  std::vector<double> gamx(K), dgvx(K), dgmx(K), sumQ(K), sumM(K), maxG(K), maxU(K);  // per column of a step
  for (int64_t n = 0; n < p.sequences(); ++n)
    for (int64_t h = 0; h < H; ++h) {
      s.gather(p, n, h, in.q, in.k, in.v, in.g, in.h0, in.dO, in.dhT, in.scale);
      const int64_t L = s.L, Lc = s.Lc;
      const double under = detail::underflow_slack(p, L, big, in.scale, 4);
      const int64_t nseg = (L + Sg - 1) / Sg;
      // Forward pass: checkpoints at segment starts.
      ck.assign(nseg, {});
      detail::FwdState f;
      f.init(s);
      // ovf of dq, dk, dv, dg: the largest state H, state gradient G (B0 below), A = q·(k⊙exp) or
      // do·vᵀ, the operands a tensor-core kernel rounds that are sums.
      double mS = detail::max_finite_of(f.A0.data(), KV), mG = 0;
      const double mA = detail::max_window_dot(s.q, s.k, L, K), mDV = detail::max_window_dot(s.dO, s.v, L, V);
      for (int64_t sg = 0; sg < nseg; ++sg) {
        ck[sg] = f;
        for (int64_t i = sg * Sg; i < std::min(L, (sg + 1) * Sg); ++i) {
          f.step(s, i);
          mS = std::max(mS, detail::max_finite_of(f.A0.data(), KV));
        }
      }
      std::copy(s.dhT.begin(), s.dhT.end(), G.begin());
      std::fill(FB0.begin(), FB0.end(), 0.0);
      std::fill(FB1.begin(), FB1.end(), 0.0);
      std::fill(FY.begin(), FY.end(), 0.0);
      Qr.assign(std::max<int64_t>(Lc, 1) * K, 0.0);
      Gr.assign(Qr.size(), 0.0);
      Mr.assign(Qr.size(), 0.0);
      Ur.assign(Qr.size(), 0.0);

      for (int64_t sg = nseg - 1; sg >= 0; --sg) {
        const int64_t s0 = sg * Sg, s1 = std::min(L, s0 + Sg), m = s1 - s0;
        // Recompute the segment: Sbuf[j] = S_{s0+j−1} (j = 0..m), the rest per step i = s0+j.
        f = ck[sg];
        Sbuf.resize((m + 1) * KV);
        A0b.resize(m * KV); nmSb.resize(m * KV); ampSb.resize(m * KV); decb.resize(m * KV);
        std::copy(f.S.begin(), f.S.end(), Sbuf.begin());
        for (int64_t j = 0; j < m; ++j) {
          const int64_t i = s0 + j;
          f.step(s, i);
          std::copy(f.S.begin(), f.S.end(), Sbuf.begin() + (j + 1) * KV);
          std::copy(f.A0.begin(), f.A0.end(), A0b.begin() + j * KV);
          std::copy(f.dec.begin(), f.dec.end(), decb.begin() + j * KV);
          for (int64_t e = 0; e < KV; ++e) {
            nmSb[j * KV + e] = f.nm(s, e);
            ampSb[j * KV + e] = f.amp(s, i, e);
          }
        }
        for (int64_t j = m - 1; j >= 0; --j) {
          const int64_t i = s0 + j;
          const double* Si = Sbuf.data() + (j + 1) * KV;
          const double* Sp = Sbuf.data() + j * KV;
          const double* A0 = A0b.data() + j * KV;
          const double* nmS = nmSb.data() + j * KV;
          const double* ampS = ampSb.data() + j * KV;
          const double* dec = decb.data() + j * KV;
          const double* q = s.q.data() + i * K;
          const double* k = s.k.data() + i * K;
          const double* v = s.v.data() + i * V;
          const double* d = s.dO.data() + i * V;
          // dS_i and its error data: fresh terms X (scale q do, and dhT at the last step).
          for (int64_t x = 0; x < K; ++x)
            for (int64_t y = 0; y < V; ++y) {
              const int64_t e = x * V + y;
              const double xt = in.scale * q[x] * d[y];
              // At the last step G holds dhT undecayed: a fresh term as well.
              X[e] = std::fabs(xt) + (i == L - 1 ? std::fabs(s.dhT[e]) : 0.0);
              dS[e] = G[e] + xt;
              B0[e] = FB0[e] + X[e];
              B1[e] = FB1[e] + X[e];
              nmD[e] = B1[e] + double(Lc + 2) * B0[e];
              ampD[e] = FY[e] + kScanDepth * detail::bmul(s.w(i, x), FB0[e]);
            }
          mG = std::max(mG, detail::max_finite_of(B0.data(), KV));
          const int64_t rowk = ((s.b * T + s.t0 + i) * H + h) * K;
          const int64_t rowv = ((s.b * T + s.t0 + i) * H + h) * V;
          const int64_t rowg = ((s.b * T + s.t0 + i) * H + h) * GW;
          const int64_t slot = (i % Lc) * K;
          // dq_i[x] = scale Σ_y do[y] S_i[x,y];  dk_i[x] = Σ_y dS_i[x,y] v[y];  dg direct.
          for (int64_t x = 0; x < K; ++x) {
            double vq = 0, mq = 0, nq = 0, aq = 0, vk = 0, mk = 0, nk = 0, ak = 0;
            double dgv = 0, dgm = 0, mu = 0, gam = 0;
            for (int64_t y = 0; y < V; ++y) {
              const int64_t e = x * V + y;
              const double ad = std::fabs(d[y]), av = std::fabs(v[y]);
              vq += d[y] * Si[e];
              mq += ad * A0[e];
              nq += ad * (nmS[e] + double(V + 2) * A0[e]);
              aq += ad * ampS[e];
              vk += dS[e] * v[y];
              mk += av * B0[e];
              nk += av * (nmD[e] + double(V + 2) * B0[e]);
              ak += av * ampD[e];
              dgv += dS[e] * Sp[e];
              dgm += B0[e] * dec[e];
              mu += B0[e] * A0[e];
              gam += A0[e] * (nmD[e] + ampD[e]) + B0[e] * (nmS[e] + ampS[e]) + double(V + 3) * B0[e] * A0[e];
            }
            Out{&out.dq}.put(rowk + x, in.scale * vq, sc * mq, sc * nq, sc * aq, under, kRhoDq * sc * mq);
            Out{&out.dk}.put(rowk + x, vk, mk, nk, ak, under, kRhoDk * mk);
            // The chunked identity's terms at i: q ⊙ dq and k ⊙ dk with their own budgets.
            const double aqx = std::fabs(q[x]), akx = std::fabs(k[x]);
            const double mdq = sc * mq, mdk = mk;
            Qr[slot + x] = aqx * (sc * (nq + aq) + double(Lc + 2) * mdq) + akx * (nk + ak + double(Lc + 2) * mdk);
            Mr[slot + x] = aqx * mdq + akx * mdk;
            Gr[slot + x] = gam + double(Lc) * mu;
            Ur[slot + x] = mu;
            gamx[x] = gam;
            dgvx[x] = dgv;
            dgmx[x] = dgm;
          }
          // Each column's window over steps i .. i + Lc − 1 (a chunk that starts at i), ring rows in
          // step order: per column the same sums and maxima, in the same order, as a step loop per
          // column, with the columns contiguous (no division per element).
          std::fill(sumQ.begin(), sumQ.end(), 0.0);
          std::fill(sumM.begin(), sumM.end(), 0.0);
          std::fill(maxG.begin(), maxG.end(), 0.0);
          std::fill(maxU.begin(), maxU.end(), 0.0);
          for (int64_t i2 = i, sl = slot; i2 < std::min(L, i + Lc); ++i2, sl = sl + K == Lc * K ? 0 : sl + K) {
            const double *Qw = Qr.data() + sl, *Mw = Mr.data() + sl, *Gw = Gr.data() + sl, *Uw = Ur.data() + sl;
            for (int64_t x = 0; x < K; ++x) {
              sumQ[x] += Qw[x];
              sumM[x] += Mw[x];
              maxG[x] = std::max(maxG[x], Gw[x]);
              maxU[x] = std::max(maxU[x], Uw[x]);
            }
          }
          double sg_val = 0, sg_mag = 0, sg_nm = 0, sg_op = 0;
          for (int64_t x = 0; x < K; ++x) {
            const double gam = gamx[x], mu = Ur[slot + x];
            const double beta = gam + sumQ[x] + maxG[x];
            const double val = s.a(i, x) * dgvx[x];
            // Operand rounding: dq and dk err by their own ρ on their magnitudes; G and S_e (or
            // dS_i and S_{i−1} in the direct form, whose Σ_v magnitude is mu ≤ maxU) by kRhoDgGS.
            const double opx = kRhoDgQK * sumM[x] + kRhoDgGS * maxU[x];
            if (!scalar) {
              Out{&out.dg}.put(rowg + x, val, dgmx[x], beta, 0.0, under, opx);
            } else {  // Σ_x of K per-k values: their budgets plus a K-term sum of their magnitudes
              sg_val += val;
              sg_mag += dgmx[x];
              sg_nm += beta + double(K + 1) * (mu + sumM[x] + maxU[x]);
              sg_op += opx;
            }
          }
          if (scalar) Out{&out.dg}.put(rowg, sg_val, sg_mag, sg_nm, 0.0, under, sg_op);
          // dv_i[y] = Σ_x k[x] dS_i[x,y]
          std::fill(vy.begin(), vy.end(), 0.0);
          std::fill(my.begin(), my.end(), 0.0);
          std::fill(ny.begin(), ny.end(), 0.0);
          std::fill(ay.begin(), ay.end(), 0.0);
          for (int64_t x = 0; x < K; ++x) {
            const double ak = std::fabs(k[x]);
            for (int64_t y = 0; y < V; ++y) {
              const int64_t e = x * V + y;
              vy[y] += k[x] * dS[e];
              my[y] += ak * B0[e];
              ny[y] += ak * (nmD[e] + double(K + 2) * B0[e]);
              ay[y] += ak * ampD[e];
            }
          }
          for (int64_t y = 0; y < V; ++y) Out{&out.dv}.put(rowv + y, vy[y], my[y], ny[y], ay[y], under, kRhoDv * my[y]);
          // Step the dS chain to i − 1: G = exp(g_i) ⊙ dS_i, the error data decayed with it.
          for (int64_t x = 0; x < K; ++x) {
            const double a = s.a(i, x), W = s.w(i, x);
            for (int64_t y = 0; y < V; ++y) {
              const int64_t e = x * V + y;
              FY[e] = detail::bmul(a, FY[e] + detail::bmul(W, B0[e]) + kScanDepth * detail::bmul(W, X[e]));
              FB1[e] = detail::bmul(a, B1[e] + B0[e]);
              FB0[e] = detail::bmul(a, B0[e]);
              G[e] = a * dS[e];
            }
          }
        }
      }
      // dh0 = exp(g_0) ⊙ dS_0 (= dhT for an empty sequence).
      const int64_t base = (n * H + h) * KV;
      for (int64_t e = 0; e < KV; ++e) {
        const double mag = L > 0 ? FB0[e] : std::fabs(s.dhT[e]);
        const double nm = L > 0 ? FB1[e] + double(Lc + 2) * FB0[e] : mag;
        Out{&out.dh0}.put(base + e, G[e], mag, nm, L > 0 ? FY[e] : 0.0, under, kRhoDh0 * mag);
      }  // dh0's ovf stays 0: its rounded operands are q⊙exp(b_i)·scale and do
      // opu (glr/reference/reference.hpp), the co-factors of every rounded operand on each output's paths:
      //   dq: do·vᵀ (× k), k⊙exp (× do·vᵀ) over a chunk; H (× do); H's k⊙exp (× v × do) over L
      //   dk: do·vᵀ (× q), q⊙exp (× do·vᵀ) over a chunk; G (× v); G's q⊙exp (× do × v) over L
      //   dv: A (× do), A's operands (× k or q, × do) over a chunk; k⊙exp (× G); G (× k);
      //       G's q⊙exp (× do × k) over L
      //   dh0: q⊙exp (× do) over L;  dg: |q|·dq's and |k|·dk's over a chunk, G (× S), S (× G),
      //       G's and S's own roundings (× S or G) over L; Σ_k of it for the scalar gate
      const double mq = detail::max_abs(s.q.data(), L * K), mk = detail::max_abs(s.k.data(), L * K);
      const double mv = detail::max_abs(s.v.data(), L * V), md = detail::max_abs(s.dO.data(), L * V);
      const double Lw = double(Lc), Ld = double(L);
      const double u_dq = sc * (Lw * (mk + mDV) + V * md + Ld * V * mv * md);
      const double u_dk = sc * Lw * (mq + mDV) + V * mv + Ld * V * md * mv;
      const double u_dv = sc * Lw * md * (1 + K * (mk + mq)) + K * (mG + mk) + Ld * K * md * mk;
      const double u_dg = (Lw * (mq * u_dq + mk * u_dk) + V * (mS + mG) + Ld * V * (md * mS + mv * mG)) *
                          (scalar ? double(K) : 1.0);
      const double ovf = std::max({mS, mG, mA, mDV});
      for (int64_t i = 0; i < L; ++i) {
        const int64_t row = (s.b * T + s.t0 + i) * H + h;
        for (Estimate* e : {&out.dq, &out.dk}) std::fill_n(e->ovf.begin() + row * K, K, ovf);
        std::fill_n(out.dv.ovf.begin() + row * V, V, ovf);
        std::fill_n(out.dg.ovf.begin() + row * GW, GW, ovf);
        std::fill_n(out.dq.opu.begin() + row * K, K, u_dq);
        std::fill_n(out.dk.opu.begin() + row * K, K, u_dk);
        std::fill_n(out.dv.opu.begin() + row * V, V, u_dv);
        std::fill_n(out.dg.opu.begin() + row * GW, GW, u_dg);
      }
      for (int64_t e = 0; e < KV; ++e) out.dh0.opu[base + e] = Ld * md;
    }
  if (any_nonfinite(in.q, p.qk_elems()) || any_nonfinite(in.k, p.qk_elems()) || any_nonfinite(in.v, p.v_elems()) ||
      any_nonfinite(in.g, p.g_elems()) || any_nonfinite(in.h0, p.state_elems()) ||
      any_nonfinite(in.dO, p.v_elems()) || any_nonfinite(in.dhT, p.state_elems()))
    classify_bwd(p, in, out);
  return out;
}

}  // namespace glr
