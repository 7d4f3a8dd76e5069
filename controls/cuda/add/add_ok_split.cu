/* add_ok_split.cu: positive control for the add contract, cuda backend, split across files.
 *
 * add_ok.cu with its argument checks in split/add_args.cuh, beside it (#include
 * "split/add_args.cuh"): a candidate's own headers must reach nvcc through kcv's private copy of
 * its directory (docs/security.md).
 * Expected: PASS on all 12 gates.
 */
#include "split/add_args.cuh"

/* NOTES: 256 threads a block, a grid-stride loop, the grid capped well inside gridDim.x's limit:
   any N (the large tier has > 2^31 elements) is covered with int64 indices. */
constexpr int kThreads = 256;
constexpr int64_t kMaxBlocks = 65535;

static unsigned elem_blocks(int64_t n) {
  const int64_t want = (n + kThreads - 1) / kThreads;
  return (unsigned)(want < kMaxBlocks ? want : kMaxBlocks);
}

__global__ void __launch_bounds__(kThreads)
    add_kernel(const float* __restrict__ a, int64_t sa, const float* __restrict__ b, int64_t sb,
               float* __restrict__ c, int64_t sc, int64_t n) {
  const int64_t step = (int64_t)gridDim.x * kThreads;
  for (int64_t i = (int64_t)blockIdx.x * kThreads + threadIdx.x; i < n; i += step) c[i * sc] = a[i * sa] + b[i * sb];
}

KCV_EXPORT int kcv_run(const kcv_call* call) {
  add_args v;
  int rc = add_unpack(call, &v);
  if (rc) return rc;
  if (v.N == 0) return 0;
  add_kernel<<<elem_blocks(v.N), kThreads, 0, v.stream>>>(v.a, v.sa, v.b, v.sb, v.c, v.sc, v.N);
  return launch_status(call, "add_kernel");
}
