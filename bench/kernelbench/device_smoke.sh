#!/usr/bin/env bash
# One device command: the torch adapter on cuda, end to end, before any corpus run. Runs the
# rowsum cuda controls of controls/torch/rowsum/controls.cmake side by side, exactly as ctest does
# on a machine with a GPU, and says whether each verdict is the one the control expects.
# Usage (repo root, on the GPU machine, build/ carried): bench/kernelbench/device_smoke.sh OUTDIR
# KCV=PATH runs another kcv (its kcv-worker beside it), e.g. one carried in .xfer/.
# KCV_SMOKE_ARGS: more `kcv verify` arguments for every run (e.g. --no-sandbox for issue 25's
# sandbox-off comparison); the per-gate seconds of each run are in OUTDIR/gate-seconds.md.
set -uo pipefail
out="${1:?OUTDIR}"
mkdir -p "$out"
export KCV_INCLUDE_DIR=$PWD/include KCV_ADAPTERS_DIR=$PWD/adapters PATH=/usr/local/cuda/bin:$PATH
py="${KCV_PYTHON:-$(command -v python3)}"
"$py" -c "import torch; print('torch', torch.__version__, 'cuda', torch.cuda.is_available())"
c=controls/torch/rowsum
run() {  # name, expected "rc gate-verdicts...", problem, verify args...
  local name=$1 want=$2 problem=$3; shift 3
  local t0=$SECONDS
  "${KCV:-./build/kcv}" verify --backend cuda --python "$py" --baseline kernelbench --json "$out/$name.json" \
    --kernelbench $problem "$@" ${KCV_SMOKE_ARGS:-} > "$out/$name.txt" 2>&1
  local rc=$?
  local got="$rc $("$py" -c "import json; r = json.load(open('$out/$name.json')); print(r['kernelbench']['baseline']['verdict'], ' '.join(g['id'] + '=' + g['verdict'] for g in r['gates'] if g['verdict'] not in ('PASS', 'SKIPPED')))" 2>/dev/null)"
  local ok=MISMATCH; [ "$got" = "$want" ] && ok=as-expected
  echo "== $name: $ok (got '$got', want '$want') wall=$((SECONDS - t0))s"
  [ $ok = as-expected ] || tail -20 "$out/$name.txt"
}
p=$c/problem.py
run rowsum.reference "0 pass " $p $c/problem.py &
run rowsum.cuda_ok "0 pass " $p $c/solution_cuda_ok.py &
run rowsum.cuda_default_stream "1 pass concurrency=FAIL" $p $c/solution_cuda_default_stream.py --gates concurrency,numerics &
run rowsum.cuda_shared_race "1 pass sanitizer=FAIL" $p $c/solution_cuda_shared_race.py --gates sanitizer,numerics &
run rowsum.cuda_tail_overrun "1 pass sanitizer=FAIL" $p $c/solution_cuda_tail_overrun.py --gates sanitizer,numerics &
run rowsum.cuda_worker_waits "0 pass " $p $c/solution_cuda_waits.py --gates numerics &
run rowsum.cuda_reference_waits "0 pass " $c/problem_waits.py $c/solution_cuda_ok.py --gates numerics &
wait
# Per-gate seconds and the extension build's, one row per run, for comparisons across runs.
"$py" - "$out" > "$out/gate-seconds.md" <<'PY'
import glob, json, os, sys
rows = []
for f in sorted(glob.glob(os.path.join(sys.argv[1], "*.json"))):
    try:
        r = json.load(open(f))
    except (OSError, ValueError):
        continue
    gates = {g["id"]: g.get("seconds", 0.0) for g in r.get("gates", []) if g.get("verdict") != "SKIPPED"}
    build = (r.get("kernelbench") or {}).get("compile_seconds")
    rows.append((os.path.basename(f)[:-5], build, gates))
ids = [i for i in ("numerics shapes values nonfinite bounds inputs_intact coverage determinism layout stateless "
                   "concurrency sanitizer").split() if any(i in g for _, _, g in rows)]
print("| run | build s | " + " | ".join(ids) + " | gates s |")
print("|---" * (len(ids) + 3) + "|")
for name, build, g in rows:
    cells = ["%.2f" % g[i] if i in g else "" for i in ids]
    print("| %s | %s | %s | %.2f |" % (name, "%.1f" % build if build is not None else "", " | ".join(cells), sum(g.values())))
PY
cat "$out/gate-seconds.md"
