// Negative control (expected to FAIL numerics): a sequential glr forward that applies the gate after
// adding the new key-value product, S_t = Diag(exp g_t) (S_{t-1} + k_tᵀ v_t), instead of
// S_t = Diag(exp g_t) S_{t-1} + k_tᵀ v_t. Finite, plausible, and wrong by a factor exp(g) per step.
#include <cmath>

#include <kcv/abi.h>
#include <glr/cpu_candidate.hpp>

KCV_DECLARE_ABI_VERSION;

extern "C" int kcv_run(const kcv_call* call) {
  using glr::cpu::Slice;
  using glr::cpu::Workspace;
  glr::cpu::Call c;
  if (int rc = glr::cpu::parse(call, /*backward=*/false, /*varlen=*/false, c)) return rc;
  glr::cpu::run_fwd<float>(c.p, c.fwd, c.scale,
                           [](int64_t, const Slice<float>& s, float* o, float* S, Workspace<float>&) {
                             const int64_t K = s.K, V = s.V;
                             for (int64_t x = 0; x < K * V; ++x) S[x] = s.h0 ? s.h0[x] : 0.0f;
                             for (int64_t t = 0; t < s.L; ++t) {
                               for (int64_t x = 0; x < K; ++x) {
                                 const float a = std::exp(s.g[t * s.GW + (s.GW == 1 ? 0 : x)]);
                                 for (int64_t y = 0; y < V; ++y)
                                   S[x * V + y] = a * (S[x * V + y] + s.k[t * K + x] * s.v[t * V + y]);  // THE FLAW
                               }
                               for (int64_t y = 0; y < V; ++y) {
                                 float acc = 0;
                                 for (int64_t x = 0; x < K; ++x) acc += s.q[t * K + x] * S[x * V + y];
                                 o[t * V + y] = s.scale * acc;
                               }
                             }
                           });
  return 0;
}
