// Negative control: a CTA pair (cluster of 2) allocates with cta_group::2, and a CTA can reach its
// dealloc with no cluster barrier after the alloc, so it may free the pair's columns before its peer
// has allocated (the launch failure a public CUTLASS report shows). With PAIR_SYNCED defined, the
// same kernel with barrier.cluster arrive/wait after the alloc and before the dealloc: it passes.
#include "tmem_ops.cuh"

__global__ void __cluster_dims__(2, 1, 1) __launch_bounds__(128) tmem_pair(float* out) {
  __shared__ uint32_t slot;
  const int warp = threadIdx.x / 32;
  if (warp == 0) {
    TMEM_ALLOC(2, &slot, 32);
    TMEM_RELINQUISH(2);
  }
#ifdef PAIR_SYNCED
  CLUSTER_SYNC();
#endif
  __syncthreads();
  out[blockIdx.x * blockDim.x + threadIdx.x] = float(slot);
  __syncthreads();
#ifdef PAIR_SYNCED
  CLUSTER_SYNC();
#endif
  if (warp == 0) TMEM_DEALLOC(2, slot, 32);
}
