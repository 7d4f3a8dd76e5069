#!/usr/bin/env bash
# One device command: KernelBench problems offered as their own candidates, sanitizer gate only,
# each alone, keeping every worker log. For reading why a worker exits under a compute-sanitizer
# tool (session 6: level3/35-37, the LSTMs, exited non-zero under racecheck with 0 hazards).
# Usage (repo root, GPU machine, build/ and bench/kernelbench/data carried):
#   bench/kernelbench/device_sanitizer_probe.sh OUTDIR PROBLEM.py...
set -uo pipefail
out="${1:?OUTDIR}"; shift
export KCV_INCLUDE_DIR=$PWD/include KCV_ADAPTERS_DIR=$PWD/adapters PATH=/usr/local/cuda/bin:$PATH
py="${KCV_PYTHON:-$(command -v python3)}"
mkdir -p "$out"
for p in "$@"; do
  name=$(basename "$p" .py)
  t0=$SECONDS
  ./build/kcv verify --kernelbench "$p" "$p" --backend cuda --python "$py" --gates sanitizer \
    --keep-workdir "$out/$name" --json "$out/$name.json" > "$out/$name.txt" 2>&1
  echo "== $name: rc=$? wall=$((SECONDS - t0))s"
  grep -E "sanitizer" "$out/$name.txt" | head -3
  for log in "$out/$name"/worker-*.log; do
    echo "-- $log (last 15 lines)"; tail -15 "$log"
  done
  rm -rf "$out/$name"/torch-extensions "$out/$name"/worker-*/  # builds and scratch: large, not needed
done
