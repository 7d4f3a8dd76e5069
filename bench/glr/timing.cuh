// What the glr timers (bench/glr/glr_fwd_time.cu, glr_bwd_time.cu) share: the CUDA error check,
// the issue-19 shapes, and the timing method — 3 warm-up calls, then the median of 20, each
// after 256 MiB written (L2 flush) and a device-wide synchronize, timed by CUDA events.
#pragma once

#include <cuda_runtime_api.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <vector>

#define CK(x)                                                                                 \
  do {                                                                                        \
    cudaError_t e_ = (x);                                                                     \
    if (e_ != cudaSuccess) {                                                                  \
      std::fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #x, cudaGetErrorString(e_)); \
      std::exit(2);                                                                           \
    }                                                                                         \
  } while (0)

namespace glr_bench {

struct ShapeRow {
  int64_t B, T, H, D, seqs;  // seqs > 0: varlen, that many sequences summing to T (B = 1)
};

/// Issue 19's shapes (B, T, H, K = V = D), in its order.
inline constexpr ShapeRow kShapes[] = {{4, 2048, 16, 128, 0}, {8, 1024, 8, 64, 0},    {2, 16384, 16, 128, 0},
                                       {4, 4096, 64, 128, 0}, {8, 2048, 32, 256, 0},  {1, 65536, 16, 128, 0},
                                       {1, 32768, 16, 128, 16}};

/// Whether shape row `row` (1-based, in kShapes' order) runs: every row, or those GLR_TIME_ROWS lists
/// ("3,4,5"; for ncu at the shapes of interest without the others' launches).
inline bool row_wanted(int row) {
  const char* rows = std::getenv("GLR_TIME_ROWS");
  if (!rows || !*rows) return true;
  for (const char* p = rows; *p;) {
    char* end = nullptr;
    const long r = std::strtol(p, &end, 10);
    if (end == p) break;
    if (r == row) return true;
    p = *end ? end + 1 : end;
  }
  return false;
}

inline constexpr size_t kFlushBytes = size_t(256) << 20;

/// FNV-1a (64-bit) of `bytes` of device memory, continuing `h`: the timers print it of their outputs, so
/// that an A/B of a bit-identical variant (bench/glr/device_ab.sh) shows the same bits on the device.
inline uint64_t device_hash(const void* d, size_t bytes, uint64_t h = 0xcbf29ce484222325ull) {
  std::vector<unsigned char> x(bytes);
  if (bytes) CK(cudaMemcpy(x.data(), d, bytes, cudaMemcpyDeviceToHost));
  for (unsigned char c : x) h = (h ^ c) * 0x100000001b3ull;
  return h;
}

template <class F> float median_ms(F&& call, void* flush, size_t flush_bytes) {
  cudaEvent_t a, b;
  CK(cudaEventCreate(&a));
  CK(cudaEventCreate(&b));
  for (int i = 0; i < 3; ++i) call();
  std::vector<float> t;
  for (int r = 0; r < 20; ++r) {
    CK(cudaMemsetAsync(flush, r, flush_bytes));
    CK(cudaDeviceSynchronize());
    CK(cudaEventRecord(a));
    call();
    CK(cudaEventRecord(b));
    CK(cudaDeviceSynchronize());
    float ms = 0;
    CK(cudaEventElapsedTime(&ms, a, b));
    t.push_back(ms);
  }
  CK(cudaEventDestroy(a));
  CK(cudaEventDestroy(b));
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}

}  // namespace glr_bench
