// Positive control: the sm90 glr forward, varlen (cu_seqlens read on the device only), through the candidate
// front include/glr/cuda/candidate.cuh, for glr_fwd_varlen and glr_fwd_varlen_scalar (the gate form follows
// g's rank). Non-dense inputs are gathered on call->stream first. Only the f32 forward kernels are compiled
// (glr/cuda/built.hpp): the contracts it is judged on are f32.
// Expected: PASS, 12 gates.
#define GLR_ONLY_F32
#define GLR_FORWARD_ONLY
#include <kcv/abi.h>
#include <glr/cuda/candidate.cuh>

KCV_DECLARE_ABI_VERSION;

KCV_EXPORT int kcv_run(const kcv_call* call) { return glr::cuda::candidate_fwd(call, /*varlen=*/true); }
