// Positive control: the chunked glr bwd as a tensor-core kernel computes it, for the bf16/f16
// contracts (glr_bwd[_varlen][_scalar]_{bf16,f16}): every operand of every matrix product — do·vᵀ,
// A, q⊙exp(b), k⊙exp(b_last − b), the recomputed state H and the state gradient G used as operands
// — rounded once to q's dtype, fp32 accumulation, fp32 state and state gradient between chunks.
// Varlen follows the input count.
#include <kcv/abi.h>
#include <glr/cpu_candidate.hpp>

KCV_DECLARE_ABI_VERSION;

extern "C" int kcv_run(const kcv_call* call) {
  const bool varlen = call && call->n_inputs == 8;
  return glr::cpu::candidate_bwd_with<glr::cpu::TensorCore16>(call, varlen);
}
