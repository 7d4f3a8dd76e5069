/// glr CUDA family — the split kernels' WMMA loads and stores of shared memory.
///
/// The wmma API takes a generic pointer, so nvcc emits `wmma.load` / `wmma.store` with a 64-bit generic
/// address, which ptxas turns into generic LD.E / ST.E (session 32's ncu source page: 6.4% of dqk's
/// instructions and 5.3% of dstate's, the HMMAs waiting on them on the long scoreboard). Here `load`
/// and `store` issue the same PTX instruction with the `.shared` state space and a 32-bit shared
/// address: the same shape, layout and fragment registers, so the same bits. Every pointer given to
/// them must point into shared memory (each call site of the split kernels does: their operands are
/// staged there). In the host simulation (no __CUDA_ARCH__) they are the wmma API's own calls.
/// This was the A/B switch GLR_WMMA_SMEM (`wsmem`) until session 36: the backward 1.03-1.11x faster
/// on the H100, the forward unchanged (bench/results/glr-bwd-split.md, session 35), and every glr
/// control and glr_cuda_tests passed on it (bench/results/glr-gates.md, sessions 35-36).
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <mma.h>

namespace glr::cuda::sm90::wmma_smem {

namespace wmma = nvcuda::wmma;
template <class Use, class E, class Layout>
using Frag = wmma::fragment<Use, 16, 16, 16, E, Layout>;
using FragC = wmma::fragment<wmma::accumulator, 16, 16, 16, float>;

#if defined(__CUDA_ARCH__)

__device__ __forceinline__ unsigned shared_address(const void* p) {
  return static_cast<unsigned>(__cvta_generic_to_shared(p));
}

// "memory": the compiler must not move a plain store of the same shared memory across these, nor these
// across a barrier (as it does not move the wmma API's calls).
#define GLR_WMMA_SMEM_LOAD8(USE, LAYOUT, E, PTX)                                                              \
  __device__ __forceinline__ void load(Frag<wmma::USE, E, wmma::LAYOUT>& f, const E* p, unsigned ldm) {      \
    unsigned* r = reinterpret_cast<unsigned*>(f.x);                                                          \
    asm volatile(PTX " {%0, %1, %2, %3, %4, %5, %6, %7}, [%8], %9;"                                          \
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3]), "=r"(r[4]), "=r"(r[5]), "=r"(r[6]), "=r"(r[7]) \
                 : "r"(shared_address(p)), "r"(ldm)                                                          \
                 : "memory");                                                                                \
  }
#define GLR_WMMA_SMEM_LOAD4(USE, LAYOUT, E, PTX)                                                         \
  __device__ __forceinline__ void load(Frag<wmma::USE, E, wmma::LAYOUT>& f, const E* p, unsigned ldm) { \
    unsigned* r = reinterpret_cast<unsigned*>(f.x);                                                     \
    asm volatile(PTX " {%0, %1, %2, %3}, [%4], %5;"                                                     \
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])                                       \
                 : "r"(shared_address(p)), "r"(ldm)                                                     \
                 : "memory");                                                                           \
  }
GLR_WMMA_SMEM_LOAD8(matrix_a, row_major, __half, "wmma.load.a.sync.aligned.row.m16n16k16.shared.f16")
GLR_WMMA_SMEM_LOAD8(matrix_a, col_major, __half, "wmma.load.a.sync.aligned.col.m16n16k16.shared.f16")
GLR_WMMA_SMEM_LOAD8(matrix_b, row_major, __half, "wmma.load.b.sync.aligned.row.m16n16k16.shared.f16")
GLR_WMMA_SMEM_LOAD8(matrix_b, col_major, __half, "wmma.load.b.sync.aligned.col.m16n16k16.shared.f16")
GLR_WMMA_SMEM_LOAD4(matrix_a, row_major, __nv_bfloat16, "wmma.load.a.sync.aligned.row.m16n16k16.shared.bf16")
GLR_WMMA_SMEM_LOAD4(matrix_a, col_major, __nv_bfloat16, "wmma.load.a.sync.aligned.col.m16n16k16.shared.bf16")
GLR_WMMA_SMEM_LOAD4(matrix_b, row_major, __nv_bfloat16, "wmma.load.b.sync.aligned.row.m16n16k16.shared.bf16")
GLR_WMMA_SMEM_LOAD4(matrix_b, col_major, __nv_bfloat16, "wmma.load.b.sync.aligned.col.m16n16k16.shared.bf16")
#undef GLR_WMMA_SMEM_LOAD8
#undef GLR_WMMA_SMEM_LOAD4

/// The fp32 accumulator, row-major (the only layout the split kernels keep it in).
__device__ __forceinline__ void load(FragC& f, const float* p, unsigned ldm) {
  float* r = f.x;
  asm volatile("wmma.load.c.sync.aligned.row.m16n16k16.shared.f32 {%0, %1, %2, %3, %4, %5, %6, %7}, [%8], %9;"
               : "=f"(r[0]), "=f"(r[1]), "=f"(r[2]), "=f"(r[3]), "=f"(r[4]), "=f"(r[5]), "=f"(r[6]), "=f"(r[7])
               : "r"(shared_address(p)), "r"(ldm)
               : "memory");
}
__device__ __forceinline__ void store(float* p, const FragC& f, unsigned ldm) {
  const float* r = f.x;
  asm volatile("wmma.store.d.sync.aligned.row.m16n16k16.shared.f32 [%0], {%1, %2, %3, %4, %5, %6, %7, %8}, %9;"
               :
               : "r"(shared_address(p)), "f"(r[0]), "f"(r[1]), "f"(r[2]), "f"(r[3]), "f"(r[4]), "f"(r[5]),
                 "f"(r[6]), "f"(r[7]), "r"(ldm)
               : "memory");
}

#else

template <class Use, class E, class Layout>
__device__ __forceinline__ void load(Frag<Use, E, Layout>& f, const E* p, unsigned ldm) {
  wmma::load_matrix_sync(f, p, ldm);
}
__device__ __forceinline__ void load(FragC& f, const float* p, unsigned ldm) {
  wmma::load_matrix_sync(f, p, ldm, wmma::mem_row_major);
}
__device__ __forceinline__ void store(float* p, const FragC& f, unsigned ldm) {
  wmma::store_matrix_sync(p, f, ldm, wmma::mem_row_major);
}

#endif

}  // namespace glr::cuda::sm90::wmma_smem
