#!/usr/bin/env bash
# An identity of a header tree by its content (16 hex digits): what the device scripts record of the
# kernels they ran. The device's copy of the working tree carries stale git metadata (its `git log -1`
# named an old commit in sessions 21 and 34), so a commit from there proves nothing; this id, computed
# on the host over include/ of any commit (`git archive REV include | tar -x -C /tmp/x`), does.
#
#   bench/glr/headers_id.sh [DIR]        (default: include)
#
# The id: sha256 of the `sha256sum` lines of every regular file under DIR, paths "./<relative>",
# sorted bytewise. bench_glr_vs_fla.py's glr_headers runs this script.
set -euo pipefail
dir=${1:-include}
[ -d "$dir" ] || { echo "headers_id.sh: $dir is not a directory" >&2; exit 2; }
(cd "$dir" && find . -type f -print0 | LC_ALL=C sort -z | xargs -0 -r sha256sum) | sha256sum | cut -c1-16
