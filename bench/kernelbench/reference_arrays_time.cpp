// How long kcv takes to turn one reference answer into the arrays a case is judged by
// (derive_reference_output, src/kcv/kernelbench/reference_arrays.cpp): the part of
// KernelBenchContract::reference that runs in kcv's own process once the server has answered
// (issue 24, kcv's own CPU share). One output of N x N elements, every element derived (as a
// rowsum's or an elementwise Model's), the forward order. Times the derivation against the one it
// replaced in session 31 (a pass for the calibrated scale, then one loop appending to all six
// arrays: tests/unit/corpus/reference_arrays_before.hpp, the unit test's oracle), alternated, and
// prints a hash of each result's arrays: the two must print the same hash.
// Not a build target (bench/ holds none); from the repo root, after building kcv:
//   g++ -std=c++20 -O2 -Iinclude -Isrc -Itests/unit/corpus bench/kernelbench/reference_arrays_time.cpp -o /tmp/reference_arrays_time \
//     -Wl,--start-group build/libkcv_core.a build/libkcv_base.a -Wl,--end-group -lfmt -lpthread
//   /tmp/reference_arrays_time [N=4096] [rounds=3]
#include <algorithm>
#include <array>
#include <malloc.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "kcv/dtype.hpp"
#include "kcv/error_model.hpp"
#include "kcv/kernelbench.hpp"
#include "kcv/kernelbench/reference_arrays.hpp"
#include "kcv/terms.hpp"
#include "reference_arrays_before.hpp"  // tests/unit/corpus: the derivation before session 31

using namespace kcv;

namespace {

uint64_t fnv1a(const RefTensor& t) {
  uint64_t h = 1469598103934665603ull;
  auto mix = [&](const void* p, std::size_t bytes) {
    for (std::size_t i = 0; i < bytes; ++i) h = (h ^ static_cast<const unsigned char*>(p)[i]) * 1099511628211ull;
  };
  for (const auto* v : {&t.value, &t.amp, &t.mag, &t.depth, &t.walk}) mix(v->data(), v->size() * sizeof(double));
  mix(t.classes.data(), t.classes.size());
  return h;
}

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace

int main(int argc, char** argv) {
  // As kcv keeps its large blocks in its heap (verify_report.cpp): the arrays reuse freed pages.
  mallopt(M_MMAP_THRESHOLD, std::numeric_limits<int>::max());
  mallopt(M_TRIM_THRESHOLD, -1);
  const std::size_t n = argc > 1 ? std::strtoull(argv[1], nullptr, 10) : 4096;
  const int rounds = argc > 2 ? std::atoi(argv[2]) : 3;
  const std::size_t elements = n * n;
  std::mt19937_64 rng(5);
  std::normal_distribution<double> normal;
  std::vector<double> r64(elements), r32(elements), E(elements), W(elements);
  for (std::size_t i = 0; i < elements; ++i) {
    r64[i] = normal(rng) * 64;
    r32[i] = static_cast<float>(r64[i]);
    E[i] = std::abs(r64[i]) * 4096;
    W[i] = std::abs(r64[i]) * 64;
  }
  auto blob = [](const std::vector<double>& v) {
    return std::string(reinterpret_cast<const char*>(v.data()), v.size() * sizeof(double));
  };
  const std::array<std::string, 5> blobs = {blob(r64), blob(r32), blob(E), blob(W), std::string(elements, '\0')};
  double before = 0, after = 0;
  uint64_t h_before = 0, h_after = 0;
  for (int r = 0; r < rounds; ++r) {
    auto t0 = std::chrono::steady_clock::now();
    { std::array<int64_t, 4> old_counts{};
      const RefTensor t = reference_arrays_before::derive(blobs.data(), true, SumOrder::forward, 0.0, old_counts);
      before += seconds_since(t0); h_before = fnv1a(t); }
    t0 = std::chrono::steady_clock::now();
    BoundCounts counts;
    { const RefTensor t = derive_reference_output(blobs.data(), true, SumOrder::forward, [] { return 0.0; }, counts);
      after += seconds_since(t0); h_after = fnv1a(t); }
  }
  std::printf("N = %zu (%zu elements), %d rounds: before %.3f s a call, now %.3f s a call; hashes %016llx %016llx%s\n",
              n, elements, rounds, before / rounds, after / rounds, static_cast<unsigned long long>(h_before),
              static_cast<unsigned long long>(h_after), h_before == h_after ? " (equal)" : " (DIFFER)");
  return h_before == h_after ? 0 : 1;
}
