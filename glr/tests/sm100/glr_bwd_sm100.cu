// The sm100 backward's translation unit for the binary check (glr/tests/sm100/check_binary.py): every
// sm100_glr_bwd_chunks instantiation the dispatcher can launch (bf16/f16 x vector/scalar gate x
// the allocations of kRunAllocColumns), compiled by CMake with
// -gencode arch=compute_100a,code=sm_100a (PTX and cubin kept in the build tree) and once for
// sm_90a, where the kernel must hold no tcgen05 instruction (its body is a trap there).
#include "glr/cuda/sm100/glr_bwd.cuh"

namespace b = glr::cuda::sm100::bwd_detail;
static_assert(sizeof(b::kRunAllocColumns) / sizeof(int) == 2 && b::kRunAllocColumns[0] == 32 &&
                  b::kRunAllocColumns[1] == 64,
              "instantiate every allocation of kRunAllocColumns below");
template __global__ void b::sm100_glr_bwd_chunks<__nv_bfloat16, true, 32>(b::Args<float>, b::TmemArgs, const __grid_constant__ b::TmaMaps);
template __global__ void b::sm100_glr_bwd_chunks<__nv_bfloat16, true, 64>(b::Args<float>, b::TmemArgs, const __grid_constant__ b::TmaMaps);
template __global__ void b::sm100_glr_bwd_chunks<__nv_bfloat16, false, 32>(b::Args<float>, b::TmemArgs, const __grid_constant__ b::TmaMaps);
template __global__ void b::sm100_glr_bwd_chunks<__nv_bfloat16, false, 64>(b::Args<float>, b::TmemArgs, const __grid_constant__ b::TmaMaps);
template __global__ void b::sm100_glr_bwd_chunks<__half, true, 32>(b::Args<float>, b::TmemArgs, const __grid_constant__ b::TmaMaps);
template __global__ void b::sm100_glr_bwd_chunks<__half, true, 64>(b::Args<float>, b::TmemArgs, const __grid_constant__ b::TmaMaps);
template __global__ void b::sm100_glr_bwd_chunks<__half, false, 32>(b::Args<float>, b::TmemArgs, const __grid_constant__ b::TmaMaps);
template __global__ void b::sm100_glr_bwd_chunks<__half, false, 64>(b::Args<float>, b::TmemArgs, const __grid_constant__ b::TmaMaps);
