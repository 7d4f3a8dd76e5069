/* add_ok_split.c: positive control for the add contract, cpu backend, split across files.
 *
 * add_ok.c with its argument checks in split/add_args.h, beside it (#include "split/add_args.h"):
 * a candidate's own headers must reach every build kcv makes of it (the private copy of its
 * directory, docs/security.md).
 * Expected: PASS on all 12 gates.
 */
#include "split/add_args.h"

KCV_EXPORT int kcv_run(const kcv_call* call) {
  add_args v;
  int rc = add_unpack(call, &v);
  if (rc) return rc;
  for (int64_t i = 0; i < v.N; ++i) v.c[i * v.sc] = v.a[i * v.sa] + v.b[i * v.sb];
  return 0;
}
