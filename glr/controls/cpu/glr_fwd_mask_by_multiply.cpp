// Negative control (expected to FAIL nonfinite): the chunked glr forward, except that the intra-chunk
// matrix is formed for every (i, j) and the causal mask is applied by multiplying with 0/1.
// On finite inputs that is exact (the exponent is clamped to <= 0, so nothing overflows), but a
// NaN or Inf in k or v at a later step j > i leaks into o_i: 0 · NaN = NaN.
#include <algorithm>
#include <cmath>

#include <kcv/abi.h>
#include <glr/cpu_candidate.hpp>

KCV_DECLARE_ABI_VERSION;

namespace {

using glr::cpu::Slice;
using glr::cpu::Workspace;

void fwd_slice_mask_by_multiply(const Slice<float>& s, float* o, float* S, Workspace<float>& w) {
  const int64_t C = glr::cpu::kChunk, K = s.K, V = s.V, GW = s.GW;
  for (int64_t x = 0; x < K * V; ++x) S[x] = s.h0 ? s.h0[x] : 0.0f;
  w.b.assign(C * GW, 0.0f);
  w.A.assign(C * C, 0.0f);
  for (int64_t c0 = 0; c0 < s.L; c0 += C) {
    const int64_t n = std::min(C, s.L - c0);
    const float* q = s.q + c0 * K;
    const float* k = s.k + c0 * K;
    const float* v = s.v + c0 * V;
    float* b = w.b.data();
    glr::cpu::detail::local_cumsum(s.g + c0 * GW, n, GW, b);
    for (int64_t i = 0; i < n; ++i)
      for (int64_t j = 0; j < n; ++j) {  // THE FLAW: the full matrix, then a multiplicative mask
        float a = 0;
        for (int64_t x = 0; x < K; ++x) {
          const int64_t gx = GW == 1 ? 0 : x;
          a += q[i * K + x] * k[j * K + x] * std::exp(std::min(0.0f, b[i * GW + gx] - b[j * GW + gx]));
        }
        w.A[i * C + j] = a * (j <= i ? 1.0f : 0.0f);
      }
    for (int64_t i = 0; i < n; ++i)
      for (int64_t y = 0; y < V; ++y) {
        float acc = 0;
        for (int64_t x = 0; x < K; ++x)
          acc += q[i * K + x] * std::exp(b[i * GW + (GW == 1 ? 0 : x)]) * S[x * V + y];
        for (int64_t j = 0; j < n; ++j) acc += w.A[i * C + j] * v[j * V + y];
        o[(c0 + i) * V + y] = s.scale * acc;
      }
    glr::cpu::detail::state_update<float, glr::cpu::Plain>(k, v, b, n, K, V, GW, S);
  }
}

}  // namespace

extern "C" int kcv_run(const kcv_call* call) {
  glr::cpu::Call c;
  if (int rc = glr::cpu::parse(call, /*backward=*/false, /*varlen=*/false, c)) return rc;
  glr::cpu::run_fwd<float>(c.p, c.fwd, c.scale,
                           [](int64_t, const Slice<float>& s, float* o, float* hT, Workspace<float>& w) {
                             fwd_slice_mask_by_multiply(s, o, hT, w);
                           });
  return 0;
}
