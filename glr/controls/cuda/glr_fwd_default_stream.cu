// Negative control (glr_fwd; expected to FAIL concurrency): the candidate enqueues all its work (scratch,
// gathers, the sm90 forward) on the legacy default stream instead of call->stream. call->stream is
// non-blocking, so the kernel may read the inputs before the caller's writer kernel has filled them
// and may still run when the caller synchronizes its stream. (Fault::default_stream.)
#define GLR_CUDA_FAULT default_stream
#define GLR_ONLY_F32  // the contract's type, forward only (glr/cuda/built.hpp)
#define GLR_FORWARD_ONLY
#include <kcv/abi.h>
#include <glr/cuda/candidate.cuh>

KCV_DECLARE_ABI_VERSION;

KCV_EXPORT int kcv_run(const kcv_call* call) { return glr::cuda::candidate_fwd(call, /*varlen=*/false); }
