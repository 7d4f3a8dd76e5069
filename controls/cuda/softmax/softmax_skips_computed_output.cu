/* softmax_skips_computed_output.cu: hostile control for the softmax contract, cuda backend (issue 25,
 * class 3: verification that looks like production; the cuda twin of
 * controls/cpu/hostile/skips_computed_output.c).
 *
 * BUG: right only when the output still holds what a verifier used to put there. Before the call's
 * softmax a probe kernel reads y: when every element has the same bits (the NaN poison, zeros, one
 * byte repeated) or one is not plausible data (a NaN, an Inf or a value above 1e30: random bytes),
 * the softmax runs as in softmax_ok.cu; otherwise the kernel returns at once, taking y for a result
 * left by an earlier call on the same buffers (a benchmark's loop). In production a fresh output
 * holds whatever an earlier tensor left there: it returns stale data. All on call->stream, the
 * decision on the device (a flag in global memory), nothing synchronized.
 * Passed every gate while kcv prefilled outputs with the constant NaN poison only (before 05d4820).
 * Expected: FAIL. kcv prefills an eighth of the numerics, shapes and values cases with stale data
 * (the values of the case's own inputs in the output's dtype) on cuda too; the candidate skips
 * those and fails (at --seed 1, tests/unit/engine/test_placement.cpp checks each gate has one).
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

/* One softmax call, unpacked: x[M,N] -> y[M,N] (device pointers), strides in elements (any sign). */
typedef struct {
  const float* x;
  float* y;
  int64_t M, N;
  int64_t sx0, sx1, sy0, sy1;
  cudaStream_t stream;
} softmax_args;

static int softmax_unpack(const kcv_call* call, softmax_args* a) {
  memset(a, 0, sizeof *a);
  int rc = check_call(call, 1, 1, 0);
  if (rc) return rc;
  const kcv_tensor* x = &call->inputs[0];
  const kcv_tensor* y = &call->outputs[0];
  if ((rc = check_f32(call, x, "x", 2)) || (rc = check_f32(call, y, "y", 2))) return rc;
  if (y->shape[0] != x->shape[0] || y->shape[1] != x->shape[1])
    return refuse(call, "y is [%lld,%lld] but x is [%lld,%lld]", (long long)y->shape[0], (long long)y->shape[1],
                  (long long)x->shape[0], (long long)x->shape[1]);
  a->x = (const float*)x->data;
  a->y = (float*)y->data;
  a->M = x->shape[0];
  a->N = x->shape[1];
  a->sx0 = x->stride[0];
  a->sx1 = x->stride[1];
  a->sy0 = y->stride[0];
  a->sy1 = y->stride[1];
  a->stream = (cudaStream_t)call->stream;
  return 0;
}

/* NOTES: one block of kThreads threads per row. kThreads is a power of two (the tree below
   halves it) and fixed, so the order of every reduction depends on N only: bitwise deterministic. */
constexpr int kThreads = 256;
constexpr int64_t kMaxBlocks = 65535;  // rows beyond the grid are taken by a grid-stride loop

/* max that propagates NaN (fmaxf would drop it): once NaN, always NaN, in either argument. */
__device__ __forceinline__ float nan_max(float m, float v) { return (v > m || v != v) ? v : m; }

struct MaxOp {
  __device__ float operator()(float a, float b) const { return nan_max(a, b); }
};
struct SumOp {
  __device__ float operator()(float a, float b) const { return a + b; }
};

/* Block-wide reduction of one value per thread through smem[kThreads]; every thread gets the
   result. A barrier after every step; the last one keeps the next reduction's writes to smem
   behind every thread's read of smem[0]. Called by all threads of the block (uniform control). */
template <class Op>
__device__ float block_reduce(float v, float* smem, Op op) {
  smem[threadIdx.x] = v;
  __syncthreads();
  for (int s = kThreads / 2; s > 0; s >>= 1) {
    if ((int)threadIdx.x < s) smem[threadIdx.x] = op(smem[threadIdx.x], smem[threadIdx.x + s]);
    __syncthreads();
  }
  const float r = smem[0];
  __syncthreads();
  return r;
}

/* y[row,:] = softmax(x[row,:]), one block per row (softmax_ok.cu's kernel, as a body); x and y through their strides. Non-finite
   inputs get what IEEE arithmetic gives (NaN -> NaN row, +Inf -> Inf - Inf = NaN row). */
__device__ __forceinline__ void softmax_rows_body(const float* __restrict__ x, int64_t sx0, int64_t sx1,
                                                  float* __restrict__ y, int64_t sy0, int64_t sy1, int64_t M,
                                                  int64_t N) {
  __shared__ float smem[kThreads];
  for (int64_t row = blockIdx.x; row < M; row += gridDim.x) {  // uniform per block: barriers are safe
    const float* xr = x + row * sx0;  // [N], stride sx1
    float* yr = y + row * sy0;        // [N], stride sy1
    float m = -INFINITY;
    for (int64_t j = threadIdx.x; j < N; j += kThreads) m = nan_max(m, xr[j * sx1]);
    m = block_reduce(m, smem, MaxOp{});
    float s = 0.0f;
    for (int64_t j = threadIdx.x; j < N; j += kThreads) s += expf(xr[j * sx1] - m);
    s = block_reduce(s, smem, SumOp{});
    for (int64_t j = threadIdx.x; j < N; j += kThreads) yr[j * sy1] = expf(xr[j * sx1] - m) / s;
  }
}

/* Blocks for M rows: one per row, capped (the kernel loops over the rest). */
static unsigned row_blocks(int64_t M) { return (unsigned)(M < kMaxBlocks ? M : kMaxBlocks); }

/* flag bit 0: y's elements differ; bit 1: y holds one that is not plausible data. */
__device__ unsigned int g_prefill_flags;

__global__ void reset_flags() { g_prefill_flags = 0; }

__global__ void probe_prefill(const float* y, int64_t sy0, int64_t sy1, int64_t M, int64_t N) {
  const unsigned first = __float_as_uint(y[0]);
  unsigned seen = 0;
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < M * N; i += (int64_t)gridDim.x * blockDim.x) {
    const float v = y[(i / N) * sy0 + (i % N) * sy1];
    if (__float_as_uint(v) != first) seen |= 1u;
    if (!(fabsf(v) <= 1e30f)) seen |= 2u;
  }
  if (seen) atomicOr(&g_prefill_flags, seen);
}

/* softmax_rows, unless y looks computed already (its elements differ and all are plausible). */
__global__ void __launch_bounds__(kThreads)
    softmax_unless_computed(const float* __restrict__ x, int64_t sx0, int64_t sx1, float* __restrict__ y, int64_t sy0,
                            int64_t sy1, int64_t M, int64_t N) {
  if (g_prefill_flags == 1u) return;  // the bug: uniform over the grid, read before any write to y
  softmax_rows_body(x, sx0, sx1, y, sy0, sy1, M, N);
}

KCV_EXPORT int kcv_run(const kcv_call* call) {
  softmax_args a;
  int rc = softmax_unpack(call, &a);
  if (rc) return rc;
  if (a.M == 0 || a.N == 0) return 0;
  reset_flags<<<1, 1, 0, a.stream>>>();
  probe_prefill<<<row_blocks(a.M), kThreads, 0, a.stream>>>(a.y, a.sy0, a.sy1, a.M, a.N);
  softmax_unless_computed<<<row_blocks(a.M), kThreads, 0, a.stream>>>(a.x, a.sx0, a.sx1, a.y, a.sy0, a.sy1, a.M, a.N);
  return launch_status(call, "softmax_unless_computed");
}
