// Positive control: the sm90 glr backward, varlen (cu_seqlens read on the device only), for
// glr_bwd_varlen[_scalar][_bf16|_f16]. Expected: PASS, 12 gates.
#include <kcv/abi.h>
#include <glr/cuda/candidate.cuh>

KCV_DECLARE_ABI_VERSION;

KCV_EXPORT int kcv_run(const kcv_call* call) { return glr::cuda::candidate_bwd(call, /*varlen=*/true); }
