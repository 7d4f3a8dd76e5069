// Negative control (expected to FAIL numerics): a sequential glr backward for glr_bwd_bf16 that
// keeps its running states in bf16 — the recomputed S_t and the state gradient
// dS_t = exp(g_{t+1}) ⊙ dS_{t+1} + scale q_tᵀ do_t stored in bf16 after every step — with fp32
// products and contractions, as a kernel holding its state tiles in bf16 would. The contract
// admits one rounding per tensor-core operand, not one per step: the roundings compound over the
// sequence and exceed the bound in dh0 (f32).
#include <cmath>
#include <vector>

#include <kcv/abi.h>
#include <glr/cpu_candidate.hpp>

KCV_DECLARE_ABI_VERSION;

extern "C" int kcv_run(const kcv_call* call) {
  using glr::cpu::Slice;
  using glr::cpu::Workspace;
  glr::cpu::Call c;
  if (int rc = glr::cpu::parse(call, /*backward=*/true, /*varlen=*/false, c)) return rc;
  glr::cpu::run_bwd<float>(
      c.p, c.bwd, c.scale,
      [](int64_t, const Slice<float>& s, const float* dO, const float* dhT, float* dq, float* dk, float* dv,
         float* dg, float* dh0, Workspace<float>&) {
        const int64_t K = s.K, V = s.V, KV = K * V, L = s.L, GW = s.GW;
        auto bf16 = [](float x) { return glr::bf16_to_float(glr::float_to_bf16(x)); };
        auto gate = [&](int64_t t, int64_t x) { return std::exp(s.g[t * GW + (GW == 1 ? 0 : x)]); };
        std::vector<float> S((L + 1) * KV), dS(KV), G(KV);  // S[t + 1] = S_t
        for (int64_t e = 0; e < KV; ++e) S[e] = s.h0 ? bf16(s.h0[e]) : 0.0f;
        for (int64_t t = 0; t < L; ++t)
          for (int64_t x = 0; x < K; ++x)
            for (int64_t y = 0; y < V; ++y)  // THE FLAW: the state stored in bf16
              S[(t + 1) * KV + x * V + y] = bf16(gate(t, x) * S[t * KV + x * V + y] + s.k[t * K + x] * s.v[t * V + y]);
        for (int64_t e = 0; e < KV; ++e) G[e] = dhT ? bf16(dhT[e]) : 0.0f;
        for (int64_t t = L - 1; t >= 0; --t) {
          const float* St = S.data() + (t + 1) * KV;
          const float* Sp = S.data() + t * KV;
          for (int64_t x = 0; x < K; ++x)
            for (int64_t y = 0; y < V; ++y)  // THE FLAW: the state gradient stored in bf16
              dS[x * V + y] = bf16(G[x * V + y] + s.scale * s.q[t * K + x] * dO[t * V + y]);
          float dgs = 0;
          for (int64_t x = 0; x < K; ++x) {
            float aq = 0, ak = 0, ag = 0;
            for (int64_t y = 0; y < V; ++y) {
              aq += dO[t * V + y] * St[x * V + y];
              ak += dS[x * V + y] * s.v[t * V + y];
              ag += dS[x * V + y] * Sp[x * V + y];
            }
            dq[t * K + x] = s.scale * aq;
            dk[t * K + x] = ak;
            if (GW == 1) dgs += gate(t, x) * ag;
            else dg[t * K + x] = gate(t, x) * ag;
          }
          if (GW == 1) dg[t] = dgs;
          for (int64_t y = 0; y < V; ++y) {
            float a = 0;
            for (int64_t x = 0; x < K; ++x) a += s.k[t * K + x] * dS[x * V + y];
            dv[t * V + y] = a;
          }
          for (int64_t x = 0; x < K; ++x)
            for (int64_t y = 0; y < V; ++y) G[x * V + y] = bf16(gate(t, x) * dS[x * V + y]);
        }
        for (int64_t e = 0; e < KV; ++e) dh0[e] = G[e];
      });
  return 0;
}
