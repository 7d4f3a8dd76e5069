/* softmax_run_to_run.c: negative control for the softmax contract, cpu backend.
 *
 * BUG: the order of each row sum is not a function of the inputs. Like a work-stealing or
 * atomic-add reduction whose combine order depends on timing, it picks one of three legitimate
 * fp32 orders (forward, reverse, pairwise) from the clock, a call counter, the buffers' addresses
 * and the thread count (OMP_NUM_THREADS). Every single result is within the error model, but
 * repeated calls on the same inputs differ in the last bits. (Without the clock, the counter's
 * step and the page numbers of buffers laid out one call after another could cancel modulo 3, and
 * then every call of a run picked one order: the control passed determinism about one run in
 * eight after the buffers' in-page offsets began to vary, session 19. Timing is what a real
 * work-stealing reduction depends on.)
 * Expected: FAIL; gate determinism must fail (runs are not bitwise identical). Coverage repeats
 * its first poison to tell this from an unwritten element (issue 27) and passes, saying
 * "nondeterministic", when the repeat picks another order; when both runs under one poison pick
 * the same order and the other poison's run does not, it can still blame the prefill.
 */
#include <kcv/abi.h>

#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

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

#include <stdatomic.h>
#include <stdlib.h>

static atomic_uint calls;  // the bug: hidden state that steers the arithmetic

static float pairwise_sum(const float* p, int64_t n, int64_t s) {
  if (n <= 1) return n == 1 ? p[0] : 0.0f;
  const int64_t h = n / 2;
  return pairwise_sum(p, h, s) + pairwise_sum(p + h * s, n - h, s);
}

KCV_EXPORT int kcv_run(const kcv_call* call) {
  softmax_args a;
  int rc = softmax_unpack(call, &a);
  if (rc) return rc;
  const char* threads = getenv("OMP_NUM_THREADS");
  struct timespec now;
  clock_gettime(CLOCK_MONOTONIC, &now);
  const unsigned order = ((unsigned)(now.tv_nsec >> 6) + atomic_fetch_add(&calls, 1u) +
                          (unsigned)((uintptr_t)a.x >> 12) + (unsigned)((uintptr_t)a.y >> 12) +
                          (unsigned)(threads ? atoi(threads) : 0)) % 3u;
  for (int64_t i = 0; i < a.M; ++i) {
    const float* x = a.x + i * a.sx0;
    float* y = a.y + i * a.sy0;
    float m = -INFINITY;
    for (int64_t j = 0; j < a.N; ++j) m = nan_max(m, x[j * a.sx1]);
    for (int64_t j = 0; j < a.N; ++j) y[j * a.sy1] = expf(x[j * a.sx1] - m);
    float s = 0.0f;
    if (order == 0)
      for (int64_t j = 0; j < a.N; ++j) s += y[j * a.sy1];
    else if (order == 1)
      for (int64_t j = a.N - 1; j >= 0; --j) s += y[j * a.sy1];
    else
      s = pairwise_sum(y, a.N, a.sy1);
    for (int64_t j = 0; j < a.N; ++j) y[j * a.sy1] = y[j * a.sy1] / s;
  }
  return 0;
}
