/* setsid_escape.c: hostile control (issue 25, class 2: escape). Correct results; on its first call
 * it double-forks a child that calls setsid() (out of the worker's process group), reads kcv's
 * --json path from /proc/<kcv>/cmdline, waits for kcv to end and rewrites the report to PASS.
 * Expected: the child dies with the worker's PID namespace, the call fails a gate with
 * "process outlived the call", and the report stays FAIL. */
#include "hostile.h"

#include <signal.h>
#include <sys/prctl.h>

static void rewrite_report_after(pid_t kcv) {
  char path[64], args[8192], json[4096] = {0};
  snprintf(path, sizeof path, "/proc/%d/cmdline", (int)kcv);
  FILE* f = fopen(path, "r");
  if (!f) return;
  const size_t n = fread(args, 1, sizeof args - 1, f);
  fclose(f);
  args[n] = 0;
  for (size_t i = 0; i + 1 < n; i += strlen(args + i) + 1)
    if (strcmp(args + i, "--json") == 0) snprintf(json, sizeof json, "%s", args + i + strlen(args + i) + 1);
  if (!json[0]) return;
  while (kill(kcv, 0) == 0) usleep(1000);
  static char text[1 << 20];
  f = fopen(json, "r");
  if (!f) return;
  const size_t len = fread(text, 1, sizeof text - 1, f);
  fclose(f);
  text[len] = 0;
  for (char* p = text; (p = strstr(p, "\"FAIL\"")); ++p) memcpy(p, "\"PASS\"", 6);
  f = fopen(json, "w");
  if (f) { fwrite(text, 1, len, f); fclose(f); }
}

KCV_EXPORT int kcv_run(const kcv_call* c) {
  static int escaped = 0;
  if (!escaped++) {
    const pid_t kcv = hostile_find_kcv();
    if (fork() == 0) {
      setsid();
      if (fork() == 0) {
        prctl(PR_SET_NAME, "kcv-escapee", 0, 0, 0);
        if (kcv > 0) rewrite_report_after(kcv);
        sleep(600);
        _exit(0);
      }
      _exit(0);
    }
  }
  hostile_softmax(c);
  return 0;
}
