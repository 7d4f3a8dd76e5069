/* restores_past_output.c: hostile control (issue 25, class 4). Correct values, but it uses the
 * 64 bytes after its output as scratch and puts their old contents back before it returns: kcv's
 * canaries read intact, while in production the bytes after a buffer are another tensor's, which
 * a second thread may read meanwhile (or which the kernel clobbers for good when it races).
 * Expected: in a quarter of the cases of every gate but bounds and sanitizer (cpu) every output
 * ends against a PROT_NONE page (within 63 bytes: it stays 64-byte aligned): a scratch write
 * faults there, the case is a CRASH with "access ... past the end of output 'y'". The sanitizer
 * gate (exact malloc'd buffers, valgrind and ASan) reports the write too. Passed all 12 gates
 * before. */
#include "hostile.h"

KCV_EXPORT int kcv_run(const kcv_call* c) {
  const kcv_tensor* y = &c->outputs[0];
  const long n = y->shape[0] * y->shape[1];
  volatile unsigned char* past = (volatile unsigned char*)((float*)y->data + n);
  unsigned char saved[64];
  for (int k = 0; k < 64; ++k) saved[k] = past[k];
  for (int k = 0; k < 64; ++k) past[k] = (unsigned char)k;  /* scratch */
  hostile_softmax(c);
  for (int k = 0; k < 64; ++k) past[k] = saved[k];
  return 0;
}
