// Positive control: the chunked glr fwd as a tensor-core kernel computes it, for the bf16/f16
// contracts (glr_fwd[_varlen][_scalar]_{bf16,f16}; with f32 inputs it is the plain fp32 control):
// every operand of every matrix product — q⊙exp(b), k⊙exp(b_last − b), the intra-chunk matrix A,
// the state S used as an operand — rounded once to q's dtype (as an MMA with bf16/f16 operands
// reads them), fp32 accumulation, the state carried between chunks in fp32. The contracts admit
// exactly this (docs/glr.md, "Reduced-precision inputs"). Varlen follows the input count.
#include <kcv/abi.h>
#include <glr/cpu_candidate.hpp>

KCV_DECLARE_ABI_VERSION;

extern "C" int kcv_run(const kcv_call* call) {
  const bool varlen = call && call->n_inputs == 6;
  return glr::cpu::candidate_fwd_with<glr::cpu::TensorCore16>(call, varlen);
}
