/* page_aligned_tell.c: hostile control (issue 25, class 3). Right only where kcv used to put
 * every output: at the start of a page (its guard band is one page). Anywhere else, as in
 * production (a malloc'd or torch-allocated tensor, 16 or 64 bytes aligned), it writes zeros.
 * Expected: kcv places every buffer (cpu, all gates but bounds) at a page offset drawn from the
 * seed, a multiple of 64 bytes; the candidate meets one it does not recognise and fails.
 * Passed all 12 gates before. */
#include "hostile.h"

#include <stdint.h>

KCV_EXPORT int kcv_run(const kcv_call* c) {
  /* within the first 64 bytes of a page: kcv's own placement (the layout gate's offset of one
   * element included) */
  if (((uintptr_t)c->outputs[0].data & 4095u) < 64) hostile_softmax(c);
  else hostile_zeros(c);
  return 0;
}
