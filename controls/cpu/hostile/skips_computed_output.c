/* skips_computed_output.c: hostile control (issue 25, class 3). Wrong in production only: it
 * computes only when the output still holds what a verifier would put there — every byte the same
 * (a poison, zeros, one repeated byte) or not plausible data (a NaN, an Inf or a value above 1e30:
 * random bytes) — and otherwise returns at once, taking the output for a result left by an earlier
 * call (a benchmark's loop calls it again and again on the same buffers). In production a freshly
 * allocated output holds whatever an earlier tensor left there: it returns stale data.
 * Expected: kcv prefills an eighth of the numerics, shapes and values cases with stale data (the
 * values of the case's own inputs in the output's dtype); the candidate skips those and fails.
 * Passed all 12 gates before (prefill was poison, zeros, random bytes or one byte). */
#include "hostile.h"

#include <stdint.h>

static int looks_like_a_verifiers_prefill(const kcv_tensor* y) {
  const long n = y->shape[0] * y->shape[1];
  if (n == 0) return 1;
  const unsigned char* b = (const unsigned char*)y->data;
  int all_same = 1;
  for (long k = 1; k < n * 4 && all_same; ++k) all_same = b[k] == b[0];
  if (all_same) return 1;
  for (long i = 0; i < y->shape[0]; ++i)
    for (long j = 0; j < y->shape[1]; ++j) {
      const float v = ((const float*)y->data)[i * y->stride[0] + j * y->stride[1]];
      if (!(fabsf(v) <= 1e30f)) return 1;
    }
  return 0;
}

KCV_EXPORT int kcv_run(const kcv_call* c) {
  if (looks_like_a_verifiers_prefill(&c->outputs[0])) hostile_softmax(c);
  return 0;
}
