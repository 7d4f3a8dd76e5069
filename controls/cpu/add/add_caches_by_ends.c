/* add_caches_by_ends.c: negative control (issue 25, class 4: coverage a cheater can predict).
 *
 * A correct add that remembers its results: the key is N and the first, middle and last element of
 * each input; a call whose key it has seen gets the remembered output, whatever else changed.
 * Every call with new inputs, the same inputs at new addresses, A/B/A, and a change in the last
 * element of each input all give the right answer; only a change at an interior position other
 * than the middle returns a stale output.
 * Expected: FAIL stateless (its change at an interior position drawn from the run's seed); it
 * passed every gate while the stateless gate changed only the last element.
 */
#include <stdlib.h>

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
/* One add call, unpacked: a[N], b[N] -> c[N], strides in elements (any sign). */
typedef struct {
  const float* a;
  const float* b;
  float* c;
  int64_t N;
  int64_t sa, sb, sc;
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
  return 0;
}

typedef struct {
  int64_t n;
  float key[6];
  float* c;  /* the remembered output, contiguous */
} entry;
static entry cache[64];
static int next_slot;

static void key_of(const add_args* v, float* key) {
  const int64_t m = v->N / 2, l = v->N - 1;
  key[0] = v->a[0]; key[1] = v->a[m * v->sa]; key[2] = v->a[l * v->sa];
  key[3] = v->b[0]; key[4] = v->b[m * v->sb]; key[5] = v->b[l * v->sb];
}

KCV_EXPORT int kcv_run(const kcv_call* call) {
  add_args v;
  int rc = add_unpack(call, &v);
  if (rc) return rc;
  if (v.N == 0) return 0;
  float key[6];
  key_of(&v, key);
  for (int e = 0; e < 64; ++e)
    if (cache[e].c && cache[e].n == v.N && memcmp(cache[e].key, key, sizeof key) == 0) {
      for (int64_t i = 0; i < v.N; ++i) v.c[i * v.sc] = cache[e].c[i];
      return 0;
    }
  for (int64_t i = 0; i < v.N; ++i) v.c[i * v.sc] = v.a[i * v.sa] + v.b[i * v.sb];
  entry* slot = &cache[next_slot++ % 64];
  free(slot->c);
  slot->c = (float*)malloc((size_t)v.N * sizeof(float));
  if (!slot->c) return 0;
  slot->n = v.N;
  memcpy(slot->key, key, sizeof key);
  for (int64_t i = 0; i < v.N; ++i) slot->c[i] = v.c[i * v.sc];
  return 0;
}
