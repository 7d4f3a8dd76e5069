// Negative control (glr_fwd; expected to FAIL sanitizer): the sm90 forward without the barrier between
// the inter-chunk pass (every warp reads the K tile's rows of the state S in shared memory) and the
// state update (each thread writes its S elements): a read-after-write hazard between warps on S that
// compute-sanitizer racecheck reports. The values mostly come out right: only a race detector sees it.
// (Fault::inter_race in include/glr/cuda/sm90/fault.cuh.)
#define GLR_CUDA_FAULT inter_race
#define GLR_ONLY_F32  // the contract's type, forward only (glr/cuda/built.hpp)
#define GLR_FORWARD_ONLY
#include <kcv/abi.h>
#include <glr/cuda/candidate.cuh>

KCV_DECLARE_ABI_VERSION;

KCV_EXPORT int kcv_run(const kcv_call* call) { return glr::cuda::candidate_fwd(call, /*varlen=*/false); }
