// Negative control: warp 0 returns early when n == 0, still holding its 32 columns (the other
// paths deallocate). Within budget: 32 columns x 16 CTAs (128 threads) = 512.
#include "tmem_ops.cuh"

__global__ void __launch_bounds__(128) tmem_missing_dealloc(float* out, int n) {
  __shared__ uint32_t slot;
  const int warp = threadIdx.x / 32;
  if (warp == 0) {
    TMEM_ALLOC(1, &slot, 32);
    TMEM_RELINQUISH(1);
  }
  __syncthreads();
  if (n == 0) return;
  out[blockIdx.x * blockDim.x + threadIdx.x] = float(slot);
  __syncthreads();
  if (warp == 0) TMEM_DEALLOC(1, slot, 32);
}
