// Positive control: the sm90 glr backward from a varlen forward's kept states (candidate_bwd_from_saved,
// varlen), through the candidate front include/glr/cuda/candidate.cuh, for glr_bwd_varlen_bf16.saved and
// glr_bwd_varlen_scalar_bf16.saved (the controls of glr_bwd_varlen_bf16 and glr_bwd_varlen_scalar_bf16) (the
// gate form follows g's rank). Non-dense inputs are gathered on call->stream first. Only the bf16 kernels are
// compiled (glr/cuda/built.hpp): the contracts it is judged on are bf16.
// Expected: PASS, 12 gates.
#define GLR_ONLY_BF16
#include <kcv/abi.h>
#include <glr/cuda/candidate.cuh>

KCV_DECLARE_ABI_VERSION;

KCV_EXPORT int kcv_run(const kcv_call* call) { return glr::cuda::candidate_bwd_from_saved(call, /*varlen=*/true); }
