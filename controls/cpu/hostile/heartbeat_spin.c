/* heartbeat_spin.c: hostile control (issue 25, class 5: hangs). Never returns: it spins, writing a
 * protocol line ("start 0") to the worker's record pipe (fd 4) every 50 ms, which used to reset
 * the per-call deadline for ever.
 * Expected: TIMEOUT after --timeout seconds, whatever it writes; the verdict is FAIL. */
#include "hostile.h"

#include <time.h>

KCV_EXPORT int kcv_run(const kcv_call* c) {
  (void)c;
  for (;;) {
    const struct timespec t = {0, 50 * 1000 * 1000};
    nanosleep(&t, NULL);
    if (write(4, "start 0\n", 8) < 0) {}
  }
}
