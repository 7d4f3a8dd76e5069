#!/usr/bin/env bash
# One device command: where a KernelBench verification's time goes on an otherwise idle machine.
# Runs a few pairs side by side (few enough not to load a 16-core host) and prints, per pair, wall
# and process-tree CPU seconds (bash `time`: kcv and every worker it waited for) and per-gate seconds.
# Usage (repo root, GPU machine, build/ and bench/kernelbench/data carried):
#   bench/kernelbench/device_profile.sh OUTDIR PROBLEM SOLUTION [PROBLEM SOLUTION ...]
set -uo pipefail
out="${1:?OUTDIR}"; shift
mkdir -p "$out"
export KCV_INCLUDE_DIR=$PWD/include KCV_ADAPTERS_DIR=$PWD/adapters PATH=/usr/local/cuda/bin:$PATH
py="${KCV_PYTHON:-$(command -v python3)}"
TIMEFORMAT="wall=%R user=%U sys=%S"
i=0
while [ $# -ge 2 ]; do
  p=$1 s=$2; shift 2; i=$((i + 1))
  (
    echo "== pair $i: $s"
    { time ./build/kcv verify --backend cuda --python "$py" --baseline kernelbench \
        --json "$out/pair-$i.json" --kernelbench "$p" "$s" > "$out/pair-$i.txt" 2>&1 ; } 2>&1
    "$py" -c "
import json; r = json.load(open('$out/pair-$i.json'))
print('verdict', r['verdict'], ' '.join(f\"{g['id']}={g['seconds']:.1f}\" for g in r['gates']),
      'compile', r.get('kernelbench', {}).get('compile_seconds'))" 2>&1
  ) > "$out/pair-$i.summary" 2>&1 &
done
wait
cat "$out"/pair-*.summary
