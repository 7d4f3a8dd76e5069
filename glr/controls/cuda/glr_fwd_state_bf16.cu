// Negative control (glr_fwd_bf16; expected to FAIL shapes): the sm90 forward keeps its running state
// in bf16 (rounded after every chunk's update): the bf16 contract admits input/output rounding and
// one rounding of tensor-core operands, never a bf16 state (docs/glr.md). hT exceeds the bound.
// NOTES: since the contract admits the state's rounding as an MMA operand (once per term), the
// numerics gate's short sequences no longer separate it (H200, session 13: numerics passes; shapes
// and values fail, hT 0.0208 beyond its bound at T = 65); a population test (issue 21 item 3)
// would see the compounding at every length.
// (Fault::state_bf16 in include/glr/cuda/sm90/fault.cuh.)
#define GLR_CUDA_FAULT state_bf16
#define GLR_ONLY_BF16  // the contract's type, forward only (glr/cuda/built.hpp)
#define GLR_FORWARD_ONLY
#include <kcv/abi.h>
#include <glr/cuda/candidate.cuh>

KCV_DECLARE_ABI_VERSION;

KCV_EXPORT int kcv_run(const kcv_call* call) { return glr::cuda::candidate_fwd(call, /*varlen=*/false); }
