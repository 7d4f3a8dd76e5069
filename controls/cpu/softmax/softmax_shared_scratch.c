/* softmax_shared_scratch.c: negative control for the softmax contract, cpu backend.
 *
 * BUG: the exps of a row are staged in one static scratch array shared by every call. Alone the
 * kernel is a correct fp32 softmax; two threads calling it at once overwrite each other's
 * staged row, and each then normalizes the other's exps.
 * NOTES: a real race of this kind shows only when the scheduler interleaves the two calls. To
 * make it show every time, the kernel widens its own race window (this is not what makes it
 * wrong): after staging a row it waits ~20 us, yielding the cpu; and after staging its first row
 * it waits up to 30 ms for a second caller to be in flight (an atomic count, used for nothing
 * else), so two concurrent calls overlap even when one thread is scheduled late.
 * Expected: FAIL; gate concurrency must fail (two threads on disjoint buffers, wrong results).
 */
#define _POSIX_C_SOURCE 200809L  // clock_gettime, sched_yield under -std=c11

#include <kcv/abi.h>

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
/* One softmax call, unpacked: x[M,N] -> y[M,N], strides in elements (any sign). */
typedef struct {
  const float* x;
  float* y;
  int64_t M, N;
  int64_t sx0, sx1, sy0, sy1;
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
  return 0;
}

/* max that propagates NaN (fmaxf would drop it): once NaN, always NaN. */
static inline float nan_max(float m, float v) { return (v > m || v != v) ? v : m; }

#include <sched.h>
#include <stdatomic.h>
#include <time.h>

enum { MAX_N = 1 << 20 };
static float scratch[MAX_N];  // the bug: one staging row for all callers
static atomic_int in_flight;  // widens the race window only (see NOTES)

static int64_t now_ns(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (int64_t)t.tv_sec * 1000000000 + t.tv_nsec;
}

/* Yields the cpu until ns have passed, or earlier once `until_callers` calls are in flight. */
static void wait_yielding(int64_t ns, int until_callers) {
  const int64_t t0 = now_ns();
  do {
    if (until_callers && atomic_load(&in_flight) >= until_callers) return;
    sched_yield();
  } while (now_ns() - t0 < ns);
}

KCV_EXPORT int kcv_run(const kcv_call* call) {
  softmax_args a;
  int rc = softmax_unpack(call, &a);
  if (rc) return rc;
  if (a.N > MAX_N) return refuse(call, "N = %lld exceeds the scratch row (%d)", (long long)a.N, MAX_N);
  atomic_fetch_add(&in_flight, 1);
  for (int64_t i = 0; i < a.M; ++i) {
    const float* x = a.x + i * a.sx0;
    float* y = a.y + i * a.sy0;
    float m = -INFINITY;
    for (int64_t j = 0; j < a.N; ++j) m = nan_max(m, x[j * a.sx1]);
    for (int64_t j = 0; j < a.N; ++j) scratch[j] = expf(x[j * a.sx1] - m);
    if (i == 0) wait_yielding(30000000, 2);
    wait_yielding(20000, 0);
    float s = 0.0f;
    for (int64_t j = 0; j < a.N; ++j) s += scratch[j];
    for (int64_t j = 0; j < a.N; ++j) y[j * a.sy1] = scratch[j] / s;
  }
  atomic_fetch_sub(&in_flight, 1);
  return 0;
}
