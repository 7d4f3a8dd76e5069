// Negative control (expected to FAIL shapes): the chunked glr forward that only processes whole
// 64-step chunks. The last partial chunk is skipped: its outputs are written as 0 and hT is the
// state after the last whole chunk. Right at the nominal T = 256, wrong at T = 63, 65, 1000, ...
#include <kcv/abi.h>
#include <glr/cpu_candidate.hpp>

KCV_DECLARE_ABI_VERSION;

extern "C" int kcv_run(const kcv_call* call) {
  using glr::cpu::Slice;
  using glr::cpu::Workspace;
  glr::cpu::Call c;
  if (int rc = glr::cpu::parse(call, /*backward=*/false, /*varlen=*/false, c)) return rc;
  glr::cpu::run_fwd<float>(c.p, c.fwd, c.scale,
                           [](int64_t, const Slice<float>& s, float* o, float* hT, Workspace<float>& w) {
                             Slice<float> whole = s;
                             whole.L = s.L - s.L % glr::cpu::kChunk;  // THE FLAW
                             glr::cpu::fwd_slice<float>(whole, o, hT, w);
                             for (int64_t i = whole.L * s.V; i < s.L * s.V; ++i) o[i] = 0.0f;
                           });
  return 0;
}
