// Negative control (expected to FAIL numerics): a sequential glr forward for glr_fwd_bf16 that
// keeps its running state in bf16 — S_t = bf16(exp(g_t) ⊙ S_{t-1} + k_tᵀ v_t), products and the
// q·S contraction in fp32 — as a kernel holding its state tile in bf16 registers or shared memory
// would. The contract admits one rounding to bf16 per tensor-core operand, with fp32 accumulation
// and an fp32 state: a rounding at every step compounds along the sequence and exceeds the bound
// in hT (f32), about 2x on random data (the o budget, three operand roundings per term, absorbs it).
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
                             auto bf16 = [](float x) { return glr::bf16_to_float(glr::float_to_bf16(x)); };
                             for (int64_t x = 0; x < K * V; ++x) S[x] = s.h0 ? bf16(s.h0[x]) : 0.0f;
                             for (int64_t t = 0; t < s.L; ++t) {
                               for (int64_t x = 0; x < K; ++x) {
                                 const float a = std::exp(s.g[t * s.GW + (s.GW == 1 ? 0 : x)]);
                                 for (int64_t y = 0; y < V; ++y)  // THE FLAW: the state stored in bf16
                                   S[x * V + y] = bf16(a * S[x * V + y] + s.k[t * K + x] * s.v[t * V + y]);
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
