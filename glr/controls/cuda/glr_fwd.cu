// Positive control: the sm90 glr forward (include/glr/cuda/sm90/glr_fwd.cuh, chunk 64, fp32 state and
// sums, masking by select, exp arguments <= 0) through the candidate front include/glr/cuda/candidate.cuh,
// for glr_fwd and glr_fwd_scalar (the gate form follows g's rank) and their _bf16/_f16 variants (the
// dtype follows q's). Non-dense inputs are gathered on call->stream first. Expected: PASS, 12 gates.
#include <kcv/abi.h>
#include <glr/cuda/candidate.cuh>

KCV_DECLARE_ABI_VERSION;

KCV_EXPORT int kcv_run(const kcv_call* call) { return glr::cuda::candidate_fwd(call, /*varlen=*/false); }
