/* add_ok_float4.cu: positive control for the add contract, cuda backend (issue 25, class 3).
 *
 * c[i] = a[i] + b[i] in fp32 with 16-byte vector loads and stores (float4), as vectorised
 * production kernels do. Such a kernel assumes its buffers' alignment: this one refuses cleanly
 * unless a, b and c are contiguous and 256-byte aligned (what cudaMalloc guarantees; torch's
 * caching allocator gives 512), then covers N/4 float4 groups and a scalar tail of N % 4 elements,
 * with int64 indices (the large tier has > 2^31 elements), one kernel on call->stream, no state.
 * Expected: PASS on all 12 gates. kcv places buffers at varied offsets (every gate but bounds),
 * always 512-byte aligned; only the layout gate hands over an input offset by one element or
 * strided, where a clean refusal is allowed. A placement that broke the alignment a legitimate
 * kernel may assume would make numerics, shapes or values refused here.
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

/* The alignment this kernel assumes of every buffer, as a kernel written against cudaMalloc may. */
constexpr uintptr_t kAssumedAlign = 256;
static_assert(kAssumedAlign % sizeof(float4) == 0, "float4 accesses need 16-byte alignment");

/* c = a + b over n4 float4 groups, then the tail's n - 4 * n4 elements one by one. */
__global__ void __launch_bounds__(kThreads)
    add_float4(const float4* __restrict__ a, const float4* __restrict__ b, float4* __restrict__ c, int64_t n4,
               const float* __restrict__ at, const float* __restrict__ bt, float* __restrict__ ct, int64_t tail) {
  const int64_t step = (int64_t)gridDim.x * kThreads;
  const int64_t first = (int64_t)blockIdx.x * kThreads + threadIdx.x;
  for (int64_t i = first; i < n4; i += step) {
    const float4 x = a[i], y = b[i];  // [4] each
    c[i] = make_float4(x.x + y.x, x.y + y.y, x.z + y.z, x.w + y.w);
  }
  if (first < tail) ct[first] = at[first] + bt[first];
}

static int aligned(const void* p) { return ((uintptr_t)p % kAssumedAlign) == 0; }

KCV_EXPORT int kcv_run(const kcv_call* call) {
  add_args v;
  int rc = add_unpack(call, &v);
  if (rc) return rc;
  if (v.N == 0) return 0;
  if (v.N > 1 && (v.sa != 1 || v.sb != 1 || v.sc != 1))
    return refuse(call, "strided buffers are not supported (strides %lld, %lld, %lld)", (long long)v.sa,
                  (long long)v.sb, (long long)v.sc);
  if (!aligned(v.a) || !aligned(v.b) || !aligned(v.c))
    return refuse(call, "buffers must be %d-byte aligned (a %% %d = %d, b %% %d = %d, c %% %d = %d)", (int)kAssumedAlign,
                  (int)kAssumedAlign, (int)((uintptr_t)v.a % kAssumedAlign), (int)kAssumedAlign,
                  (int)((uintptr_t)v.b % kAssumedAlign), (int)kAssumedAlign, (int)((uintptr_t)v.c % kAssumedAlign));
  const int64_t n4 = v.N / 4, done = 4 * n4;
  add_float4<<<elem_blocks(n4 > 0 ? n4 : 1), kThreads, 0, v.stream>>>(
      (const float4*)v.a, (const float4*)v.b, (float4*)v.c, n4, v.a + done, v.b + done, v.c + done, v.N - done);
  return launch_status(call, "add_float4");
}
