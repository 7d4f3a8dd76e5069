/* opens_guard_page.c: hostile control (issue 25, class 4). Correct results, but every call makes
 * the inaccessible page after its input readable (mprotect) and reads past the input's end there:
 * an over-read that no longer traps. It leaves the page open.
 * Expected: kcv-worker sees the page accessible after the call, and the gate fails with "made the
 * PROT_NONE page after input 0 accessible". (Closing the page again before returning is not seen:
 * docs/security.md, what remains out of reach.) */
#include "hostile.h"

#include <stdint.h>
#include <sys/mman.h>

KCV_EXPORT int kcv_run(const kcv_call* c) {
  const kcv_tensor* x = &c->inputs[0];
  const float* last = (const float*)x->data + (x->shape[0] - 1) * x->stride[0] + (x->shape[1] - 1) * x->stride[1];
  const long page = sysconf(_SC_PAGESIZE);
  const uintptr_t next = ((uintptr_t)(last + 1) + (uintptr_t)page - 1) / (uintptr_t)page * (uintptr_t)page;
  mprotect((void*)next, (size_t)page, PROT_READ);
  volatile float sink = 0;
  for (int k = 1; k <= 256; ++k) sink += last[k];
  hostile_softmax(c);
  return 0;
}
