// Negative control (expected to FAIL numerics): the chunked varlen glr forward that starts only the
// first sequence from its h0; every later sequence starts from a zero state.
#include <kcv/abi.h>
#include <glr/cpu_candidate.hpp>

KCV_DECLARE_ABI_VERSION;

extern "C" int kcv_run(const kcv_call* call) {
  using glr::cpu::Slice;
  using glr::cpu::Workspace;
  glr::cpu::Call c;
  if (int rc = glr::cpu::parse(call, /*backward=*/false, /*varlen=*/true, c)) return rc;
  glr::cpu::run_fwd<float>(c.p, c.fwd, c.scale,
                           [](int64_t n, const Slice<float>& s, float* o, float* hT, Workspace<float>& w) {
                             Slice<float> first_only = s;
                             if (n > 0) first_only.h0 = nullptr;  // THE FLAW
                             glr::cpu::fwd_slice<float>(first_only, o, hT, w);
                           });
  return 0;
}
