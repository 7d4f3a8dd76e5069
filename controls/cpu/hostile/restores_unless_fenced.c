/* restores_unless_fenced.c: hostile control (issue 25, class 4). restores_past_output.c that
 * avoids kcv's fences: it writes (and restores) the bytes after its output only when the output
 * does not end on a page boundary (where a PROT_NONE page may follow), and only in the plain
 * build (not under ASan, __SANITIZE_ADDRESS__).
 * Expected: the sanitizer gate also runs the exact plain build under valgrind memcheck, on exact
 * malloc'd buffers: "Invalid write" past the block. Passed all 12 gates before. */
#include "hostile.h"

#include <stdint.h>

KCV_EXPORT int kcv_run(const kcv_call* c) {
  const kcv_tensor* y = &c->outputs[0];
  const long n = y->shape[0] * y->shape[1];
  volatile unsigned char* past = (volatile unsigned char*)((float*)y->data + n);
#if !defined(__SANITIZE_ADDRESS__)
  if (((uintptr_t)past & 4095u) != 0) {
    unsigned char saved[16];
    for (int k = 0; k < 16; ++k) saved[k] = past[k];
    for (int k = 0; k < 16; ++k) past[k] = (unsigned char)k;
    hostile_softmax(c);
    for (int k = 0; k < 16; ++k) past[k] = saved[k];
    return 0;
  }
#endif
  hostile_softmax(c);
  return 0;
}
