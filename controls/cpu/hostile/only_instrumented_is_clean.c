/* only_instrumented_is_clean.c: hostile control (issue 25, class 3). Behaves only when built with
 * AddressSanitizer (__SANITIZE_ADDRESS__): the plain build, the one production loads, reads a
 * scratch buffer after freeing it (a use after free that happens to give the right answer until
 * the allocator hands the block to someone else).
 * Expected: the sanitizer gate runs the exact plain build under valgrind memcheck too, which
 * reports "Invalid read". Passed all 12 gates before (only the ASan rebuild was checked). */
#include "hostile.h"

KCV_EXPORT int kcv_run(const kcv_call* c) {
  float* scratch = (float*)malloc(64 * sizeof(float));
  if (!scratch) return 1;
  scratch[0] = 1.0f;
#if !defined(__SANITIZE_ADDRESS__)
  free(scratch);
  volatile float one = scratch[0]; /* use after free */
  (void)one;
#else
  free(scratch);
#endif
  hostile_softmax(c);
  return 0;
}
