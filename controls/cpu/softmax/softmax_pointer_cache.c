/* softmax_pointer_cache.c: negative control for the softmax contract, cpu backend.
 *
 * BUG: memoizes the last result keyed by the input's address, shape and strides (never its
 * contents). When a call repeats that key, the cached output is copied into y without looking
 * at x: new contents at an old address get a stale answer. The cache is behind a mutex, so the
 * kernel is thread-safe; a miss computes a correct fp32 softmax.
 * Expected: FAIL; gate stateless must fail (same addresses with new contents, A/B/A). Any gate
 * whose cases happen to reuse an address (mmap hands freed addresses back) may fail too.
 */
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

#include <pthread.h>
#include <stdlib.h>

/* The bug: one cached result, keyed by where x is rather than what it holds. */
static struct {
  pthread_mutex_t lock;
  const float* x;
  int64_t M, N, sx0, sx1;
  float* y;  // [M*N], row-major
  size_t cap;
} cache = {PTHREAD_MUTEX_INITIALIZER, NULL, 0, 0, 0, 0, NULL, 0};

static void compute(const softmax_args* a) {
  for (int64_t i = 0; i < a->M; ++i) {
    const float* x = a->x + i * a->sx0;
    float* y = a->y + i * a->sy0;
    float m = -INFINITY;
    for (int64_t j = 0; j < a->N; ++j) m = nan_max(m, x[j * a->sx1]);
    float s = 0.0f;
    for (int64_t j = 0; j < a->N; ++j) {
      const float e = expf(x[j * a->sx1] - m);
      y[j * a->sy1] = e;
      s += e;
    }
    for (int64_t j = 0; j < a->N; ++j) y[j * a->sy1] = y[j * a->sy1] / s;
  }
}

KCV_EXPORT int kcv_run(const kcv_call* call) {
  softmax_args a;
  int rc = softmax_unpack(call, &a);
  if (rc) return rc;
  const size_t n = (size_t)(a.M * a.N);
  pthread_mutex_lock(&cache.lock);
  if (cache.y && cache.x == a.x && cache.M == a.M && cache.N == a.N && cache.sx0 == a.sx0 && cache.sx1 == a.sx1) {
    for (int64_t i = 0; i < a.M; ++i)  // hit: the stale copy, x is not even read
      for (int64_t j = 0; j < a.N; ++j) a.y[i * a.sy0 + j * a.sy1] = cache.y[i * a.N + j];
    pthread_mutex_unlock(&cache.lock);
    return 0;
  }
  compute(&a);
  if (n > cache.cap) {
    float* grown = (float*)realloc(cache.y, n * sizeof(float));
    if (!grown) {  // no room to cache: forget the entry, the result in y stands
      free(cache.y);
      cache.y = NULL;
      cache.cap = 0;
      pthread_mutex_unlock(&cache.lock);
      return 0;
    }
    cache.y = grown;
    cache.cap = n;
  }
  for (int64_t i = 0; i < a.M; ++i)
    for (int64_t j = 0; j < a.N; ++j) cache.y[i * a.N + j] = a.y[i * a.sy0 + j * a.sy1];
  cache.x = a.x;
  cache.M = a.M;
  cache.N = a.N;
  cache.sx0 = a.sx0;
  cache.sx1 = a.sx1;
  pthread_mutex_unlock(&cache.lock);
  return 0;
}
