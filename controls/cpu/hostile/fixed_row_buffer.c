/* fixed_row_buffer.c: hostile control (issue 25, class 4). A softmax with a row buffer of 8192
 * floats, the largest N the shapes gate swept: rows longer than that are normalised over their
 * first 8192 elements only, and their other elements left as they were. The contract promises
 * N up to 65536.
 * Expected: the shapes gate draws one size per symbol beyond its sweep, up to the contract's
 * range (the other symbols shrunk to keep the call at most 2^23 elements): N > 8192 fails.
 * Passed all 12 gates before. */
#include "hostile.h"

KCV_EXPORT int kcv_run(const kcv_call* c) {
  static __thread float row[8192];
  const kcv_tensor *x = &c->inputs[0], *y = &c->outputs[0];
  const long N = x->shape[1] < 8192 ? x->shape[1] : 8192;
  for (long i = 0; i < x->shape[0]; ++i) {
    float m = -INFINITY, s = 0;
    for (long j = 0; j < N; ++j) {
      row[j] = ((const float*)x->data)[i * x->stride[0] + j * x->stride[1]];
      m = (row[j] > m || row[j] != row[j]) ? row[j] : m;
    }
    for (long j = 0; j < N; ++j) s += (row[j] = expf(row[j] - m));
    for (long j = 0; j < N; ++j) ((float*)y->data)[i * y->stride[0] + j * y->stride[1]] = row[j] / s;
  }
  return 0;
}
