#!/usr/bin/env bash
# Stages what device_issue22.sh needs into the git-ignored .xfer/ (run here, in the repo root, after
#   cmake --build build --target kcv kcv-worker kcv_python):
#   .xfer/kb    KernelBench (git archive of a fetched mirror; never committed)
#   .xfer/kb22  kcv, kcv-worker, libkcv_core.a, libkcv_registry.a, libglr_contracts.a, libkcv_base.a,
#               libseccomp.a, generated/
# Usage: bench/kernelbench/stage_issue22.sh KERNELBENCH_GIT_DIR [BUILD_DIR=build]
set -euo pipefail
gitdir="${1:?KernelBench git dir (e.g. /work/.mirror/ScalingIntelligence+KernelBench/repo)}"; b="${2:-build}"
rm -rf .xfer/kb .xfer/kb22; mkdir -p .xfer/kb .xfer/kb22
git --git-dir="$gitdir" archive HEAD | tar -x -C .xfer/kb
echo "kernelbench $(git --git-dir="$gitdir" rev-parse HEAD)" > .xfer/kb22/STAGED
cp "$b/kcv" "$b/kcv-worker" "$b/libkcv_core.a" "$b/libkcv_registry.a" "$b/libglr_contracts.a" "$b/libkcv_base.a" \
   .xfer/kb22/
cp -r "$b/generated" .xfer/kb22/
seccomp=$(sed -n 's/.* \([^ ]*libseccomp\.a\).*/\1/p' "$b/CMakeFiles/kcv_python.dir/link.txt" 2>/dev/null | head -1)
cp "${seccomp:-/usr/lib/x86_64-linux-gnu/libseccomp.a}" .xfer/kb22/libseccomp.a
echo "kcv $(git rev-parse HEAD)$(git diff --quiet || echo ' (dirty)')" >> .xfer/kb22/STAGED
{ git check-ignore -q .xfer/kb && git check-ignore -q .xfer/kb22; } || { echo "stage_issue22: .xfer is not ignored"; exit 1; }
du -sh .xfer/kb .xfer/kb22
