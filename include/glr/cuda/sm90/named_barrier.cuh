/// glr CUDA family: named barriers (PTX bar.sync and bar.arrive, ids 1-15; 0 is __syncthreads's), for
/// kernels whose warps take different roles, such as a producer filling a ring of shared-memory buffers
/// and the warps that consume them (the fused kernels of docs/glr-roofline.md). named_sync waits until
/// `threads` threads (a multiple of 32, itself counted) have arrived at barrier `id` by either call;
/// named_arrive counts itself there and goes on: a producer arrives at a buffer's "full" barrier where
/// its consumers wait, and the consumers arrive at its "empty" barrier where the producer waits before
/// refilling it. bench/glr/split_sim emulates both (sim.hpp; gen.py puts its version in this header's
/// place), and its barrier test shows a use-after-release race there (barrier_ring.cuh).
#pragma once

namespace glr::cuda::sm90 {

__device__ __forceinline__ void named_sync(int id, int threads) {
  asm volatile("bar.sync %0, %1;\n" ::"r"(id), "r"(threads) : "memory");
}

__device__ __forceinline__ void named_arrive(int id, int threads) {
  asm volatile("bar.arrive %0, %1;\n" ::"r"(id), "r"(threads) : "memory");
}

}  // namespace glr::cuda::sm90
