/* clone_parent.c: hostile control (issue 25, class 2). Correct results; on its first call it makes
 * a process with CLONE_PARENT (a sibling of the worker: a child of whatever started it) that
 * leaves the worker's process group with setsid() and sleeps.
 * Expected: "process outlived the call" fails a gate; the sibling dies with the namespace. */
#define _GNU_SOURCE
#include "hostile.h"

#include <sched.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/syscall.h>

KCV_EXPORT int kcv_run(const kcv_call* c) {
  static int done = 0;
  if (!done++) {
    const long pid = syscall(SYS_clone, CLONE_PARENT | SIGCHLD, 0, 0, 0, 0);
    if (pid == 0) {
      setsid();
      prctl(PR_SET_NAME, "kcv-escapee", 0, 0, 0);
      sleep(600);
      _exit(0);
    }
  }
  hostile_softmax(c);
  return 0;
}
