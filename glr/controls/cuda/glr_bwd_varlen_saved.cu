// Positive control: the sm90 glr backward as an autograd caller runs it (include/glr/cuda/candidate.cuh,
// candidate_bwd_from_saved): a forward of the same inputs keeps its states (glr::cuda::FwdParams::saved),
// then the backward reads them instead of recomputing them. For glr_bwd_varlen[_scalar]_bf16|_f16, the
// contracts whose kernels keep states (saved_states_bytes > 0). Expected: PASS, 12 gates.
#include <kcv/abi.h>
#include <glr/cuda/candidate.cuh>

KCV_DECLARE_ABI_VERSION;

KCV_EXPORT int kcv_run(const kcv_call* call) { return glr::cuda::candidate_bwd_from_saved(call, /*varlen=*/true); }
