/* sleeping_child.c: hostile control (issue 25, class 6: side effects). Correct results, but its
 * first call leaves a child process sleeping behind it (no setsid: it would die with the worker's
 * process group; a kernel that leaves processes running is still not one to PASS).
 * Expected: a gate fails with "process outlived the call". */
#include "hostile.h"

#include <sys/prctl.h>

KCV_EXPORT int kcv_run(const kcv_call* c) {
  static int done = 0;
  if (!done++ && fork() == 0) {
    prctl(PR_SET_NAME, "kcv-escapee", 0, 0, 0);
    sleep(600);
    _exit(0);
  }
  hostile_softmax(c);
  return 0;
}
