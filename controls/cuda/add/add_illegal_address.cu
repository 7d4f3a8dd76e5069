/* add_illegal_address.cu: hostile control for the add contract, cuda backend.
 *
 * BUG: the kernel writes through a wild device pointer: the launch ends in a sticky
 * cudaErrorIllegalAddress, which poisons the CUDA context of the process for good.
 * kcv must give CRASH (a device error) for every gate, never PASS, and the next gate must get a
 * working GPU: only the worker process that ran this candidate is lost.
 * Expected: FAIL; every gate CRASH.
 */
#include <kcv/abi.h>

#include <cuda_runtime.h>
#include <stdint.h>

__global__ void wild_write(float* out) { out[threadIdx.x] = 1.0f; }

extern "C" int kcv_run(const kcv_call* call) {
  float* wild = reinterpret_cast<float*>(uintptr_t{0x10});  // not a device allocation
  wild_write<<<1, 32, 0, static_cast<cudaStream_t>(call->stream)>>>(wild);
  return 0;
}
