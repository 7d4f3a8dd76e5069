/// glr CUDA family, sm100 — the few tcgen05 instructions sm100_glr_bwd uses, as inline
/// PTX. Everything that emits an instruction exists only in the sm_100a/sm_103a (or family
/// sm_100f/sm_103f) device pass (GLR_SM100_DEVICE); elsewhere none of it is compiled and the
/// kernel's body is a trap (the dispatcher checks the device first).
///
/// The descriptors and the operand layout: umma_desc.hpp (unverified without a Blackwell GPU).
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "glr/cuda/sm100/tma.cuh"  // mbarriers, TMA, smem_u32, fence_proxy_async (sm_90 and later)
#include "glr/cuda/sm100/umma_desc.hpp"

#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 1000 &&                                        \
    (defined(__CUDA_ARCH_FEAT_SM100_ALL) || defined(__CUDA_ARCH_FEAT_SM103_ALL) ||              \
     (defined(__CUDA_ARCH_FAMILY_SPECIFIC__) && (__CUDA_ARCH_FAMILY_SPECIFIC__ == 1000 ||       \
                                                 __CUDA_ARCH_FAMILY_SPECIFIC__ == 1030)))
#define GLR_SM100_DEVICE 1
#endif

namespace glr::cuda::sm100 {

#if defined(GLR_SM100_DEVICE)

/// Whole warp: allocate `ncols` TMEM columns; the address lands in shared memory at `dst`.
__device__ __forceinline__ void tmem_alloc(uint32_t dst, uint32_t ncols) {
  asm volatile("tcgen05.alloc.cta_group::1.sync.aligned.shared::cta.b32 [%0], %1;" ::"r"(dst), "r"(ncols)
               : "memory");
}
/// Whole warp: this CTA allocates no more (lets blocked allocators of other CTAs proceed).
__device__ __forceinline__ void tmem_relinquish() {
  asm volatile("tcgen05.relinquish_alloc_permit.cta_group::1.sync.aligned;" ::: "memory");
}
/// Whole warp (the one that allocated): free the columns.
__device__ __forceinline__ void tmem_dealloc(uint32_t taddr, uint32_t ncols) {
  asm volatile("tcgen05.dealloc.cta_group::1.sync.aligned.b32 %0, %1;" ::"r"(taddr), "r"(ncols) : "memory");
}
__device__ __forceinline__ void fence_before_sync() {
  asm volatile("tcgen05.fence::before_thread_sync;" ::: "memory");
}
__device__ __forceinline__ void fence_after_sync() {
  asm volatile("tcgen05.fence::after_thread_sync;" ::: "memory");
}
/// One thread: D[tmem] (+)= A[smem] · B[smem]ᵀ, kind::f16, fp32 accumulate.
__device__ __forceinline__ void mma_f16(uint32_t d_tmem, uint64_t a_desc, uint64_t b_desc, uint32_t idesc,
                                        bool accumulate) {
  asm volatile(
      "{\n\t.reg .pred p;\n\tsetp.ne.b32 p, %4, 0;\n\t"
      "tcgen05.mma.cta_group::1.kind::f16 [%0], %1, %2, %3, p;\n\t}" ::"r"(d_tmem),
      "l"(a_desc), "l"(b_desc), "r"(idesc), "r"(uint32_t(accumulate))
      : "memory");
}
/// One thread: the mbarrier gets one arrival when every MMA this thread issued has completed.
__device__ __forceinline__ void mma_commit(uint32_t mbar) {
  asm volatile("tcgen05.commit.cta_group::1.mbarrier::arrive::one.shared::cluster.b64 [%0];" ::"r"(mbar)
               : "memory");
}
/// Whole warp: 16 consecutive 32-bit columns of this thread's lane (32x32b shape).
__device__ __forceinline__ void tmem_ld16(uint32_t taddr, float (&v)[16]) {
  uint32_t r[16];
  asm volatile(
      "tcgen05.ld.sync.aligned.32x32b.x16.b32 {%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, "
      "%14, %15}, [%16];"
      : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3]), "=r"(r[4]), "=r"(r[5]), "=r"(r[6]), "=r"(r[7]),
        "=r"(r[8]), "=r"(r[9]), "=r"(r[10]), "=r"(r[11]), "=r"(r[12]), "=r"(r[13]), "=r"(r[14]), "=r"(r[15])
      : "r"(taddr)
      : "memory");
  asm volatile("tcgen05.wait::ld.sync.aligned;" ::: "memory");
#pragma unroll
  for (int i = 0; i < 16; ++i) v[i] = __uint_as_float(r[i]);
}

/// Waits for the grid this one depends on (programmatic dependent launch); a no-op otherwise.
__device__ __forceinline__ void griddep_wait() { asm volatile("griddepcontrol.wait;" ::: "memory"); }

#endif  // GLR_SM100_DEVICE

}  // namespace glr::cuda::sm100
