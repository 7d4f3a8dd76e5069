// Negative control (glr_fwd; expected to FAIL shapes): the sm90 forward that does not carry a last
// partial chunk (fewer than 64 steps) into the state: hT misses those steps whenever T is not a
// multiple of 64. The nominal T = 256 hides it; the shapes gate's T = 1, 3, 13, 127, ... do not.
// (Fault::drop_last_state in include/glr/cuda/sm90/fault.cuh.)
#define GLR_CUDA_FAULT drop_last_state
#define GLR_ONLY_F32  // the contract's type, forward only (glr/cuda/built.hpp)
#define GLR_FORWARD_ONLY
#include <kcv/abi.h>
#include <glr/cuda/candidate.cuh>

KCV_DECLARE_ABI_VERSION;

KCV_EXPORT int kcv_run(const kcv_call* call) { return glr::cuda::candidate_fwd(call, /*varlen=*/false); }
