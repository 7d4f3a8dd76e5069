// Positive control: the sm90 glr forward (include/glr/cuda/sm90/glr_fwd.cuh: the split tensor-core kernels
// for bf16 and f16, the FFMA kernel for f32; fp32 state and sums, masking by select, exp arguments <= 0),
// through the candidate front include/glr/cuda/candidate.cuh, for glr_fwd_bf16 and glr_fwd_scalar_bf16 (the
// gate form follows g's rank). Non-dense inputs are gathered on call->stream first. Only the bf16 forward
// kernels are compiled (glr/cuda/built.hpp): the contracts it is judged on are bf16.
// Expected: PASS, 12 gates.
#define GLR_ONLY_BF16
#define GLR_FORWARD_ONLY
#include <kcv/abi.h>
#include <glr/cuda/candidate.cuh>

KCV_DECLARE_ABI_VERSION;

KCV_EXPORT int kcv_run(const kcv_call* call) { return glr::cuda::candidate_fwd(call, /*varlen=*/false); }
