// Negative control (glr_fwd; expected to FAIL nonfinite): the sm90 forward forms the intra-chunk
// matrix for every (i, j), j > i included, then multiplies it by a 0/1 causal mask and sums over all j:
// 0 * NaN and 0 * Inf are NaN, so a NaN or Inf at a later step (or exp(b_i - b_j) > 0 overflowing)
// leaks into earlier outputs. (Fault::mask_by_multiply in include/glr/cuda/sm90/fault.cuh.)
#define GLR_CUDA_FAULT mask_by_multiply
#define GLR_ONLY_F32  // the contract's type, forward only (glr/cuda/built.hpp)
#define GLR_FORWARD_ONLY
#include <kcv/abi.h>
#include <glr/cuda/candidate.cuh>

KCV_DECLARE_ABI_VERSION;

KCV_EXPORT int kcv_run(const kcv_call* call) { return glr::cuda::candidate_fwd(call, /*varlen=*/false); }
