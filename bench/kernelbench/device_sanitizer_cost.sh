#!/usr/bin/env bash
# One device command: where the sanitizer gate's time goes for a torch candidate (23% of a
# leaderboard pair's time in session 7, with the host's CPU saturated). For each compute-sanitizer
# tool, as the gate runs it (library kernels excluded except under initcheck), times with
# /usr/bin/time (wall, user, sys, peak RSS):
#   1. a bare program: import torch, start CUDA, a matmul and a softmax (the fixed cost: tool
#      start-up, torch import, module loading under the tool);
#   2. the sanitizer gate of one verification, alone (kcv verify --gates sanitizer).
# The difference says how much of the gate is the checked calls rather than start-up.
# Usage (repo root, GPU machine, build/ and bench/kernelbench/data carried):
#   bench/kernelbench/device_sanitizer_cost.sh OUTDIR PROBLEM.py SOLUTION.py
set -uo pipefail
out="${1:?OUTDIR}"; problem="${2:?PROBLEM.py}"; solution="${3:?SOLUTION.py}"
export KCV_INCLUDE_DIR=$PWD/include KCV_ADAPTERS_DIR=$PWD/adapters PATH=/usr/local/cuda/bin:$PATH
py="${KCV_PYTHON:-$(command -v python3)}"
mkdir -p "$out"
# kLibraryKernels exactly as the runner passes it: every string literal of its definition, joined.
exclude=$("$py" - <<'PY'
import re
text = open("src/kcv/runner.hpp").read()
m = re.search(r'kLibraryKernels\s*=\s*((?:"[^"]*"\s*)+);', text)
print("".join(re.findall(r'"([^"]*)"', m.group(1))) if m else "")
PY
)
[ -n "$exclude" ] || { echo "cannot read kLibraryKernels from src/kcv/runner.hpp"; exit 2; }
program="import torch; x = torch.randn(1024, 1024, device='cuda'); (x @ x).sum().item(); torch.softmax(x, 1).sum().item()"
t() { local what=$1; shift; /usr/bin/time -f "$what: wall %e s, user %U s, sys %S s, peak RSS %M KB" "$@" > /dev/null 2> "$out/time.tmp"; grep -E "^$what:" "$out/time.tmp"; }
t "plain" "$py" -c "$program"
for tool in memcheck racecheck initcheck synccheck; do
  filter=(--kernel-name-exclude "regex=$exclude")
  [ "$tool" = initcheck ] && filter=()
  t "$tool bare" compute-sanitizer --tool "$tool" "${filter[@]}" "$py" -c "$program"
done
t "sanitizer gate" ./build/kcv verify --kernelbench "$problem" "$solution" --backend cuda --python "$py" \
  --gates sanitizer --json "$out/sanitizer.json"
t "numerics gate" ./build/kcv verify --kernelbench "$problem" "$solution" --backend cuda --python "$py" \
  --gates numerics --json "$out/numerics.json"
"$py" - "$out/sanitizer.json" "$out/numerics.json" <<'PY'
import json, sys
for path in sys.argv[1:]:
    r = json.load(open(path))
    kb = r.get("kernelbench") or {}
    for g in r["gates"]:
        if g["verdict"] != "SKIPPED":
            print(f"{g['id']}: {g['verdict']} {g['seconds']:.1f} s, {g['cases']} cases; compile {kb.get('compile_seconds', 0):.1f} s")
PY
rm -f "$out/time.tmp"
