// Positive control: the sm90 glr backward (include/glr/cuda/sm90/glr_bwd.cuh: the split tensor-core kernels
// for bf16 and f16, the FFMA backward for f32), which recomputes the forward's states, through the candidate
// front include/glr/cuda/candidate.cuh, for glr_bwd and glr_bwd_scalar (the gate form follows g's rank). Non-
// dense inputs are gathered on call->stream first. Only the f32 kernels are compiled (glr/cuda/built.hpp):
// the contracts it is judged on are f32.
// Expected: PASS, 12 gates.
#define GLR_ONLY_F32
#include <kcv/abi.h>
#include <glr/cuda/candidate.cuh>

KCV_DECLARE_ABI_VERSION;

KCV_EXPORT int kcv_run(const kcv_call* call) { return glr::cuda::candidate_bwd(call, /*varlen=*/false); }
