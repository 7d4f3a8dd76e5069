// The sm100 backward's translation unit for the binary check (tests/sm100/check_binary.py): every
// sm100_glr_bwd_chunks instantiation the dispatcher can launch, compiled by CMake with
// -gencode arch=compute_100a,code=sm_100a (PTX and cubin kept in the build tree) and once for
// sm_90a, where the kernel must hold no tcgen05 instruction (its body is a trap there).
#include "glr/cuda/sm100/glr_bwd.cuh"

namespace b = glr::cuda::sm100::bwd_detail;
template __global__ void b::sm100_glr_bwd_chunks<__nv_bfloat16, true>(b::Args<float>, b::TmemArgs);
template __global__ void b::sm100_glr_bwd_chunks<__nv_bfloat16, false>(b::Args<float>, b::TmemArgs);
template __global__ void b::sm100_glr_bwd_chunks<__half, true>(b::Args<float>, b::TmemArgs);
template __global__ void b::sm100_glr_bwd_chunks<__half, false>(b::Args<float>, b::TmemArgs);
