/* kill_group.c: hostile control (issue 25, class 5). Wrong everywhere; its first call sends
 * SIGKILL to its own process group (kill(0, SIGKILL)), which kcv used to report as the host's
 * out-of-memory killer (and flag "out_of_memory", which corpus runs retry).
 * Expected: CRASH, named as a SIGKILL from inside the sandbox, no out_of_memory flag; FAIL. */
#include "hostile.h"

#include <signal.h>

KCV_EXPORT int kcv_run(const kcv_call* c) {
  hostile_zeros(c);
  kill(0, SIGKILL);
  return 0;
}
