// Host emulation in fp64 of the split backward's index math (glr_bwd_split.cuh: the walks, the
// factored off-diagonal blocks Kr_m / Qr_m with r = 16m − 1, the selections at the chunk's end,
// the dg seeds Σ_v G ⊙ S_end, dv's block loops) against glr::cpu::bwd_slice<double>, over lengths
// around the 16-row blocks and both gate forms. A development check of the algebra without a GPU
// (the CUDA specifics — WMMA layouts, shared-memory phases — are glr_cuda_tests' and the gates'):
//
//   g++ -std=c++20 -O2 -Iinclude bench/glr/glr_bwd_split_emu.cpp -o build/glr_bwd_split_emu && build/glr_bwd_split_emu
//   (session 14: worst relative difference 3.4e-15 over every case)
//
// The K tiles of kernels 3 (dstate) and 4 (dqk) (wip-bwd2): every state row and dq/dk/dg column is computed
// tile by tile (k0, kw = min(KT, K − k0); columns past kw padded with q = k = 0, b = 0 as the
// kernels' tiles are), kernel 3's seeds per (V tile, K tile) and its update as
// scale·((q ⊙ 2^b)ᵀ do), and the scalar gate's dg from the per-K-tile partials (row sums, seed sum)
// that kernel 5 (dv) adds in tile order. KT = 64 as the kernels (K = 65, 96, 128) and KT = 8 (small K
// crossing several tiles).
#include <cmath>
#include <cstdio>
#include <random>
#include <vector>
#include "glr/cpu_chunked.hpp"
using std::vector;
constexpr int C = 64;
int kr_row(int m) { return 8 * m * (m - 1); }
int qr_row(int m) { return 8 * (m - 1) * (8 - m); }
double run(int L, int K, int V, bool scalar, unsigned rseed, int KT = 1 << 20, int BVs = 16) {
  std::mt19937 rng(rseed); std::normal_distribution<double> N01;
  const int GW = scalar ? 1 : K;
  vector<double> q(L*K), k(L*K), v(L*V), g(L*GW), h0(K*V), dO(L*V), dhT(K*V);
  for (auto* x : {&q,&k,&v,&h0,&dO,&dhT}) for (auto& e : *x) e = N01(rng);
  for (auto& e : g) e = -std::log1p(std::exp(-(2 + 1.5*N01(rng))));
  const double scale = 1 / std::sqrt(double(K));
  // reference
  glr::cpu::Slice<double> s{L, K, V, GW, q.data(), k.data(), v.data(), g.data(), h0.data(), scale};
  glr::cpu::Workspace<double> w;
  vector<double> rq(L*K), rk(L*K), rv(L*V), rg(L*GW), rh(K*V);
  glr::cpu::bwd_slice<double>(s, dO.data(), dhT.data(), rq.data(), rk.data(), rv.data(), rg.data(), rh.data(), w);
  // emulation
  const int nch = (L + C - 1) / C, KP = K;  // KP: columns as is (padding is zeros)
  const double l2e = 1.4426950408889634;
  vector<double> B(L*GW);  // log2 cumsum per chunk
  for (int c = 0; c < nch; ++c) for (int x = 0; x < GW; ++x) { double a = 0; for (int i = c*C; i < std::min(L, c*C+C); ++i) { a += g[i*GW+x]*l2e; B[i*GW+x] = a; } }
  auto bat = [&](int c, int nc, int i, int x) { int row = i < nc ? i : nc - 1; return B[(c*C+row)*GW + (scalar ? 0 : x)]; };
  // forward states S[c] entering chunk c, S[nch] final
  vector<vector<double>> S(nch+1, vector<double>(K*V));
  S[0] = h0;
  for (int c = 0; c < nch; ++c) {
    const int nc = std::min(C, L - c*C);
    S[c+1] = S[c];
    for (int x = 0; x < K; ++x) { double el = std::exp2(bat(c,nc,C-1,x)); for (int y = 0; y < V; ++y) S[c+1][x*V+y] *= el; }
    for (int j = 0; j < nc; ++j) for (int x = 0; x < K; ++x) { double kt = k[(c*C+j)*K+x]*std::exp2(bat(c,nc,C-1,x)-bat(c,nc,j,x)); for (int y = 0; y < V; ++y) S[c+1][x*V+y] += kt * v[(c*C+j)*V+y]; }
  }
  // dstate, kernel 3: per (V tile of BVs, K tile of KT), chunks in reverse; the seeds per V tile
  const int nvt = (V + BVs - 1) / BVs, nkt = (K + KT - 1) / KT;
  vector<double> G(K*V); vector<vector<double>> dS(nch, vector<double>(K*V));
  vector<vector<vector<double>>> seedv(nvt, vector<vector<double>>(nch, vector<double>(K, std::nan(""))));
  for (int vt = 0; vt < nvt; ++vt) for (int kt = 0; kt < nkt; ++kt) {
    const int v0 = vt*BVs, vw = std::min(BVs, V - v0), k0 = kt*KT, kw = std::min(KT, K - k0), KTc = std::min(KT, K);
    vector<double> Gt(KTc*BVs, 0);  // [KT, BV] of the CTA, 0 outside the live rows and columns
    for (int kk = 0; kk < kw; ++kk) for (int vv = 0; vv < vw; ++vv) Gt[kk*BVs+vv] = dhT[(k0+kk)*V+v0+vv];
    for (int c = nch-1; c >= 0; --c) {
      const int nc = std::min(C, L - c*C);
      for (int x = 0; x < kw; ++x) { double a = 0; for (int y = 0; y < vw; ++y) a += Gt[x*BVs+y]*S[c+1][(k0+x)*V+v0+y]; seedv[vt][c][k0+x] = a; }
      for (int kk = 0; kk < kw; ++kk) for (int vv = 0; vv < vw; ++vv) dS[c][(k0+kk)*V+v0+vv] = Gt[kk*BVs+vv];
      for (int kk = 0; kk < KTc; ++kk) { const double el = kk < kw ? std::exp2(bat(c,nc,C-1,k0+kk)) : 1; for (int vv = 0; vv < BVs; ++vv) Gt[kk*BVs+vv] *= el; }
      for (int kk = 0; kk < KTc; ++kk) for (int vv = 0; vv < BVs; ++vv) {  // += scale·Σ_j (q ⊙ 2^b)_j do_j, prep's q ⊙ 2^b
        double P = 0;
        for (int j = 0; j < C; ++j) {
          const double qg = (j < nc && kk < kw) ? q[(c*C+j)*K+k0+kk]*std::exp2(bat(c,nc,j,k0+kk)) : 0;
          const double d = (j < nc && vv < vw) ? dO[(c*C+j)*V+v0+vv] : 0;
          P += qg*d;
        }
        Gt[kk*BVs+vv] += scale*P;
      }
    }
    for (int kk = 0; kk < kw; ++kk) for (int vv = 0; vv < vw; ++vv) G[(k0+kk)*V+v0+vv] = Gt[kk*BVs+vv];
  }
  vector<vector<double>> seed(nch, vector<double>(K, 0));  // what kernel 4 adds: the V tiles in order
  for (int c = 0; c < nch; ++c) for (int x = 0; x < K; ++x) for (int vt = 0; vt < nvt; ++vt) seed[c][x] += seedv[vt][c][x];
  vector<double> eq(L*K), ek(L*K), ev(L*V), eg(L*GW);
  for (int c = 0; c < nch; ++c) {
    const int nc = std::min(C, L - c*C), c0 = c*C;
    auto Q = [&](int i, int x) { return i < nc && x < K ? q[(c0+i)*K+x] : 0.0; };
    auto Kk = [&](int i, int x) { return i < nc && x < K ? k[(c0+i)*K+x] : 0.0; };
    auto Vv = [&](int i, int y) { return i < nc ? v[(c0+i)*V+y] : 0.0; };
    auto D = [&](int i, int y) { return i < nc ? dO[(c0+i)*V+y] : 0.0; };
    auto b = [&](int i, int x) { return bat(c, nc, i, x); };
    vector<double> DV(C*C, 0), Xq(C*K, 0), Xk(C*K, 0);
    for (int i = 0; i < C; ++i) for (int j = 0; j <= (i|15); ++j) if ((i>>4) >= (j>>4)) { double a = 0; for (int y = 0; y < V; ++y) a += D(i,y)*Vv(j,y); DV[i*C+j] = a; }
    for (int i = 0; i < C; ++i) for (int x = 0; x < K; ++x) { double a = 0, e = 0; for (int y = 0; y < V; ++y) { a += D(i,y)*S[c][x*V+y]; e += Vv(i,y)*dS[c][x*V+y]; } Xq[i*K+x] = a; Xk[i*K+x] = e; }
    vector<double> kr(96*K), qr(96*K);
    for (int row = 0; row < 96; ++row) for (int x = 0; x < K; ++x) {
      { int m = row < 16 ? 1 : row < 48 ? 2 : 3, j = row - kr_row(m), r = 16*m-1; kr[row*K+x] = j < nc ? Kk(j,x)*std::exp2(b(r,x)-b(j,x)) : 0; }
      { int m = row < 48 ? 1 : row < 80 ? 2 : 3, i = row - qr_row(m) + 16*m, r = 16*m-1; qr[row*K+x] = i < nc ? Q(i,x)*std::exp2(b(i,x)-b(r,x)) : 0; }
    }
    vector<double> dvb(C*C);
    for (int i = 0; i < C; ++i) for (int j = 0; j < C; ++j) dvb[i*C+j] = (i < nc && (i>>4) > (j>>4)) ? DV[i*C+j] : 0;
    vector<double> dqs(C*K, 0), dks(C*K, 0);
    for (int i = 0; i < nc; ++i) for (int x = 0; x < K; ++x) { double a = std::exp2(b(i,x))*Xq[i*K+x]; for (int j = i & ~15; j <= i; ++j) a += DV[i*C+j]*(Kk(j,x)*std::exp2(b(i,x)-b(j,x))); dqs[i*K+x] = a; }
    vector<double> stq(48*K, 0), stk(48*K, 0);
    for (int m = 1; m < 4; ++m) for (int ii = 0; ii < 16; ++ii) for (int x = 0; x < K; ++x) { double a = 0; for (int jb = 0; jb < m; ++jb) for (int jj = 0; jj < 16; ++jj) a += dvb[(16*m+ii)*C + 16*jb+jj]*kr[(kr_row(m)+16*jb+jj)*K+x]; stq[(16*(m-1)+ii)*K+x] = a; }
    for (int i = 16; i < nc; ++i) for (int x = 0; x < K; ++x) { int r = (i & ~15) - 1; dqs[i*K+x] += std::exp2(b(i,x)-b(r,x))*stq[(i-16)*K+x]; }
    for (int m = 1; m < 4; ++m) for (int jj = 0; jj < 16; ++jj) for (int x = 0; x < K; ++x) { double a = 0; for (int ib = m; ib < 4; ++ib) for (int ii = 0; ii < 16; ++ii) a += dvb[(16*ib+ii)*C + 16*(m-1)+jj]*qr[(qr_row(m)+16*(ib-m)+ii)*K+x]; stk[(16*(m-1)+jj)*K+x] = a; }
    for (int j = 0; j < nc; ++j) for (int x = 0; x < K; ++x) {
      double bj = b(j,x); int last = std::min(j|15, nc-1);
      double a = j < 48 ? std::exp2(b(j|15,x)-bj)*stk[j*K+x] : 0;
      for (int i = j; i <= last; ++i) a += DV[i*C+j]*(Q(i,x)*std::exp2(b(i,x)-bj));
      dks[j*K+x] = scale*a + std::exp2(b(C-1,x)-bj)*Xk[j*K+x];
      dqs[j*K+x] *= scale;
      eq[(c0+j)*K+x] = dqs[j*K+x]; ek[(c0+j)*K+x] = dks[j*K+x];
    }
    if (!scalar) for (int x = 0; x < K; ++x) { double acc = seed[c][x]; for (int i = nc-1; i >= 0; --i) { acc += Q(i,x)*dqs[i*K+x] - Kk(i,x)*dks[i*K+x]; eg[(c0+i)*K+x] = acc; } }
    else {  // kernel 4 per K tile: row sums over its columns, its seed sum -> dgp[kt]; kernel 5 adds the tiles in order
      vector<double> dgp(nkt*(C+1), std::nan(""));
      for (int kt = 0; kt < nkt; ++kt) {
        const int k0 = kt*KT, kw = std::min(KT, K - k0);
        for (int i = 0; i < nc; ++i) { double r = 0; for (int xx = 0; xx < kw; ++xx) { const int x = k0+xx; r += Q(i,x)*dqs[i*K+x] - Kk(i,x)*dks[i*K+x]; } dgp[kt*(C+1)+i] = r; }
        double sd = 0; for (int xx = 0; xx < kw; ++xx) sd += seed[c][k0+xx]; dgp[kt*(C+1)+C] = sd;
      }
      vector<double> red(C+1, 0);
      for (int i = 0; i <= C; ++i) if (i < nc || i == C) for (int kt = 0; kt < nkt; ++kt) red[i] += dgp[kt*(C+1)+i];
      double acc = red[C]; for (int i = nc-1; i >= 0; --i) { acc += red[i]; eg[c0+i] = acc; }
    }
    // dv
    vector<double> A(C*C, 0);  // forward A (j <= i), rows >= nc 0
    for (int i = 0; i < nc; ++i) for (int j = 0; j <= i; ++j) { double a = 0; for (int x = 0; x < K; ++x) a += Q(i,x)*Kk(j,x)*std::exp2(b(i,x)-b(j,x)); A[i*C+j] = a; }
    for (int j = 0; j < nc; ++j) for (int y = 0; y < V; ++y) {
      double a = 0; for (int jb = j >> 4, ib = jb+1; ib < 4; ++ib) for (int ii = 0; ii < 16; ++ii) a += A[(16*ib+ii)*C+j]*D(16*ib+ii,y);
      int last = std::min(j|15, nc-1); for (int i = j; i <= last; ++i) a += A[i*C+j]*D(i,y);
      a *= scale;
      for (int x = 0; x < K; ++x) a += (Kk(j,x)*std::exp2(b(C-1,x)-b(j,x)))*dS[c][x*V+y];
      ev[(c0+j)*V+y] = a;
    }
  }
  auto rel = [](const vector<double>& a, const vector<double>& r) { double d = 0, m = 0; for (size_t i = 0; i < a.size(); ++i) { d = std::max(d, std::isfinite(a[i]) ? std::fabs(a[i]-r[i]) : INFINITY);  // a NaN (a slot never written) fails
    m = std::max(m, std::fabs(r[i])); } return m > 0 ? d/m : d; };
  double worst = 0;
  const double e[5] = {rel(eq,rq), rel(ek,rk), rel(ev,rv), rel(eg,rg), rel(G,rh)};
  for (double x : e) worst = std::max(worst, x);
  std::printf("L=%d K=%d V=%d KT=%d BV=%d %s: dq %.1e dk %.1e dv %.1e dg %.1e dh0 %.1e\n", L, K, V, KT < K ? KT : K, BVs, scalar ? "scalar" : "vector", e[0], e[1], e[2], e[3], e[4]);
  return worst;
}
int main() {
  double w = 0;
  for (bool sc : {false, true}) for (int L : {1, 15, 16, 17, 33, 48, 63, 64, 65, 130, 200}) w = std::max(w, run(L, 13, 7, sc, L));
  w = std::max(w, run(150, 40, 70, false, 9)); w = std::max(w, run(150, 40, 70, true, 9));
  std::printf("K tiles (KT, V tile of kernel 3):\n");
  for (bool sc : {false, true}) {
    for (int L : {1, 17, 64, 65, 130}) w = std::max(w, run(L, 13, 7, sc, 100 + L, 8, 16));  // K 13 = tiles 8 + 5
    w = std::max(w, run(150, 21, 40, sc, 7, 8, 32));  // 8 + 8 + 5, V 32 + 8
    for (int K : {65, 96, 128}) w = std::max(w, run(130, K, 70, sc, K, 64, 64));  // 64 + 1, 64 + 32, 64 + 64
    w = std::max(w, run(200, 128, 128, sc, 3, 64, 32));
  }
  std::printf("worst %.2e\n", w);
  return w < 1e-10 ? 0 : 1;
}
