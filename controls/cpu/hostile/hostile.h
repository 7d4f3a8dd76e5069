/* hostile.h: shared by the hostile controls of this directory (issue 25). A correct softmax over
 * any strides, so that what a control does besides computing is the only thing that can fail it,
 * and a few helpers an attacker who knows kcv's source would write. */
#pragma once
#include <kcv/abi.h>

#include <dirent.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static inline void hostile_softmax(const kcv_call* c) {
  const kcv_tensor *x = &c->inputs[0], *y = &c->outputs[0];
  const float* xp = (const float*)x->data;
  float* yp = (float*)y->data;
  for (long i = 0; i < x->shape[0]; ++i) {
    float m = -INFINITY, s = 0;
    for (long j = 0; j < x->shape[1]; ++j) {
      const float v = xp[i * x->stride[0] + j * x->stride[1]];
      m = (v > m || v != v) ? v : m;
    }
    for (long j = 0; j < x->shape[1]; ++j) {
      const float e = expf(xp[i * x->stride[0] + j * x->stride[1]] - m);
      yp[i * y->stride[0] + j * y->stride[1]] = e;
      s += e;
    }
    for (long j = 0; j < x->shape[1]; ++j) yp[i * y->stride[0] + j * y->stride[1]] /= s;
  }
}

/* Wrong everywhere: what a cheater needs the verifier not to notice. */
static inline void hostile_zeros(const kcv_call* c) {
  const kcv_tensor* y = &c->outputs[0];
  for (long i = 0; i < y->shape[0]; ++i)
    for (long j = 0; j < y->shape[1]; ++j) ((float*)y->data)[i * y->stride[0] + j * y->stride[1]] = 0;
}

/* The verifier's pid as the candidate can find it: a process named "kcv" in /proc, else the
 * parent (inside kcv's sandbox: the PID namespace's init, kcv's code, which it attacks instead). */
static inline pid_t hostile_find_kcv(void) {
  DIR* d = opendir("/proc");
  struct dirent* e;
  pid_t found = 0;
  while (d && (e = readdir(d))) {
    char path[300], comm[64] = {0};
    snprintf(path, sizeof path, "/proc/%s/comm", e->d_name);
    FILE* f = fopen(path, "r");
    if (!f) continue;
    if (fgets(comm, sizeof comm, f) && strcmp(comm, "kcv\n") == 0) found = (pid_t)atoi(e->d_name);
    fclose(f);
  }
  if (d) closedir(d);
  return found ? found : getppid();
}
