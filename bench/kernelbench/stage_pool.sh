#!/usr/bin/env bash
# Stages what device_pool.sh needs into the git-ignored .xfer/s22b (run in the repo root after
#   cmake --build build --target kcv kcv-worker kcv_python): kcv, kcv-worker, libkcv_core.a, libkcv_registry.a,
#   libglr_contracts.a, libkcv_base.a, libseccomp.a, generated/ (the layout of stage_issue22.sh's
#   .xfer/kb22 and device_standby.sh's .xfer/s22).
# Usage: bench/kernelbench/stage_pool.sh [BUILD_DIR=build] [DEST=.xfer/s22b]
set -euo pipefail
b="${1:-build}"; dest="${2:-.xfer/s22b}"
rm -rf "$dest"; mkdir -p "$dest"
cp "$b/kcv" "$b/kcv-worker" "$b/libkcv_core.a" "$b/libkcv_registry.a" "$b/libglr_contracts.a" "$b/libkcv_base.a" \
   "$dest/"
cp -r "$b/generated" "$dest/"
seccomp=$(sed -n 's/.* \([^ ]*libseccomp\.a\).*/\1/p' "$b/CMakeFiles/kcv_python.dir/link.txt" 2>/dev/null | head -1)
cp "${seccomp:-/usr/lib/x86_64-linux-gnu/libseccomp.a}" "$dest/libseccomp.a"
echo "kcv $(git rev-parse HEAD)$(git diff --quiet || echo ' (dirty)')" > "$dest/STAGED"
git check-ignore -q "$dest" || { echo "stage_pool: $dest is not ignored"; exit 1; }
du -sh "$dest"
