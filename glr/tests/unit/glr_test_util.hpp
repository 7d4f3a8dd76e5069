// glr test helpers: random problems, the naive sequential recurrence (any element type), a
// TF32-like policy for the chunked algorithm, and finite differences of the fp64 forward.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "glr/cpu_chunked.hpp"
#include "glr/problem.hpp"
#include "glr/reference/reference.hpp"

namespace glr::test {

/// Operands of one problem, as fp32 values widened to double (what a device sees).
struct Data {
  Problem p;
  std::vector<int64_t> cu;
  std::vector<double> q, k, v, g, h0, dO, dhT;
  double scale = 1;

  Data() = default;
  Data(Data&&) = default;  // the moved buffer of cu keeps p.cu_seqlens valid
  Data& operator=(Data&&) = default;
  Data(const Data& o) { *this = o; }
  Data& operator=(const Data& o) {
    p = o.p; cu = o.cu; q = o.q; k = o.k; v = o.v; g = o.g; h0 = o.h0; dO = o.dO; dhT = o.dhT; scale = o.scale;
    if (p.cu_seqlens) p.cu_seqlens = cu.data();
    return *this;
  }

  FwdInputs fwd() const { return {q.data(), k.data(), v.data(), g.data(), h0.data(), scale}; }
  BwdInputs bwd() const {
    return {q.data(), k.data(), v.data(), g.data(), h0.data(), dO.data(), dhT.data(), scale};
  }
};

inline double to_f32(double x) { return double(float(x)); }

/// q, k, v, h0, dO, dhT ~ N(0,1); g = log sigmoid(2 + 1.5·N(0,1)) (decays ~0.88, range ≈ (−5, 0)).
inline Data make_data(Problem p, uint64_t seed, std::vector<int64_t> cu = {}) {
  Data d;
  d.cu = std::move(cu);
  d.p = p;
  if (!d.cu.empty()) {
    d.p.cu_seqlens = d.cu.data();
    d.p.N = int64_t(d.cu.size()) - 1;
  }
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> N01;
  auto fill = [&](std::vector<double>& x, int64_t n) {
    x.resize(n);
    for (auto& e : x) e = to_f32(N01(rng));
  };
  fill(d.q, d.p.qk_elems());
  fill(d.k, d.p.qk_elems());
  fill(d.v, d.p.v_elems());
  fill(d.h0, d.p.state_elems());
  fill(d.dO, d.p.v_elems());
  fill(d.dhT, d.p.state_elems());
  d.g.resize(d.p.g_elems());
  for (auto& e : d.g) {
    const double x = 2 + 1.5 * N01(rng);
    e = to_f32(-std::log1p(std::exp(-x)));
  }
  d.scale = to_f32(1.0 / std::sqrt(double(p.K)));
  return d;
}

/// Outputs of an evaluation as doubles, in the layouts of glr/reference/reference.hpp.
struct FwdOut { std::vector<double> o, hT; };
struct BwdOut { std::vector<double> dq, dk, dv, dg, dh0; };

/// TF32-like arithmetic: each operand of a matrix product truncated to 10 mantissa bits.
struct Tf32 {
  static float mm(float x) {
    if (!std::isfinite(x)) return x;
    uint32_t u;
    std::memcpy(&u, &x, 4);
    u &= ~uint32_t((1u << 13) - 1);
    std::memcpy(&x, &u, 4);
    return x;
  }
  static double mm(double x) { return mm(float(x)); }
  template <class T> static T decay(T z) { return std::exp(z); }
  template <class T> static T fl(T x) { return x; }
};

template <class T>
cpu::View<T> dense4(const T* x, int64_t d1, int64_t d2, int64_t d3) { return cpu::View<T>::dense(x, d1, d2, d3); }

/// The chunked algorithm of glr/cpu_chunked.hpp in element type T with policy P, chunk C.
template <class T, class P = cpu::Plain>
FwdOut chunked_fwd(const Data& d, int64_t C = cpu::kChunk) {
  const Problem& p = d.p;
  std::vector<T> q(d.q.begin(), d.q.end()), k(d.k.begin(), d.k.end()), v(d.v.begin(), d.v.end()),
      g(d.g.begin(), d.g.end()), h0(d.h0.begin(), d.h0.end());
  std::vector<T> o(p.v_elems()), hT(p.state_elems());
  cpu::FwdIO<T> io;
  io.q = dense4(q.data(), p.T, p.H, p.K);
  io.k = dense4(k.data(), p.T, p.H, p.K);
  io.v = dense4(v.data(), p.T, p.H, p.V);
  io.g = dense4(g.data(), p.T, p.H, p.gate_width());
  io.h0 = dense4(h0.data(), p.H, p.K, p.V);
  io.o = dense4(o.data(), p.T, p.H, p.V);
  io.hT = dense4(hT.data(), p.H, p.K, p.V);
  cpu::chunked_fwd<T, P>(p, io, T(d.scale), C);
  return {std::vector<double>(o.begin(), o.end()), std::vector<double>(hT.begin(), hT.end())};
}

template <class T, class P = cpu::Plain>
BwdOut chunked_bwd(const Data& d, int64_t C = cpu::kChunk) {
  const Problem& p = d.p;
  std::vector<T> q(d.q.begin(), d.q.end()), k(d.k.begin(), d.k.end()), v(d.v.begin(), d.v.end()),
      g(d.g.begin(), d.g.end()), h0(d.h0.begin(), d.h0.end()), dO(d.dO.begin(), d.dO.end()),
      dhT(d.dhT.begin(), d.dhT.end());
  std::vector<T> dq(p.qk_elems()), dk(p.qk_elems()), dv(p.v_elems()), dg(p.g_elems()), dh0(p.state_elems());
  cpu::BwdIO<T> io;
  io.q = dense4(q.data(), p.T, p.H, p.K);
  io.k = dense4(k.data(), p.T, p.H, p.K);
  io.v = dense4(v.data(), p.T, p.H, p.V);
  io.g = dense4(g.data(), p.T, p.H, p.gate_width());
  io.h0 = dense4(h0.data(), p.H, p.K, p.V);
  io.dO = dense4(dO.data(), p.T, p.H, p.V);
  io.dhT = dense4(dhT.data(), p.H, p.K, p.V);
  io.dq = dense4(dq.data(), p.T, p.H, p.K);
  io.dk = dense4(dk.data(), p.T, p.H, p.K);
  io.dv = dense4(dv.data(), p.T, p.H, p.V);
  io.dg = dense4(dg.data(), p.T, p.H, p.gate_width());
  io.dh0 = dense4(dh0.data(), p.H, p.K, p.V);
  cpu::chunked_bwd<T, P>(p, io, T(d.scale), C);
  auto wide = [](const std::vector<T>& x) { return std::vector<double>(x.begin(), x.end()); };
  return {wide(dq), wide(dk), wide(dv), wide(dg), wide(dh0)};
}

/// Hooks of the sequential evaluations beyond cpu::Plain's: P::store(x) is applied to every value
/// kept in the running state (S, dS, G), P::sum(x) to every partial sum; identity where P lacks
/// them. They model a kernel that keeps its state or accumulators in a 16-bit dtype.
template <class P, class T>
T store(T x) {
  if constexpr (requires { P::store(x); }) return P::store(x);
  else return x;
}
template <class P, class T>
T psum(T x) {
  if constexpr (requires { P::sum(x); }) return P::sum(x);
  else return x;
}

/// x rounded to bf16 (Bf16 = true) or f16, to nearest even, widened back to float.
template <bool Bf16>
float round16(float x) {
  return Bf16 ? bf16_to_float(float_to_bf16(x)) : f16_to_float(float_to_f16(x));
}

/// fp32 arithmetic, but the running state (S, dS, G) stored in bf16/f16 after every update.
template <bool Bf16>
struct State16 : cpu::Plain {
  static float store(float x) { return round16<Bf16>(x); }
};
/// fp32 products, but every partial sum rounded to bf16/f16 (a 16-bit accumulator).
template <bool Bf16>
struct Sums16 : cpu::Plain {
  static float sum(float x) { return round16<Bf16>(x); }
};

/// The naive sequential recurrence in element type T (P::mm on product operands): the most
/// direct legitimate evaluation order. Backward keeps every state (small problems only).
template <class T, class P = cpu::Plain>
FwdOut sequential_fwd(const Data& d) {
  const Problem& p = d.p;
  const int64_t K = p.K, V = p.V, H = p.H, T_ = p.T, GW = p.gate_width();
  FwdOut out{std::vector<double>(p.v_elems()), std::vector<double>(p.state_elems())};
  std::vector<T> S(K * V), acc(V);
  for (int64_t n = 0; n < p.sequences(); ++n)
    for (int64_t h = 0; h < H; ++h) {
      const int64_t b = p.batch_of(n), st = (n * H + h) * K * V;
      for (int64_t e = 0; e < K * V; ++e) S[e] = T(d.h0[st + e]);
      for (int64_t t = p.begin(n); t < p.end(n); ++t) {
        const int64_t row = (b * T_ + t) * H + h;
        for (int64_t x = 0; x < K; ++x) {
          const T a = std::exp(T(d.g[row * GW + (GW == 1 ? 0 : x)]));
          const T kx = P::mm(T(d.k[row * K + x]));
          for (int64_t y = 0; y < V; ++y)
            S[x * V + y] = store<P>(a * S[x * V + y] + kx * P::mm(T(d.v[row * V + y])));
        }
        std::fill(acc.begin(), acc.end(), T(0));
        for (int64_t x = 0; x < K; ++x) {
          const T qx = P::mm(T(d.q[row * K + x]));
          for (int64_t y = 0; y < V; ++y) acc[y] = psum<P>(acc[y] + qx * P::mm(S[x * V + y]));
        }
        for (int64_t y = 0; y < V; ++y) out.o[row * V + y] = double(T(d.scale) * acc[y]);
      }
      for (int64_t e = 0; e < K * V; ++e) out.hT[st + e] = double(S[e]);
    }
  return out;
}

template <class T, class P = cpu::Plain>
BwdOut sequential_bwd(const Data& d) {
  const Problem& p = d.p;
  const int64_t K = p.K, V = p.V, H = p.H, T_ = p.T, GW = p.gate_width(), KV = K * V;
  BwdOut out{std::vector<double>(p.qk_elems()), std::vector<double>(p.qk_elems()),
             std::vector<double>(p.v_elems()), std::vector<double>(p.g_elems()),
             std::vector<double>(p.state_elems())};
  const T scale = T(d.scale);
  std::vector<T> states, dS(KV), G(KV);
  for (int64_t n = 0; n < p.sequences(); ++n)
    for (int64_t h = 0; h < H; ++h) {
      const int64_t b = p.batch_of(n), st = (n * H + h) * KV, t0 = p.begin(n), L = p.end(n) - t0;
      auto row = [&](int64_t i) { return (b * T_ + t0 + i) * H + h; };
      auto gate = [&](int64_t i, int64_t x) { return std::exp(T(d.g[row(i) * GW + (GW == 1 ? 0 : x)])); };
      states.assign((L + 1) * KV, T(0));  // states[i + 1] = S_i
      for (int64_t e = 0; e < KV; ++e) states[e] = T(d.h0[st + e]);
      for (int64_t i = 0; i < L; ++i)
        for (int64_t x = 0; x < K; ++x) {
          const T a = gate(i, x), kx = P::mm(T(d.k[row(i) * K + x]));
          for (int64_t y = 0; y < V; ++y)
            states[(i + 1) * KV + x * V + y] =
                store<P>(a * states[i * KV + x * V + y] + kx * P::mm(T(d.v[row(i) * V + y])));
        }
      for (int64_t e = 0; e < KV; ++e) G[e] = T(d.dhT[st + e]);
      for (int64_t i = L - 1; i >= 0; --i) {
        const int64_t r = row(i);
        const T* Si = states.data() + (i + 1) * KV;
        const T* Sp = states.data() + i * KV;
        for (int64_t x = 0; x < K; ++x) {
          const T qx = P::mm(scale * T(d.q[r * K + x]));
          for (int64_t y = 0; y < V; ++y) dS[x * V + y] = store<P>(G[x * V + y] + qx * P::mm(T(d.dO[r * V + y])));
        }
        T dgs = T(0);
        for (int64_t x = 0; x < K; ++x) {
          T aq = T(0), ak = T(0), ag = T(0);
          for (int64_t y = 0; y < V; ++y) {
            aq = psum<P>(aq + P::mm(T(d.dO[r * V + y])) * P::mm(Si[x * V + y]));
            ak = psum<P>(ak + P::mm(dS[x * V + y]) * P::mm(T(d.v[r * V + y])));
            ag = psum<P>(ag + dS[x * V + y] * Sp[x * V + y]);
          }
          out.dq[r * K + x] = double(scale * aq);
          out.dk[r * K + x] = double(ak);
          if (GW == 1) dgs = psum<P>(dgs + gate(i, x) * ag);
          else out.dg[r * K + x] = double(gate(i, x) * ag);
        }
        if (GW == 1) out.dg[r] = double(dgs);
        for (int64_t y = 0; y < V; ++y) {
          T a = T(0);
          for (int64_t x = 0; x < K; ++x) a = psum<P>(a + P::mm(T(d.k[r * K + x])) * P::mm(dS[x * V + y]));
          out.dv[r * V + y] = double(a);
        }
        for (int64_t x = 0; x < K; ++x) {
          const T a = gate(i, x);
          for (int64_t y = 0; y < V; ++y) G[x * V + y] = store<P>(a * dS[x * V + y]);
        }
      }
      for (int64_t e = 0; e < KV; ++e) out.dh0[st + e] = double(G[e]);
    }
  return out;
}

/// Σ over outputs of ⟨weight, output⟩ of the fp64 forward: the loss whose gradient the backward
/// computes when dO = wo and dhT = wh.
inline double loss(const Data& d, const std::vector<double>& wo, const std::vector<double>& wh) {
  const FwdResult r = reference_fwd(d.p, d.fwd());
  double s = 0;
  for (std::size_t i = 0; i < wo.size(); ++i) s += wo[i] * r.o.value[i];
  for (std::size_t i = 0; i < wh.size(); ++i) s += wh[i] * r.hT.value[i];
  return s;
}

}  // namespace glr::test
