/* split/add_args.h: the argument checks of add_ok_split.c (a control split across files).
 *
 * add_ok.c's refusal, header, tensor and unpack helpers, unchanged, in a header included by a
 * relative path from the candidate's directory: kcv must find it from its private copy of the
 * candidate for the plain and the sanitized builds alike.
 */
#ifndef KCV_CONTROL_ADD_ARGS_H
#define KCV_CONTROL_ADD_ARGS_H

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

#endif
