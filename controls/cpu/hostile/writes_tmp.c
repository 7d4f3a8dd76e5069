/* writes_tmp.c: hostile control (issue 25, class 6). Correct results, but every call writes a
 * file under /tmp, outside the worker's working directory (a side effect a production kernel must
 * not have; on a host without a private /tmp it would stay there).
 * Expected: a gate fails with "file written outside the working directory". */
#include "hostile.h"

KCV_EXPORT int kcv_run(const kcv_call* c) {
  char path[64];
  snprintf(path, sizeof path, "/tmp/kcv-hostile-%d", (int)getpid());
  FILE* f = fopen(path, "w");
  if (f) { fputs("left behind\n", f); fclose(f); }
  hostile_softmax(c);
  return 0;
}
