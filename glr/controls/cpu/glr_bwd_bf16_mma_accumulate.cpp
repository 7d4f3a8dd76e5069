// Negative control (expected to FAIL numerics): the chunked glr bwd with tensor-core operands in
// the input dtype, as glr_bwd_tensor_core.cpp, but with a 16-bit accumulator: the running sum of
// every matrix product — the state and state-gradient updates included — rounded to q's dtype
// after every add. One rounding per operand is admitted, not one per add: the state gradient's
// roundings compound over the sequence and exceed the bound in dh0.
#include <kcv/abi.h>
#include <glr/cpu_candidate.hpp>

KCV_DECLARE_ABI_VERSION;

extern "C" int kcv_run(const kcv_call* call) {
  return glr::cpu::candidate_bwd_with<glr::cpu::Accumulate16>(call, /*varlen=*/false);
}
