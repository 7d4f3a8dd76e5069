/// glr — the chunked algorithm on the CPU (DESIGN §7), forward and backward, header-only and
/// templated on the compute type, so that the same code is the fp32 CPU positive control
/// (glr/controls/cpu/*.cpp, float), the fp64 "chunked order" of the reference (double), and the
/// legitimate / TF32-like evaluation orders of the error-model tests.
///
/// Per (sequence, head) slice of length L, in chunks of C = 64 positions c0 .. c0+n-1:
///   b_i      = g_{c0} + … + g_{c0+i}                       local cumulative log-gate   [n, GW]
///   A_ij     = Σ_k q_ik k_jk exp(b_ik − b_jk),   j ≤ i      intra-chunk matrix          [n, n]
///   o_i      = scale · ( (q_i ⊙ exp(b_i)) S + Σ_{j≤i} A_ij v_j )                        [n, V]
///   S       ← exp(b_last) ⊙ S + Σ_j (k_j ⊙ exp(b_last − b_j))ᵀ v_j                      [K, V]
/// Masking is by select: the j > i half of A is never formed (0·Inf would leak NaN). Every exp
/// argument is b_i − b_j with i ≥ j, or b_i itself, so it is ≤ 0 whenever g ≤ 0: no exp(+x).
///
/// Backward (reverse mode of the recurrence, chunk by chunk, last chunk first):
///   G        = gradient reaching the chunk's end state from the future (dhT for the last chunk)
///   dq_i     = scale · ( exp(b_i) ⊙ (H_c do_iᵀ) + Σ_{j≤i} (do_i·v_j) k_j ⊙ exp(b_i − b_j) )
///   dk_j     = scale · Σ_{i≥j} (do_i·v_j) q_i ⊙ exp(b_i − b_j) + exp(b_last − b_j) ⊙ (G v_j)
///   dv_j     = scale · Σ_{i≥j} A_ij do_i + (k_j ⊙ exp(b_last − b_j)) G
///   dg_i     = Σ_v (G ⊙ S_end) + Σ_{i'≥i} (q ⊙ dq − k ⊙ dk)_{i'}        (vector; scalar: Σ_k)
///   G       ← exp(b_last) ⊙ G + scale Σ_i (q_i ⊙ exp(b_i))ᵀ do_i,        dh0 = G after chunk 0
/// where H_c is the state entering the chunk and S_end the state leaving it (a forward state pass
/// recomputes them). The dg line is the identity dg_t = Σ_v dS_t ⊙ (S_t − k_tᵀ v_t) unrolled over
/// the chunk (FLA's form); it needs no per-step state.
///
/// Policy P hooks the arithmetic so tests can model other hardware: mm(x) is applied to each
/// operand of a matrix product, intermediates included (A, do·vᵀ, q⊙exp(b), k⊙exp(b_last − b), the
/// state and the state gradient as operands): TF32 truncation, or tensor-core operands rounded to
/// bf16/f16 (TensorCore16); decay(z) computes exp(z) of a log-decay; fl(x) is applied to every
/// product with a decay factor (fp32 underflow emulation in fp64); acc(x), where P has it, to the
/// running sum of a matrix product after every add, the state S and the state gradient G included
/// (they are the accumulators of the state updates): a 16-bit accumulator (Accumulate16).
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <vector>

#include "glr/half.hpp"
#include "glr/problem.hpp"

namespace glr::cpu {

inline constexpr int64_t kChunk = 64;

/// Plain arithmetic in the compute type.
struct Plain {
  template <class T> static T mm(T x) { return x; }
  template <class T> static T decay(T z) { return std::exp(z); }
  template <class T> static T fl(T x) { return x; }
};

/// One (sequence, head) slice, contiguous row-major.
template <class T>
struct Slice {
  int64_t L = 0, K = 1, V = 1;
  int64_t GW = 1;              // gate width: K (vector gate) or 1 (scalar gate)
  const T* q = nullptr;        // [L, K]
  const T* k = nullptr;        // [L, K]
  const T* v = nullptr;        // [L, V]
  const T* g = nullptr;        // [L, GW]
  const T* h0 = nullptr;       // [K, V], or null for a zero initial state
  T scale = T(1);
};

/// Scratch buffers, owned by the caller (one per call: no static state anywhere).
template <class T>
struct Workspace {
  std::vector<T> b, A, DV, acc, H, G, dq, dk;
};

/// Tensor-core operands: each operand of a matrix product rounded once, to nearest even, to bf16
/// (Bf16 = true) or f16 — what an MMA with 16-bit operands sees — with fp32 accumulation and the
/// fp32 state carried between chunks (the bf16/f16 contracts admit exactly this).
template <bool Bf16>
struct TensorCore16 : Plain {
  static float mm(float x) { return Bf16 ? bf16_to_float(float_to_bf16(x)) : f16_to_float(float_to_f16(x)); }
};

/// A 16-bit accumulator on top of 16-bit operands: every running sum of a matrix product (the
/// carried state and state gradient included) rounded to bf16/f16 after every add. Not admitted
/// by any contract: the negative controls' policy.
template <bool Bf16>
struct Accumulate16 : TensorCore16<Bf16> {
  static float acc(float x) { return TensorCore16<Bf16>::mm(x); }
};

/// Tensor-core operands with the intra-chunk decays factored at 16-row sub-blocks, as glr's sm90
/// kernels form A's off-diagonal blocks and FLA's chunk_gla its sub-chunks: exp(b_i − b_j) =
/// exp(b_i − b_ρ)·exp(b_ρ − b_j), ρ the row before i's block, where j ≤ ρ (detail::span_decay).
/// A legitimate order; the tests' candidate for the non-finite classes it gives (Inf − Inf in
/// b_i − b_ρ after a non-finite gate at or before ρ).
template <bool Bf16>
struct SubBlockFactored : TensorCore16<Bf16> {
  static constexpr int64_t kFactorBlock = 16;
};

namespace detail {

/// exp(b_i − b_j), j ≤ i chunk-local rows, column x of a gate of width GW, as the policy forms it:
/// directly, or through ρ where the policy factors at sub-blocks (P::kFactorBlock).
template <class P, class T>
T span_decay(const T* b, int64_t i, int64_t j, int64_t GW, int64_t x) {
  if constexpr (requires { P::kFactorBlock; }) {
    const int64_t rho = i / P::kFactorBlock * P::kFactorBlock - 1;
    if (j <= rho) return P::decay(b[i * GW + x] - b[rho * GW + x]) * P::decay(b[rho * GW + x] - b[j * GW + x]);
  }
  return P::decay(b[i * GW + x] - b[j * GW + x]);
}

/// P::acc(x) where the policy has it, else x.
template <class P, class T>
T acc(T x) {
  if constexpr (requires { P::acc(x); }) return P::acc(x);
  else return x;
}

/// b[i, kk] = g[0, kk] + … + g[i, kk], summed in order.
template <class T>
void local_cumsum(const T* g, int64_t n, int64_t GW, T* b) {
  for (int64_t kk = 0; kk < GW; ++kk) {
    T a = T(0);
    for (int64_t i = 0; i < n; ++i) {
      a += g[i * GW + kk];
      b[i * GW + kk] = a;
    }
  }
}

/// A[i, j] (j ≤ i) = Σ_k q_ik k_jk exp(b_ik − b_jk); the j > i half is left untouched.
template <class T, class P>
void intra_matrix(const T* q, const T* k, const T* b, int64_t n, int64_t K, int64_t GW, int64_t C,
                  T* A) {
  for (int64_t i = 0; i < n; ++i)
    for (int64_t j = 0; j <= i; ++j) {
      T a = T(0);
      if (GW == 1) {
        for (int64_t x = 0; x < K; ++x) a = acc<P>(a + P::mm(q[i * K + x]) * P::mm(k[j * K + x]));
        a = P::fl(a * span_decay<P>(b, i, j, 1, 0));
      } else {
        for (int64_t x = 0; x < K; ++x)
          a = acc<P>(a + P::mm(q[i * K + x]) * P::mm(P::fl(k[j * K + x] * span_decay<P>(b, i, j, K, x))));
      }
      A[i * C + j] = a;
    }
}

/// S ← exp(b_last) ⊙ S + Σ_j (k_j ⊙ exp(b_last − b_j))ᵀ v_j.
template <class T, class P>
void state_update(const T* k, const T* v, const T* b, int64_t n, int64_t K, int64_t V, int64_t GW,
                  T* S) {
  const T* bl = b + (n - 1) * GW;
  for (int64_t x = 0; x < K; ++x) {
    const int64_t gx = GW == 1 ? 0 : x;
    const T el = P::decay(bl[gx]);
    T* Sx = S + x * V;
    for (int64_t y = 0; y < V; ++y) Sx[y] = acc<P>(P::fl(el * Sx[y]));
    for (int64_t j = 0; j < n; ++j) {
      const T ke = P::mm(P::fl(k[j * K + x] * P::decay(bl[gx] - b[j * GW + gx])));
      const T* vj = v + j * V;
      for (int64_t y = 0; y < V; ++y) Sx[y] = acc<P>(Sx[y] + ke * P::mm(vj[y]));
    }
  }
}

}  // namespace detail

/// Forward of one slice: o [L, V] and the final state S [K, V] (S may alias nothing else).
template <class T, class P = Plain>
void fwd_slice(const Slice<T>& s, T* o, T* S, Workspace<T>& w, int64_t C = kChunk) {
  const int64_t K = s.K, V = s.V, GW = s.GW;
  for (int64_t x = 0; x < K * V; ++x) S[x] = s.h0 ? s.h0[x] : T(0);
  w.b.assign(C * GW, T(0));
  w.A.assign(C * C, T(0));
  w.acc.assign(V, T(0));
  for (int64_t c0 = 0; c0 < s.L; c0 += C) {
    const int64_t n = std::min(C, s.L - c0);
    const T* q = s.q + c0 * K;
    const T* k = s.k + c0 * K;
    const T* v = s.v + c0 * V;
    T* b = w.b.data();
    detail::local_cumsum(s.g + c0 * GW, n, GW, b);
    detail::intra_matrix<T, P>(q, k, b, n, K, GW, C, w.A.data());
    for (int64_t i = 0; i < n; ++i) {
      T* acc = w.acc.data();
      std::fill(acc, acc + V, T(0));
      for (int64_t x = 0; x < K; ++x) {  // inter-chunk: (q_i ⊙ exp(b_i)) S
        const T qe = P::mm(P::fl(q[i * K + x] * P::decay(b[i * GW + (GW == 1 ? 0 : x)])));
        const T* Sx = S + x * V;
        for (int64_t y = 0; y < V; ++y) acc[y] = detail::acc<P>(acc[y] + qe * P::mm(Sx[y]));
      }
      for (int64_t j = 0; j <= i; ++j) {  // intra-chunk: Σ_{j≤i} A_ij v_j
        const T a = P::mm(w.A[i * C + j]);
        const T* vj = v + j * V;
        for (int64_t y = 0; y < V; ++y) acc[y] = detail::acc<P>(acc[y] + a * P::mm(vj[y]));
      }
      T* oi = o + (c0 + i) * V;
      for (int64_t y = 0; y < V; ++y) oi[y] = s.scale * acc[y];
    }
    detail::state_update<T, P>(k, v, b, n, K, V, GW, S);
  }
}

/// Backward of one slice. dO [L, V], dhT [K, V] (or null); writes dq, dk [L, K], dv [L, V],
/// dg [L, GW], dh0 [K, V].
template <class T, class P = Plain>
void bwd_slice(const Slice<T>& s, const T* dO, const T* dhT, T* dq, T* dk, T* dv, T* dg, T* dh0,
               Workspace<T>& w, int64_t C = kChunk) {
  const int64_t K = s.K, V = s.V, GW = s.GW, KV = K * V;
  const int64_t nch = (s.L + C - 1) / C;
  // Forward state pass: H[c] = state entering chunk c, H[nch] = final state.
  w.H.assign((nch + 1) * KV, T(0));
  for (int64_t x = 0; x < KV; ++x) w.H[x] = s.h0 ? s.h0[x] : T(0);
  w.b.assign(C * GW, T(0));
  for (int64_t c = 0; c < nch; ++c) {
    const int64_t c0 = c * C, n = std::min(C, s.L - c0);
    std::copy(w.H.begin() + c * KV, w.H.begin() + (c + 1) * KV, w.H.begin() + (c + 1) * KV);
    detail::local_cumsum(s.g + c0 * GW, n, GW, w.b.data());
    detail::state_update<T, P>(s.k + c0 * K, s.v + c0 * V, w.b.data(), n, K, V, GW,
                               w.H.data() + (c + 1) * KV);
  }

  w.G.assign(KV, T(0));
  if (dhT) std::copy(dhT, dhT + KV, w.G.begin());
  w.A.assign(C * C, T(0));
  w.DV.assign(C * C, T(0));
  w.dq.assign(C * K, T(0));
  w.dk.assign(C * K, T(0));
  w.acc.assign(std::max(K, V), T(0));
  T* G = w.G.data();
  for (int64_t c = nch - 1; c >= 0; --c) {
    const int64_t c0 = c * C, n = std::min(C, s.L - c0);
    const T* q = s.q + c0 * K;
    const T* k = s.k + c0 * K;
    const T* v = s.v + c0 * V;
    const T* d = dO + c0 * V;
    const T* Hc = w.H.data() + c * KV;         // state entering the chunk   [K, V]
    const T* He = w.H.data() + (c + 1) * KV;   // state leaving the chunk    [K, V]
    T* b = w.b.data();
    detail::local_cumsum(s.g + c0 * GW, n, GW, b);
    const T* bl = b + (n - 1) * GW;
    T* cdq = w.dq.data();   // [n, K], unscaled intra part first
    T* cdk = w.dk.data();   // [n, K]
    std::fill(cdq, cdq + n * K, T(0));
    std::fill(cdk, cdk + n * K, T(0));

    // DV_ij = do_i · v_j (j ≤ i)
    for (int64_t i = 0; i < n; ++i)
      for (int64_t j = 0; j <= i; ++j) {
        T a = T(0);
        for (int64_t y = 0; y < V; ++y) a = detail::acc<P>(a + P::mm(d[i * V + y]) * P::mm(v[j * V + y]));
        w.DV[i * C + j] = a;
      }
    // Intra-chunk dq, dk and A, one decay per (i, j, k); j > i is never formed.
    for (int64_t i = 0; i < n; ++i)
      for (int64_t j = 0; j <= i; ++j) {
        const T dvij = w.DV[i * C + j];
        T a = T(0);
        if (GW == 1) {
          const T e = detail::span_decay<P>(b, i, j, 1, 0);
          const T de = P::mm(P::fl(dvij * e));
          for (int64_t x = 0; x < K; ++x) {
            cdq[i * K + x] = detail::acc<P>(cdq[i * K + x] + de * P::mm(k[j * K + x]));
            cdk[j * K + x] = detail::acc<P>(cdk[j * K + x] + de * P::mm(q[i * K + x]));
            a = detail::acc<P>(a + P::mm(q[i * K + x]) * P::mm(k[j * K + x]));
          }
          a = P::fl(a * e);
        } else {
          const T dm = P::mm(dvij);
          for (int64_t x = 0; x < K; ++x) {
            const T e = detail::span_decay<P>(b, i, j, K, x);
            const T ke = P::mm(P::fl(k[j * K + x] * e));
            cdq[i * K + x] = detail::acc<P>(cdq[i * K + x] + dm * ke);
            cdk[j * K + x] = detail::acc<P>(cdk[j * K + x] + dm * P::mm(P::fl(q[i * K + x] * e)));
            a = detail::acc<P>(a + P::mm(q[i * K + x]) * ke);
          }
        }
        w.A[i * C + j] = a;
      }
    // dq_i = scale · (intra + exp(b_i) ⊙ (H_c do_iᵀ))
    for (int64_t i = 0; i < n; ++i)
      for (int64_t x = 0; x < K; ++x) {
        T t = T(0);
        for (int64_t y = 0; y < V; ++y) t = detail::acc<P>(t + P::mm(d[i * V + y]) * P::mm(Hc[x * V + y]));
        const T e = P::decay(b[i * GW + (GW == 1 ? 0 : x)]);
        cdq[i * K + x] = s.scale * (cdq[i * K + x] + P::fl(e * t));
      }
    // dk_j = scale · intra + exp(b_last − b_j) ⊙ (G v_j)
    for (int64_t j = 0; j < n; ++j)
      for (int64_t x = 0; x < K; ++x) {
        T t = T(0);
        for (int64_t y = 0; y < V; ++y) t = detail::acc<P>(t + P::mm(G[x * V + y]) * P::mm(v[j * V + y]));
        const int64_t gx = GW == 1 ? 0 : x;
        cdk[j * K + x] = s.scale * cdk[j * K + x] + P::fl(P::decay(bl[gx] - b[j * GW + gx]) * t);
      }
    // dv_j = scale · Σ_{i≥j} A_ij do_i + (k_j ⊙ exp(b_last − b_j)) G
    for (int64_t j = 0; j < n; ++j) {
      T* acc = w.acc.data();
      std::fill(acc, acc + V, T(0));
      for (int64_t i = j; i < n; ++i) {
        const T a = P::mm(w.A[i * C + j]);
        for (int64_t y = 0; y < V; ++y) acc[y] = detail::acc<P>(acc[y] + a * P::mm(d[i * V + y]));
      }
      for (int64_t y = 0; y < V; ++y) acc[y] *= s.scale;
      for (int64_t x = 0; x < K; ++x) {
        const int64_t gx = GW == 1 ? 0 : x;
        const T ke = P::mm(P::fl(k[j * K + x] * P::decay(bl[gx] - b[j * GW + gx])));
        for (int64_t y = 0; y < V; ++y) acc[y] = detail::acc<P>(acc[y] + ke * P::mm(G[x * V + y]));
      }
      std::copy(acc, acc + V, dv + (c0 + j) * V);
    }
    // dg: reverse cumsum of q ⊙ dq − k ⊙ dk, seeded with Σ_v G ⊙ S_end.
    if (GW == 1) {
      T acc = T(0);
      for (int64_t x = 0; x < KV; ++x) acc += G[x] * He[x];
      for (int64_t i = n - 1; i >= 0; --i) {
        T r = T(0);
        for (int64_t x = 0; x < K; ++x) r += q[i * K + x] * cdq[i * K + x] - k[i * K + x] * cdk[i * K + x];
        acc += r;
        dg[c0 + i] = acc;
      }
    } else {
      for (int64_t x = 0; x < K; ++x) {
        T acc = T(0);
        for (int64_t y = 0; y < V; ++y) acc += G[x * V + y] * He[x * V + y];
        for (int64_t i = n - 1; i >= 0; --i) {
          acc += q[i * K + x] * cdq[i * K + x] - k[i * K + x] * cdk[i * K + x];
          dg[(c0 + i) * K + x] = acc;
        }
      }
    }
    std::copy(cdq, cdq + n * K, dq + c0 * K);
    std::copy(cdk, cdk + n * K, dk + c0 * K);
    // G ← exp(b_last) ⊙ G + scale Σ_i (q_i ⊙ exp(b_i))ᵀ do_i
    for (int64_t x = 0; x < K; ++x) {
      const int64_t gx = GW == 1 ? 0 : x;
      const T el = P::decay(bl[gx]);
      T* Gx = G + x * V;
      for (int64_t y = 0; y < V; ++y) Gx[y] = detail::acc<P>(P::fl(el * Gx[y]));
      for (int64_t i = 0; i < n; ++i) {
        const T qe = P::mm(s.scale * P::fl(q[i * K + x] * P::decay(b[i * GW + gx])));
        for (int64_t y = 0; y < V; ++y) Gx[y] = detail::acc<P>(Gx[y] + qe * P::mm(d[i * V + y]));
      }
    }
  }
  std::copy(G, G + KV, dh0);
}

// ---- drivers: gather each (sequence, head) slice through strides, run it, scatter back ----

/// How a view's elements are stored: as E itself, or as 16-bit floats widened to / rounded from E.
// NOTES: 16-bit storage goes through float: widening is exact, narrowing rounds once when E = float
// (the candidates) — what an fp32-accumulating kernel does when it stores a bf16/f16 output.
enum class Storage : uint8_t { native, f16, bf16 };

/// Element access through element strides: any layout, any alignment (memcpy loads and stores).
template <class E>
struct View {
  void* data = nullptr;
  int64_t stride[4] = {0, 0, 0, 0};
  Storage storage = Storage::native;

  int64_t element_bytes() const { return storage == Storage::native ? int64_t(sizeof(E)) : 2; }
  const char* at(int64_t a, int64_t b, int64_t c, int64_t d) const {
    return static_cast<const char*>(data) +
           (a * stride[0] + b * stride[1] + c * stride[2] + d * stride[3]) * element_bytes();
  }
  E get(int64_t a, int64_t b, int64_t c, int64_t d) const {
    if (storage != Storage::native) {
      uint16_t h;
      std::memcpy(&h, at(a, b, c, d), 2);
      return E(storage == Storage::bf16 ? bf16_to_float(h) : f16_to_float(h));
    }
    E x;
    std::memcpy(&x, at(a, b, c, d), sizeof(E));
    return x;
  }
  void set(int64_t a, int64_t b, int64_t c, int64_t d, E x) const {
    char* p = const_cast<char*>(at(a, b, c, d));
    if (storage != Storage::native) {
      const uint16_t h = storage == Storage::bf16 ? float_to_bf16(float(x)) : float_to_f16(float(x));
      std::memcpy(p, &h, 2);
      return;
    }
    std::memcpy(p, &x, sizeof(E));
  }
  /// A contiguous row-major array with dims [*, d1, d2, d3] (d3 = 1 for three-dimensional ones).
  static View dense(const E* p, int64_t d1, int64_t d2, int64_t d3) {
    View w;
    w.data = const_cast<E*>(p);
    w.stride[3] = 1;
    w.stride[2] = d3;
    w.stride[1] = d2 * d3;
    w.stride[0] = d1 * d2 * d3;
    return w;
  }
};

/// Forward operands: q, k, v, g (scalar gate: index 3 ignored), h0 (has_h0 false → zero), o, hT.
template <class E>
struct FwdIO {
  View<E> q, k, v, g, h0, o, hT;
  bool has_h0 = true;
};

/// Backward operands.
template <class E>
struct BwdIO {
  View<E> q, k, v, g, h0, dO, dhT, dq, dk, dv, dg, dh0;
  bool has_h0 = true, has_dhT = true;
};

/// Copies of one slice's inputs in the compute type.
template <class T>
struct SliceData {
  std::vector<T> q, k, v, g, h0;
  Slice<T> slice;

  template <class E>
  void gather(const Problem& p, const View<E>& vq, const View<E>& vk, const View<E>& vv,
              const View<E>& vg, const View<E>* vh0, int64_t n, int64_t h, T scale) {
    const int64_t b = p.batch_of(n), t0 = p.begin(n), L = p.end(n) - t0;
    const int64_t K = p.K, V = p.V, GW = p.gate_width();
    q.resize(L * K);
    k.resize(L * K);
    v.resize(L * V);
    g.resize(L * GW);
    for (int64_t i = 0; i < L; ++i) {
      for (int64_t x = 0; x < K; ++x) {
        q[i * K + x] = T(vq.get(b, t0 + i, h, x));
        k[i * K + x] = T(vk.get(b, t0 + i, h, x));
      }
      for (int64_t y = 0; y < V; ++y) v[i * V + y] = T(vv.get(b, t0 + i, h, y));
      for (int64_t x = 0; x < GW; ++x) g[i * GW + x] = T(vg.get(b, t0 + i, h, x));
    }
    h0.clear();
    if (vh0) {
      h0.resize(K * V);
      for (int64_t x = 0; x < K; ++x)
        for (int64_t y = 0; y < V; ++y) h0[x * V + y] = T(vh0->get(n, h, x, y));
    }
    slice = Slice<T>{L, K, V, GW, q.data(), k.data(), v.data(), g.data(),
                     vh0 ? h0.data() : nullptr, scale};
  }
};

/// Runs a forward slice kernel over every (sequence, head). The kernel is called as
/// kernel(n, slice, o [L,V], hT [K,V], workspace) and must write both outputs.
template <class T, class E, class Kernel>
void run_fwd(const Problem& p, const FwdIO<E>& io, T scale, Kernel&& kernel) {
  Workspace<T> w;
  SliceData<T> sd;
  std::vector<T> o, hT;
  for (int64_t n = 0; n < p.sequences(); ++n)
    for (int64_t h = 0; h < p.H; ++h) {
      sd.gather(p, io.q, io.k, io.v, io.g, io.has_h0 ? &io.h0 : nullptr, n, h, scale);
      const int64_t b = p.batch_of(n), t0 = p.begin(n), L = sd.slice.L;
      o.assign(L * p.V, T(0));
      hT.assign(p.K * p.V, T(0));
      kernel(n, sd.slice, o.data(), hT.data(), w);
      for (int64_t i = 0; i < L; ++i)
        for (int64_t y = 0; y < p.V; ++y) io.o.set(b, t0 + i, h, y, E(o[i * p.V + y]));
      for (int64_t x = 0; x < p.K; ++x)
        for (int64_t y = 0; y < p.V; ++y) io.hT.set(n, h, x, y, E(hT[x * p.V + y]));
    }
}

/// The chunked forward over a whole problem.
template <class T, class P = Plain, class E>
void chunked_fwd(const Problem& p, const FwdIO<E>& io, T scale, int64_t C = kChunk) {
  run_fwd<T>(p, io, scale, [C](int64_t, const Slice<T>& s, T* o, T* hT, Workspace<T>& w) {
    fwd_slice<T, P>(s, o, hT, w, C);
  });
}

/// Runs a backward slice kernel over every (sequence, head): kernel(n, slice, dO, dhT, dq, dk,
/// dv, dg, dh0, workspace).
template <class T, class E, class Kernel>
void run_bwd(const Problem& p, const BwdIO<E>& io, T scale, Kernel&& kernel) {
  Workspace<T> w;
  SliceData<T> sd;
  const int64_t K = p.K, V = p.V, GW = p.gate_width();
  std::vector<T> dO, dhT, dq, dk, dv, dg, dh0;
  for (int64_t n = 0; n < p.sequences(); ++n)
    for (int64_t h = 0; h < p.H; ++h) {
      sd.gather(p, io.q, io.k, io.v, io.g, io.has_h0 ? &io.h0 : nullptr, n, h, scale);
      const int64_t b = p.batch_of(n), t0 = p.begin(n), L = sd.slice.L;
      dO.resize(L * V);
      for (int64_t i = 0; i < L; ++i)
        for (int64_t y = 0; y < V; ++y) dO[i * V + y] = T(io.dO.get(b, t0 + i, h, y));
      dhT.assign(K * V, T(0));
      if (io.has_dhT)
        for (int64_t x = 0; x < K; ++x)
          for (int64_t y = 0; y < V; ++y) dhT[x * V + y] = T(io.dhT.get(n, h, x, y));
      dq.assign(L * K, T(0));
      dk.assign(L * K, T(0));
      dv.assign(L * V, T(0));
      dg.assign(L * GW, T(0));
      dh0.assign(K * V, T(0));
      kernel(n, sd.slice, dO.data(), io.has_dhT ? dhT.data() : nullptr, dq.data(), dk.data(),
             dv.data(), dg.data(), dh0.data(), w);
      for (int64_t i = 0; i < L; ++i) {
        for (int64_t x = 0; x < K; ++x) {
          io.dq.set(b, t0 + i, h, x, E(dq[i * K + x]));
          io.dk.set(b, t0 + i, h, x, E(dk[i * K + x]));
        }
        for (int64_t y = 0; y < V; ++y) io.dv.set(b, t0 + i, h, y, E(dv[i * V + y]));
        for (int64_t x = 0; x < GW; ++x) io.dg.set(b, t0 + i, h, x, E(dg[i * GW + x]));
      }
      for (int64_t x = 0; x < K; ++x)
        for (int64_t y = 0; y < V; ++y) io.dh0.set(n, h, x, y, E(dh0[x * V + y]));
    }
}

/// The chunked backward over a whole problem.
template <class T, class P = Plain, class E>
void chunked_bwd(const Problem& p, const BwdIO<E>& io, T scale, int64_t C = kChunk) {
  run_bwd<T>(p, io, scale,
             [C](int64_t, const Slice<T>& s, const T* dO, const T* dhT, T* dq, T* dk, T* dv, T* dg,
                 T* dh0, Workspace<T>& w) { bwd_slice<T, P>(s, dO, dhT, dq, dk, dv, dg, dh0, w, C); });
}

}  // namespace glr::cpu
