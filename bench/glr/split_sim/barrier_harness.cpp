// The simulation's named barriers (sim.hpp) on barrier_ring.cuh: `harness FORM` runs three CTAs of
// that form over seven steps and prints how many of the 576 sums differ from the sequential sum and a
// hash of them (run_barriers.sh compares the two thread orders). FORM 2 never ends by itself: the
// simulation stops it as a deadlock.
#include "sim.hpp"
#include "barrier_ring.cuh"
#include <cstdio>
#include <cstdlib>
#include <vector>

int main(int argc, char** argv) {
  using namespace glr::cuda::sm90;
  const int form = argc > 1 ? std::atoi(argv[1]) : kRingRight, steps = 7, ctas = 3;
  std::vector<float> in(size_t(steps) * kRingWidth), out(size_t(ctas) * kRingConsumers, -1.f);
  for (size_t i = 0; i < in.size(); ++i) in[i] = float((i * 37) % 101) - 50.f;
  const size_t smem = 2 * kRingWidth * sizeof(float);
  auto go = [&](auto kernel) { ::sim::launch(kernel, dim3(ctas), kRingThreads, smem, nullptr, in.data(), out.data(), steps); };
  if (form == kRingRight) go(barrier_ring<kRingRight>);
  else if (form == kRingEarlyFree) go(barrier_ring<kRingEarlyFree>);
  else go(barrier_ring<kRingNoFill>);
  int differ = 0;
  unsigned long long hash = 1469598103934665603ull;
  for (int cta = 0; cta < ctas; ++cta)
    for (int c = 0; c < kRingConsumers; ++c) {
      float acc = 0.f;  // the kernel's operations in its order
      for (int s = 0; s < steps; ++s) {
        float x = 0.f;
        for (int i = 0; i < 4; ++i) x += in[size_t(s) * kRingWidth + (5 * c + 3 * s + i) % kRingWidth];
        acc += float(s + 1) * x;
      }
      const float got = out[size_t(cta) * kRingConsumers + c];
      differ += got != acc;
      unsigned bits;
      std::memcpy(&bits, &got, 4);
      hash = (hash ^ bits) * 1099511628211ull;
    }
  std::printf("form %d: %d of %d sums differ from the sequential sum; hash %016llx\n", form, differ, ctas * kRingConsumers, hash);
  return 0;
}
