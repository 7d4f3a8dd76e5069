#!/usr/bin/env bash
# One device command: the torch adapter on cuda, end to end, before any corpus run.
# Usage (repo root, on the GPU machine, build/ carried): bench/kernelbench/device_smoke.sh OUTDIR
set -uo pipefail
out="${1:?OUTDIR}"
mkdir -p "$out"
export KCV_INCLUDE_DIR=$PWD/include KCV_ADAPTERS_DIR=$PWD/adapters PATH=/usr/local/cuda/bin:$PATH
py="${KCV_PYTHON:-$(command -v python3)}"
"$py" -c "import torch; print('torch', torch.__version__, 'cuda', torch.cuda.is_available())"
run() {  # name, args...
  local name=$1; shift
  local t0=$SECONDS
  ./build/kcv verify --backend cuda --python "$py" --baseline kernelbench --json "$out/$name.json" "$@" > "$out/$name.txt" 2>&1
  echo "== $name rc=$? wall=$((SECONDS - t0))s"; tail -18 "$out/$name.txt"
}
run rowsum.reference --kernelbench controls/torch/rowsum/problem.py controls/torch/rowsum/problem.py
lb=bench/kernelbench/data/lb/level1-part/level1
d=$(ls -d $lb/19_ReLU 2>/dev/null || ls -d $lb/* | head -1)
s=$(ls $d/solution*.py | head -1)
run lb.first --kernelbench $d/problem.py $s
