/* add_uninit_read.cu: negative control for the add contract, cuda backend.
 *
 * BUG: reads device memory it never initialized. A "resumable" add keeps one done-flag per tile
 * of 256 elements in a cudaMallocAsync'd scratch and skips tiles whose flag says done; the
 * cudaMemsetAsync that should clear the flags is missing, so every element's first action is a
 * read of an uninitialized flag. The flags are never written, and a garbage flag equals the magic
 * kTileDone with odds of 2^-32 per tile, so c = a + b comes out right in practice: only a
 * sanitizer sees the bug. The scratch is freed with cudaFreeAsync on call->stream.
 * Expected: FAIL; gate sanitizer must fail (compute-sanitizer initcheck: uninitialized __global__
 * memory read, at the nominal and at the boundary shape).
 */
#include <kcv/abi.h>

#include <cuda_runtime.h>

#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

/* The ABI's clean refusal: a message in call->error, a non-zero return. */
static int refuse(const kcv_call* call, const char* fmt, ...) {
  if (call && call->error && call->error_len > 0) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(call->error, (size_t)call->error_len, fmt, ap);
    va_end(ap);
  }
  return 1;
}

/* The call's header: ABI version and argument counts. */
static int check_call(const kcv_call* call, int n_in, int n_out, int n_sc) {
  if (!call) return 1;
  if (call->abi_version != KCV_ABI_VERSION)
    return refuse(call, "ABI version %d, this candidate speaks %d", (int)call->abi_version, KCV_ABI_VERSION);
  if (call->n_inputs != n_in || call->n_outputs != n_out || call->n_scalars != n_sc)
    return refuse(call, "expected %d inputs, %d outputs, %d scalars; got %d, %d, %d", n_in, n_out, n_sc,
                  (int)call->n_inputs, (int)call->n_outputs, (int)call->n_scalars);
  if ((n_in && !call->inputs) || (n_out && !call->outputs) || (n_sc && !call->scalars))
    return refuse(call, "null inputs, outputs or scalars array");
  return 0;
}

/* One tensor argument: f32, the expected rank, non-negative extents, data unless empty. */
static int check_f32(const kcv_call* call, const kcv_tensor* t, const char* name, int ndim) {
  if (t->dtype != KCV_F32) return refuse(call, "%s: dtype %d, only f32 is supported", name, (int)t->dtype);
  if (t->ndim != ndim) return refuse(call, "%s: rank %d, expected %d", name, (int)t->ndim, ndim);
  int64_t n = 1;
  for (int d = 0; d < ndim; ++d) {
    if (t->shape[d] < 0) return refuse(call, "%s: negative extent in dim %d", name, d);
    n *= t->shape[d];
  }
  if (n > 0 && !t->data) return refuse(call, "%s: null data", name);
  return 0;
}

/* After enqueueing: a launch that failed (bad configuration, no device, ...) is reported, never
   hidden. cudaGetLastError also clears a non-sticky error, so the next call starts clean. */
static int launch_status(const kcv_call* call, const char* what) {
  const cudaError_t e = cudaGetLastError();
  if (e != cudaSuccess) return refuse(call, "%s: %s (%s)", what, cudaGetErrorName(e), cudaGetErrorString(e));
  return 0;
}

/* One add call, unpacked: a[N], b[N] -> c[N] (device pointers), strides in elements (any sign). */
typedef struct {
  const float* a;
  const float* b;
  float* c;
  int64_t N;
  int64_t sa, sb, sc;
  cudaStream_t stream;
} add_args;

static int add_unpack(const kcv_call* call, add_args* v) {
  memset(v, 0, sizeof *v);
  int rc = check_call(call, 2, 1, 0);
  if (rc) return rc;
  const kcv_tensor* a = &call->inputs[0];
  const kcv_tensor* b = &call->inputs[1];
  const kcv_tensor* c = &call->outputs[0];
  if ((rc = check_f32(call, a, "a", 1)) || (rc = check_f32(call, b, "b", 1)) || (rc = check_f32(call, c, "c", 1)))
    return rc;
  if (b->shape[0] != a->shape[0] || c->shape[0] != a->shape[0])
    return refuse(call, "shapes do not agree: a[%lld] b[%lld] c[%lld]", (long long)a->shape[0],
                  (long long)b->shape[0], (long long)c->shape[0]);
  v->a = (const float*)a->data;
  v->b = (const float*)b->data;
  v->c = (float*)c->data;
  v->N = a->shape[0];
  v->sa = a->stride[0];
  v->sb = b->stride[0];
  v->sc = c->stride[0];
  v->stream = (cudaStream_t)call->stream;
  return 0;
}

/* NOTES: 256 threads a block, a grid-stride loop, the grid capped well inside gridDim.x's limit:
   any N (the large tier has > 2^31 elements) is covered with int64 indices. */
constexpr int kThreads = 256;
constexpr int64_t kMaxBlocks = 65535;

static unsigned elem_blocks(int64_t n) {
  const int64_t want = (n + kThreads - 1) / kThreads;
  return (unsigned)(want < kMaxBlocks ? want : kMaxBlocks);
}

constexpr uint32_t kTileDone = 0x600DF00Du;

__global__ void __launch_bounds__(kThreads)
    add_kernel_resumable(const float* __restrict__ a, int64_t sa, const float* __restrict__ b, int64_t sb,
                         float* __restrict__ c, int64_t sc, int64_t n, const uint32_t* __restrict__ done) {
  const int64_t step = (int64_t)gridDim.x * kThreads;
  for (int64_t i = (int64_t)blockIdx.x * kThreads + threadIdx.x; i < n; i += step) {
    if (done[i / kThreads] == kTileDone) continue;  // the bug: `done` was never initialized
    c[i * sc] = a[i * sa] + b[i * sb];
  }
}

KCV_EXPORT int kcv_run(const kcv_call* call) {
  add_args v;
  int rc = add_unpack(call, &v);
  if (rc) return rc;
  if (v.N == 0) return 0;
  const int64_t tiles = (v.N + kThreads - 1) / kThreads;
  uint32_t* done = nullptr;  // [tiles]
  cudaError_t e = cudaMallocAsync((void**)&done, (size_t)tiles * sizeof(uint32_t), v.stream);
  if (e != cudaSuccess) return refuse(call, "cudaMallocAsync: %s", cudaGetErrorString(e));
  // the bug: missing cudaMemsetAsync(done, 0, tiles * sizeof(uint32_t), v.stream)
  add_kernel_resumable<<<elem_blocks(v.N), kThreads, 0, v.stream>>>(v.a, v.sa, v.b, v.sb, v.c, v.sc, v.N, done);
  rc = launch_status(call, "add_kernel_resumable");
  e = cudaFreeAsync(done, v.stream);
  if (!rc && e != cudaSuccess) rc = refuse(call, "cudaFreeAsync: %s", cudaGetErrorString(e));
  return rc;
}
