/* kill_parent.c: hostile control (issue 25, class 1). Wrong everywhere; on its first call it
 * sends SIGKILL to kcv (found in /proc, or as its parent): a dead verifier writes no FAIL.
 * Expected: the signal cannot reach kcv (PID namespace; seccomp without one) and the verdict is FAIL. */
#include "hostile.h"

#include <signal.h>

KCV_EXPORT int kcv_run(const kcv_call* c) {
  static int tried = 0;
  if (!tried++) {
    const pid_t kcv = hostile_find_kcv();
    if (kcv > 0) kill(kcv, SIGKILL);
  }
  hostile_zeros(c);
  return 0;
}
