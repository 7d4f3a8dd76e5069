// Negative control (expected to FAIL numerics): the chunked glr fwd with tensor-core operands in
// the input dtype, as glr_fwd_tensor_core.cpp, but with a 16-bit accumulator: the running sum of
// every matrix product — the state update S += (k⊙exp)ᵀ v included — rounded to q's dtype after
// every add. The contracts admit one rounding per operand, not per add: the state's roundings
// compound over the sequence and exceed the bound in hT.
#include <kcv/abi.h>
#include <glr/cpu_candidate.hpp>

KCV_DECLARE_ABI_VERSION;

extern "C" int kcv_run(const kcv_call* call) {
  return glr::cpu::candidate_fwd_with<glr::cpu::Accumulate16>(call, /*varlen=*/false);
}
