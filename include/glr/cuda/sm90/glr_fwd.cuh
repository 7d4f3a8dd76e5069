/// glr CUDA family, sm90 forward (sm90_glr_fwd). PLACEHOLDER until the kernel lands: refuses.
#pragma once

#include "glr/cuda.hpp"
#include "glr/cuda/sm90/common.cuh"

namespace glr::cuda::sm90 {

inline size_t fwd_workspace_bytes(const Shape&) { return 0; }

inline Status launch_fwd(const FwdParams&, cudaStream_t) { return {"glr::cuda::forward: not built yet"}; }

}  // namespace glr::cuda::sm90
