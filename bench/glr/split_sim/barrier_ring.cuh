// A ring of two shared-memory buffers between two producer warps and six consumer warps, on the named
// barriers of include/glr/cuda/sm90/named_barrier.cuh: the pattern of the fused kernels that
// docs/glr-roofline.md plans. The simulation's test of those barriers (run_barriers.sh, with
// barrier_harness.cpp) and their PTX check (glr/CMakeLists.txt, glr.named_barrier_ptx) build it.
// Step s fills buffer s % 2 with in[s·256 .. s·256 + 255]; consumer c adds (s + 1)·Σ_{i<4}
// buf[(5c + 3s + i) % 256] to its sum, which it writes to out[blockIdx.x·192 + c]. Forms:
//   kRingRight     0: a consumer frees a buffer (arrives at its "empty" barrier) after reading it
//   kRingEarlyFree 1: before reading it: a race with the producer's next fill of that buffer
//   kRingNoFill    2: the producer never announces step 0 (no arrival at "full"): a deadlock
#pragma once

#include "glr/cuda/sm90/named_barrier.cuh"

namespace glr::cuda::sm90 {

inline constexpr int kRingRight = 0, kRingEarlyFree = 1, kRingNoFill = 2;
inline constexpr int kRingProducers = 64, kRingConsumers = 192, kRingThreads = 256, kRingWidth = 256;

template <int kForm>
__global__ void __launch_bounds__(kRingThreads)
    barrier_ring(const float* __restrict__ in, float* __restrict__ out, int steps) {
  extern __shared__ __align__(128) unsigned char smem_raw[];
  float* buf = reinterpret_cast<float*>(smem_raw);  // [2][kRingWidth]
  const int tid = threadIdx.x;
  // Barrier ids: full(b) = 1 + b (the producer arrives, the consumers wait), empty(b) = 3 + b (the
  // consumers arrive, the producer waits), 5: the consumers among themselves.
  if (tid < kRingProducers) {
    for (int s = 0; s < steps; ++s) {
      const int b = s & 1;
      if (s >= 2) named_sync(3 + b, kRingThreads);  // the consumers are done with step s − 2's data
      for (int i = tid; i < kRingWidth; i += kRingProducers) buf[b * kRingWidth + i] = in[s * kRingWidth + i];
      if (kForm != kRingNoFill || s > 0) named_arrive(1 + b, kRingThreads);
    }
    return;
  }
  const int c = tid - kRingProducers;
  float acc = 0.f;
  for (int s = 0; s < steps; ++s) {
    const int b = s & 1;
    const bool refilled = s + 2 < steps;  // the producer waits for this buffer again
    named_sync(1 + b, kRingThreads);
    named_sync(5, kRingConsumers);  // a phase of the consumers' own (the producer runs ahead meanwhile)
    if (kForm == kRingEarlyFree && refilled) named_arrive(3 + b, kRingThreads);
    float x = 0.f;
    for (int i = 0; i < 4; ++i) x += buf[b * kRingWidth + (5 * c + 3 * s + i) % kRingWidth];
    acc += float(s + 1) * x;
    if (kForm != kRingEarlyFree && refilled) named_arrive(3 + b, kRingThreads);
  }
  out[blockIdx.x * kRingConsumers + c] = acc;
}

}  // namespace glr::cuda::sm90
