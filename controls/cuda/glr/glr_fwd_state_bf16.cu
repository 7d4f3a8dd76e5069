// Negative control (glr_fwd_bf16; expected to FAIL numerics): the sm90 forward keeps its running state
// in bf16 (rounded after every chunk's update): the bf16 contract admits input/output rounding and
// one rounding of tensor-core operands, never a bf16 state (docs/glr.md). hT and o exceed the bound.
// (Fault::state_bf16 in include/glr/cuda/sm90/fault.cuh.)
#define GLR_CUDA_FAULT state_bf16
#include <kcv/abi.h>
#include <glr/cuda/candidate.cuh>

KCV_DECLARE_ABI_VERSION;

KCV_EXPORT int kcv_run(const kcv_call* call) { return glr::cuda::candidate_fwd(call, /*varlen=*/false); }
