// Negative control: 512 columns per CTA, and two CTAs fit on one SM (1024 threads each, few
// registers, no shared memory to speak of): the second CTA's alloc blocks until the first exits.
#include "tmem_ops.cuh"

__global__ void __launch_bounds__(1024) tmem_512_cols(float* out) {
  __shared__ uint32_t slot;
  const int warp = threadIdx.x / 32;
  if (warp == 0) {
    TMEM_ALLOC(1, &slot, 512);
    TMEM_RELINQUISH(1);
  }
  __syncthreads();
  out[blockIdx.x * blockDim.x + threadIdx.x] = float(slot);
  __syncthreads();
  if (warp == 0) TMEM_DEALLOC(1, slot, 512);
}
