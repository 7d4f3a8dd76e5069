// Positive control: the sm90 glr backward (include/glr/cuda/sm90/glr_bwd.cuh) through the candidate front
// include/glr/cuda/candidate.cuh, for glr_bwd[_scalar][_bf16|_f16]. Expected: PASS, 12 gates.
#include <kcv/abi.h>
#include <glr/cuda/candidate.cuh>

KCV_DECLARE_ABI_VERSION;

KCV_EXPORT int kcv_run(const kcv_call* call) { return glr::cuda::candidate_bwd(call, /*varlen=*/false); }
