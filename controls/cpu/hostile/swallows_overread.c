/* swallows_overread.c: hostile control (issue 25, class 4). Correct results, but every call reads
 * 4 KiB past the end of its input, as a vectorized kernel that does not mask its tail would, under
 * a SIGSEGV handler of its own that jumps over the fault, installed for the read and put back
 * before returning (so no disposition is left changed for a check after the call to see). The
 * read lands in the PROT_NONE page after the input: without the handler it traps.
 * Expected: the handler cannot be installed (kcv-worker forbids it), the read traps, and the gate
 * fails with the fault's evidence ("past the end of input"). */
#include "hostile.h"

#include <setjmp.h>
#include <signal.h>

static sigjmp_buf jump;
static void on_segv(int sig) { (void)sig; siglongjmp(jump, 1); }

KCV_EXPORT int kcv_run(const kcv_call* c) {
  const kcv_tensor* x = &c->inputs[0];
  const float* last = (const float*)x->data + (x->shape[0] - 1) * x->stride[0] + (x->shape[1] - 1) * x->stride[1];
  struct sigaction sa, old;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = on_segv;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGSEGV, &sa, &old);  /* its result unchecked, as a careless cheater's */
  volatile float sink = 0;
  if (!sigsetjmp(jump, 1))
    for (int k = 1; k <= 1024; ++k) sink += last[k];
  sigaction(SIGSEGV, &old, NULL);
  hostile_softmax(c);
  return 0;
}
