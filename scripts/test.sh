#!/usr/bin/env bash
# The test command: installs what is missing, builds, runs every test (unit tests and controls).
# GPU tests skip with their reason when there is no GPU. Usage: ./scripts/test.sh [ctest args]
set -euo pipefail
here="$(cd "$(dirname "$0")/.." && pwd)"
"$here/scripts/setup.sh" "$here/build"
cd "$here/build"
# Say out loud why GPU tests skip (each control.cuda.* test prints the same reason with -V).
reason=$(./kcv verify --op add --candidate "$here/controls/cuda/add/add_ok.cu" --backend cuda --gates numerics \
         --quiet 2>&1 >/dev/null || true)
case "$reason" in
  *"no CUDA device"* | *"not built"*) echo "note: the control.cuda.* tests skip on this machine: ${reason#kcv: }" ;;
esac
ctest --output-on-failure -j "$(nproc)" "$@"
