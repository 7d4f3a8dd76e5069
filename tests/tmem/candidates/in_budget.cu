// Positive control: 64 columns, at most 8 CTAs per SM (256 threads): 512; allocated and
// relinquished by warp 0, deallocated by warp 0 after the final barrier on every path.
#include "tmem_ops.cuh"

__global__ void __launch_bounds__(256) tmem_in_budget(float* out, int n) {
  __shared__ uint32_t slot;
  const int warp = threadIdx.x / 32;
  if (warp == 0) {
    TMEM_ALLOC(1, &slot, 64);
    TMEM_RELINQUISH(1);
  }
  __syncthreads();
  if (n > 0) out[blockIdx.x * blockDim.x + threadIdx.x] = float(slot);
  __syncthreads();
  if (warp == 0) TMEM_DEALLOC(1, slot, 64);
}
