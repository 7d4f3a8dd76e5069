/* layernorm_unbiased_var.c: negative control for the layernorm contract, cpu backend.
 *
 * BUG: uses the unbiased variance (divides the sum of squares by N - 1, torch.var's default)
 * where the contract says biased (divide by N). Everything else is the positive control. At the
 * nominal N = 512 the variance is off by 1/511 and y by ~0.1% relative, far outside the bound.
 * Expected: FAIL; gate numerics must fail.
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
/* One layernorm call, unpacked: x[M,N], w[N], b[N]; eps -> y[M,N], strides in elements. */
typedef struct {
  const float* x;
  const float* w;
  const float* b;
  float* y;
  double eps;
  int64_t M, N;
  int64_t sx0, sx1, sw, sb, sy0, sy1;
} layernorm_args;

static int layernorm_unpack(const kcv_call* call, layernorm_args* a) {
  memset(a, 0, sizeof *a);
  int rc = check_call(call, 3, 1, 1);
  if (rc) return rc;
  const kcv_tensor* x = &call->inputs[0];
  const kcv_tensor* w = &call->inputs[1];
  const kcv_tensor* b = &call->inputs[2];
  const kcv_tensor* y = &call->outputs[0];
  if ((rc = check_f32(call, x, "x", 2)) || (rc = check_f32(call, w, "w", 1)) || (rc = check_f32(call, b, "b", 1)) ||
      (rc = check_f32(call, y, "y", 2)))
    return rc;
  if (w->shape[0] != x->shape[1] || b->shape[0] != x->shape[1] || y->shape[0] != x->shape[0] ||
      y->shape[1] != x->shape[1])
    return refuse(call, "shapes do not agree: x[%lld,%lld] w[%lld] b[%lld] y[%lld,%lld]", (long long)x->shape[0],
                  (long long)x->shape[1], (long long)w->shape[0], (long long)b->shape[0], (long long)y->shape[0],
                  (long long)y->shape[1]);
  a->x = (const float*)x->data;
  a->w = (const float*)w->data;
  a->b = (const float*)b->data;
  a->y = (float*)y->data;
  a->eps = call->scalars[0];
  a->M = x->shape[0];
  a->N = x->shape[1];
  a->sx0 = x->stride[0];
  a->sx1 = x->stride[1];
  a->sw = w->stride[0];
  a->sb = b->stride[0];
  a->sy0 = y->stride[0];
  a->sy1 = y->stride[1];
  return 0;
}

KCV_EXPORT int kcv_run(const kcv_call* call) {
  layernorm_args a;
  int rc = layernorm_unpack(call, &a);
  if (rc) return rc;
  for (int64_t i = 0; i < a.M; ++i) {
    const float* x = a.x + i * a.sx0;  // [N]
    float* y = a.y + i * a.sy0;        // [N]
    double sum = 0.0;
    for (int64_t j = 0; j < a.N; ++j) sum += x[j * a.sx1];
    const double mean = sum / (double)a.N;
    double sq = 0.0;
    for (int64_t j = 0; j < a.N; ++j) {
      const double d = x[j * a.sx1] - mean;
      sq += d * d;
    }
    const double sd = sqrt(sq / (double)(a.N - 1) + a.eps);  // the bug: N - 1
    for (int64_t j = 0; j < a.N; ++j)
      y[j * a.sy1] = (float)((x[j * a.sx1] - mean) / sd * a.w[j * a.sw] + a.b[j * a.sb]);
  }
  return 0;
}
