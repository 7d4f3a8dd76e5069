/* matmul_split_k.c: error-model control for the matmul contract, cpu backend.
 *
 * A correct fp32 matmul evaluated as a split-K GEMM does it: the k range cut into 4 contiguous
 * slices (fewer when K < 4), an fp32 sequential partial sum per slice, the partials added in slice
 * order. A legitimate fp32 summation order that the error model (the worst-case bound and the
 * population test) must admit at every K.
 * Expected: PASS on all 12 gates.
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
/* One matmul call, unpacked: A[M,K], B[K,N] -> C[M,N], strides in elements (any sign). */
typedef struct {
  const float* A;
  const float* B;
  float* C;
  int64_t M, K, N;
  int64_t sa0, sa1, sb0, sb1, sc0, sc1;
} matmul_args;

static int matmul_unpack(const kcv_call* call, matmul_args* a) {
  memset(a, 0, sizeof *a);
  int rc = check_call(call, 2, 1, 0);
  if (rc) return rc;
  const kcv_tensor* A = &call->inputs[0];
  const kcv_tensor* B = &call->inputs[1];
  const kcv_tensor* C = &call->outputs[0];
  if ((rc = check_f32(call, A, "A", 2)) || (rc = check_f32(call, B, "B", 2)) || (rc = check_f32(call, C, "C", 2)))
    return rc;
  if (B->shape[0] != A->shape[1] || C->shape[0] != A->shape[0] || C->shape[1] != B->shape[1])
    return refuse(call, "shapes do not compose: A[%lld,%lld] B[%lld,%lld] C[%lld,%lld]", (long long)A->shape[0],
                  (long long)A->shape[1], (long long)B->shape[0], (long long)B->shape[1], (long long)C->shape[0],
                  (long long)C->shape[1]);
  a->A = (const float*)A->data;
  a->B = (const float*)B->data;
  a->C = (float*)C->data;
  a->M = A->shape[0];
  a->K = A->shape[1];
  a->N = B->shape[1];
  a->sa0 = A->stride[0];
  a->sa1 = A->stride[1];
  a->sb0 = B->stride[0];
  a->sb1 = B->stride[1];
  a->sc0 = C->stride[0];
  a->sc1 = C->stride[1];
  return 0;
}


enum { kSlices = 4 };

KCV_EXPORT int kcv_run(const kcv_call* call) {
  matmul_args a;
  int rc = matmul_unpack(call, &a);
  if (rc) return rc;
  const int64_t slices = a.K < kSlices ? (a.K > 0 ? a.K : 1) : kSlices;
  const int64_t per = (a.K + slices - 1) / slices;
  for (int64_t i = 0; i < a.M; ++i)
    for (int64_t j = 0; j < a.N; ++j) {
      float partial[kSlices] = {0.0f};
      for (int64_t s = 0; s < slices; ++s) {
        const int64_t k1 = (s + 1) * per < a.K ? (s + 1) * per : a.K;
        for (int64_t k = s * per; k < k1; ++k) partial[s] += a.A[i * a.sa0 + k * a.sa1] * a.B[k * a.sb0 + j * a.sb1];
      }
      float acc = 0.0f;
      for (int64_t s = 0; s < slices; ++s) acc += partial[s];
      a.C[i * a.sc0 + j * a.sc1] = acc;
    }
  return 0;
}
