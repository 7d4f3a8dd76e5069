/// glr CUDA family, sm90 backward (sm90_glr_bwd). PLACEHOLDER until the kernel lands: refuses.
#pragma once

#include "glr/cuda.hpp"
#include "glr/cuda/sm90/common.cuh"

namespace glr::cuda::sm90 {

inline size_t bwd_workspace_bytes(const Shape&) { return 0; }

inline Status launch_bwd(const BwdParams&, cudaStream_t) { return {"glr::cuda::backward: not built yet"}; }

}  // namespace glr::cuda::sm90
