// barrier_ring.cuh's three forms for nvcc: glr.named_barrier_ptx (glr/CMakeLists.txt) compiles this to
// PTX for sm_90a and sm_100a and looks for the named barriers' bar.sync and bar.arrive there.
#include "barrier_ring.cuh"

template __global__ void glr::cuda::sm90::barrier_ring<glr::cuda::sm90::kRingRight>(const float*, float*, int);
template __global__ void glr::cuda::sm90::barrier_ring<glr::cuda::sm90::kRingEarlyFree>(const float*, float*, int);
template __global__ void glr::cuda::sm90::barrier_ring<glr::cuda::sm90::kRingNoFill>(const float*, float*, int);
