/* late_write.c: hostile control (issue 25, class 4). Correct results when the call returns, but a
 * thread it leaves behind changes the first output element a millisecond later, and only when the
 * caller has left the buffer alone (as it is when kcv snapshots it right after the return; in
 * production the caller reads it later and gets a wrong value).
 * Expected: kcv snapshots the outputs again at the end of each case (a share of the cases after a
 * wait) and the gate fails with "changed after the call returned". */
#include "hostile.h"

#include <pthread.h>
#include <time.h>

struct late { float* y; float v; };

static void* later(void* p) {
  struct late* l = (struct late*)p;
  struct timespec ts = {0, 1000000};
  nanosleep(&ts, NULL);
  if (l->y[0] == l->v) l->y[0] = l->v + 1.0f;
  free(l);
  return NULL;
}

KCV_EXPORT int kcv_run(const kcv_call* c) {
  hostile_softmax(c);
  struct late* l = (struct late*)malloc(sizeof *l);
  l->y = (float*)c->outputs[0].data;
  l->v = l->y[0];
  pthread_t t;
  if (pthread_create(&t, NULL, later, l) == 0) pthread_detach(t);
  return 0;
}
