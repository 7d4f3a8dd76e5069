// Negative control: allocates and deallocates, but never relinquishes the allocation permit.
#include "tmem_ops.cuh"

__global__ void __launch_bounds__(128) tmem_missing_relinquish(float* out) {
  __shared__ uint32_t slot;
  const int warp = threadIdx.x / 32;
  if (warp == 0) TMEM_ALLOC(1, &slot, 32);
  __syncthreads();
  out[blockIdx.x * blockDim.x + threadIdx.x] = float(slot);
  __syncthreads();
  if (warp == 0) TMEM_DEALLOC(1, slot, 32);
}
