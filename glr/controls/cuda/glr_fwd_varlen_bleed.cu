// Negative control (glr_fwd_varlen; expected to FAIL numerics): varlen sequences bleed into each other
// at a boundary: each sequence's state also takes in the next sequence's first step, so hT of every
// sequence but the last is wrong (o is not: the extra step comes after every output of the sequence).
// (Fault::varlen_bleed in include/glr/cuda/sm90/fault.cuh.)
#define GLR_CUDA_FAULT varlen_bleed
#define GLR_ONLY_F32  // the contract's type, forward only (glr/cuda/built.hpp)
#define GLR_FORWARD_ONLY
#include <kcv/abi.h>
#include <glr/cuda/candidate.cuh>

KCV_DECLARE_ABI_VERSION;

KCV_EXPORT int kcv_run(const kcv_call* call) { return glr::cuda::candidate_fwd(call, /*varlen=*/true); }
