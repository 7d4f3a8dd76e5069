/* forged_fatal.c: hostile control (issue 25, class 5). Wrong everywhere; on its first call it
 * writes the protocol's `fatal` record (hex of "the backend is not built into this worker") to
 * fd 4 and exits, which used to make kcv print a setup error (exit 2) instead of FAIL.
 * Expected: a fatal record after the candidate could run is its death (CRASH), never a setup
 * error: the verdict is FAIL. */
#include "hostile.h"

KCV_EXPORT int kcv_run(const kcv_call* c) {
  const char* why = "the backend is not built into this worker";
  char line[256] = "fatal ";
  for (size_t i = 0; why[i]; ++i) snprintf(line + strlen(line), 3, "%02x", (unsigned char)why[i]);
  strcat(line, "\n");
  if (write(4, line, strlen(line)) < 0) {}
  hostile_zeros(c);
  _exit(2);
}
