/* late_write_next_call.c: hostile control (issue 25, class 4), the deterministic twin of
 * late_write.c. Correct results when each call returns; the next call, on entry, changes the
 * previous call's first output element (when the caller left it alone and its page is still
 * mapped). No thread and no timing: a caller that reads a result after making another call gets
 * a wrong value, and kcv sees it whenever a case makes a second call before snapshotting the
 * first call's outputs again (the stateless gate's "same contents at new addresses").
 * Expected: stateless fails with "changed after the call returned", on every run. */
#include "hostile.h"

#include <stdint.h>
#include <sys/mman.h>

static float* last_y = NULL;
static float last_v;

static int still_mapped(const void* p) {
  const long page = sysconf(_SC_PAGESIZE);
  unsigned char resident;
  return mincore((void*)((uintptr_t)p & ~(uintptr_t)(page - 1)), 1, &resident) == 0;
}

KCV_EXPORT int kcv_run(const kcv_call* c) {
  if (last_y && still_mapped(last_y) && *last_y == last_v) *last_y = last_v + 1.0f;
  hostile_softmax(c);
  last_y = (float*)c->outputs[0].data;
  last_v = last_y[0];
  return 0;
}
