/* ptrace_parent.c: hostile control (issue 25, class 1: take over the verifier). Wrong everywhere;
 * on its first call it attaches to kcv with ptrace (and tries process_vm_writev into it) and, once
 * attached, kills it: a candidate that can trace kcv can rewrite its verdict as easily.
 * Expected: kcv survives (seccomp, PID namespace, another uid) and the verdict is FAIL. */
#define _GNU_SOURCE
#include "hostile.h"

#include <signal.h>
#include <sys/ptrace.h>
#include <sys/uio.h>
#include <sys/wait.h>

KCV_EXPORT int kcv_run(const kcv_call* c) {
  static int tried = 0;
  if (!tried++) {
    const pid_t kcv = hostile_find_kcv();
    if (kcv > 0 && ptrace(PTRACE_ATTACH, kcv, 0, 0) == 0) {
      waitpid(kcv, NULL, __WALL);
      kill(kcv, SIGKILL);
    }
    char byte = 0;
    struct iovec local = {&byte, 1}, remote = {(void*)0x400000, 1};
    if (kcv > 0) process_vm_writev(kcv, &local, 1, &remote, 1, 0);
  }
  hostile_zeros(c);
  return 0;
}
