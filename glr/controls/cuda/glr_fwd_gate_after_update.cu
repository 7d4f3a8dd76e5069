// Negative control (glr_fwd; expected to FAIL numerics): the sm90 forward with the decay applied after
// the state update, S <- exp(b_last) (S + sum_j (k_j exp(b_last - b_j))^T v_j): every new key-value
// product decays once more than it should. Finite, plausible, wrong by about exp(g) per chunk.
// (Fault::gate_after_update in include/glr/cuda/sm90/fault.cuh, the same kernel otherwise.)
#define GLR_CUDA_FAULT gate_after_update
#define GLR_ONLY_F32  // the contract's type, forward only (glr/cuda/built.hpp)
#define GLR_FORWARD_ONLY
#include <kcv/abi.h>
#include <glr/cuda/candidate.cuh>

KCV_DECLARE_ABI_VERSION;

KCV_EXPORT int kcv_run(const kcv_call* call) { return glr::cuda::candidate_fwd(call, /*varlen=*/false); }
