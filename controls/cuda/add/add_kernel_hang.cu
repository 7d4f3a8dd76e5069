/* add_kernel_hang.cu: hostile control for the add contract, cuda backend.
 *
 * BUG: the kernel never ends (it spins until a flag nothing clears is cleared). kcv must give TIMEOUT for every
 * gate (the worker, and with it the CUDA context and the kernel, is killed) and the next gate
 * must get a working GPU.
 * Expected: FAIL; every gate TIMEOUT.
 */
#include <kcv/abi.h>

#include <cuda_runtime.h>

__global__ void spin_forever(volatile int* flag) {
  while (*flag != 0) {
  }
}

extern "C" int kcv_run(const kcv_call* call) {
  // The flag lives in the output buffer the verifier filled with poison (never 0 bytes).
  spin_forever<<<1, 1, 0, static_cast<cudaStream_t>(call->stream)>>>(static_cast<volatile int*>(call->outputs[0].data) + 0);
  return 0;
}
