#!/usr/bin/env bash
# The sandbox branch on a GPU machine (issue 25; docs/security.md), in one command that fails fast:
#
#   bash scripts/device_sandbox_check.sh BIN_DIR
#
# from the repository root, with kcv and kcv-worker (and sbx2_torch_cuda.json, the torch cuda
# controls' ctest dump made where the tree was configured) in BIN_DIR. Steps:
#   0. the machine: binaries run, nvcc, compute-sanitizer, python3 with CUDA torch (else stop);
#   a. smoke, in parallel: add_ok.cu and add_ok_split.cu (a header beside it) with --gates
#      numerics, and the KernelBench rowsum solution_cuda_ok.py (imports cuda_rowsum.py beside it)
#      with --gates numerics. Anything but exit 0 and verdict PASS: print why, and stop (the run
#      of 2026-12 errored on every candidate and spent 8 minutes saying so);
#   b. scripts/device_sandbox_diag.sh within DIAG_BUDGET_S (150 s; its files tarred);
#   c. in parallel: the cuda controls of softmax, add and matmul (scripts/verify_controls.py) and
#      the torch cuda controls (scripts/ctest_elsewhere.py on the dump), within what is left of
#      CHECK_BUDGET_S (400 s; at least 200 s).
# Results under $OUT (default ./sandbox-check), at most 8 files: summary.txt (everything printed),
# smoke.tar.gz, diag.tar.gz, cuda_controls.md, cuda_controls.tar.gz, torch_cuda.txt,
# torch_cuda.tar.gz. Exit 0 when every step gave what it should, 1 when one did not, 2 when the
# machine or the smoke stopped it.
set -u
cd "$(dirname "$0")/.." || exit 2
ROOT=$PWD
BIN=${1:?usage: scripts/device_sandbox_check.sh BIN_DIR (kcv, kcv-worker, sbx2_torch_cuda.json)}
BIN=$(cd "$BIN" && pwd) || exit 2
OUT=${OUT:-$ROOT/sandbox-check}
BUDGET=${CHECK_BUDGET_S:-400}
mkdir -p "$OUT" || exit 2
export KCV_INCLUDE_DIR=$ROOT/include KCV_ADAPTERS_DIR=$ROOT/adapters PATH=/usr/local/cuda/bin:$PATH
export KCV_PYTHON=${KCV_PYTHON:-$(command -v python3)}
START=$(date +%s)
elapsed() { echo $(( $(date +%s) - START )); }
# Scratch the workers (uid 65534) can reach; tarred into $OUT at the end.
W=$(mktemp -d /tmp/kcv-check.XXXXXX) && chmod 755 "$W" || exit 2
finish() {
  local rc=$1
  for d in smoke diag cuda_controls torch_cuda; do
    [ -d "$W/$d" ] && tar -czf "$OUT/$d.tar.gz" -C "$W" "$d" 2>/dev/null
  done
  echo "== done after $(elapsed) s, exit $rc"
  exit "$rc"
}
stop() { echo "STOP: $*"; finish 2; }

main() {
echo "== 0. machine ($(date -u +%FT%TZ))"
uname -r; nproc
mkdir -p build || stop "cannot make build/"
for b in kcv kcv-worker; do
  [ -x "$BIN/$b" ] || stop "$BIN/$b is missing or not executable"
  cp -f "$BIN/$b" "build/$b" || stop "cannot copy $b into build/"
done
./build/kcv contracts >/dev/null 2>"$W/contracts.err" || stop "build/kcv does not run: $(head -3 "$W/contracts.err")"
command -v nvcc >/dev/null || stop "nvcc is not on PATH ($PATH)"
command -v compute-sanitizer >/dev/null || echo "note: compute-sanitizer not on PATH (the sanitizer gate will say so)"
nvidia-smi --query-gpu=name,driver_version,memory.used --format=csv,noheader 2>&1 | head -2
echo "python: $KCV_PYTHON"
timeout 90 "$KCV_PYTHON" -c "import torch; print('torch', torch.__version__, 'cuda', torch.cuda.is_available()); assert torch.cuda.is_available()" \
  || stop "$KCV_PYTHON cannot import torch with CUDA"
# The torch worker runs as uid 65534 (kcv is root): the interpreter and the adapters must be
# reachable by it, or every torch gate CRASHes.
if [ "$(id -u)" = 0 ] && command -v setpriv >/dev/null; then
  timeout 30 setpriv --reuid 65534 --regid 65534 --clear-groups "$KCV_PYTHON" -c "import os; open('$KCV_ADAPTERS_DIR/torch/kcv_torch_worker.py').close()" \
    2>"$W/uid.err" || stop "uid 65534 cannot run $KCV_PYTHON or read $KCV_ADAPTERS_DIR: $(head -2 "$W/uid.err")"
fi
DUMP=$BIN/sbx2_torch_cuda.json
[ -f "$DUMP" ] || DUMP=$ROOT/bench/results/sbx2_torch_cuda.json
[ -f "$DUMP" ] || stop "no torch cuda ctest dump (sbx2_torch_cuda.json) in $BIN or bench/results"
echo "torch cuda dump: $DUMP"

echo "== a. smoke (fail fast), $(elapsed) s"
mkdir -p "$W/smoke"
smoke() {  # NAME LIMIT_S ARGS...: kcv verify ... --gates numerics; writes NAME.json, NAME.txt, NAME.rc
  local name=$1 limit=$2
  shift 2
  timeout -k 5 "$limit" ./build/kcv verify "$@" --backend cuda --gates numerics --seed 1 \
    --json "$W/smoke/$name.json" >"$W/smoke/$name.txt" 2>&1
  echo $? >"$W/smoke/$name.rc"
}
smoke add_ok 120 --op add --candidate controls/cuda/add/add_ok.cu &
smoke add_ok_split 120 --op add --candidate controls/cuda/add/add_ok_split.cu &
smoke rowsum_cuda_ok 240 --kernelbench controls/torch/rowsum/problem.py controls/torch/rowsum/solution_cuda_ok.py &
wait
smoke_failed=0
for name in add_ok add_ok_split rowsum_cuda_ok; do
  rc=$(cat "$W/smoke/$name.rc")
  verdict=$(python3 -c "import json,sys; print(json.load(open(sys.argv[1])).get('verdict','?'))" "$W/smoke/$name.json" 2>/dev/null || echo "no report")
  if [ "$rc" = 0 ] && [ "$verdict" = PASS ]; then
    echo "smoke $name: PASS ($(grep -m1 -o 'numerics *PASS.*' "$W/smoke/$name.txt" | tr -s ' '))"
  else
    smoke_failed=1
    echo "smoke $name: exit $rc, verdict $verdict (expected exit 0, PASS); kcv said:"
    [ "$rc" = 124 ] && echo "  (killed by the smoke's time limit)"
    tail -n 25 "$W/smoke/$name.txt" | sed 's/^/  | /'
  fi
done
[ "$smoke_failed" = 0 ] || stop "the smoke did not give the expected verdicts: nothing else is run"

echo "== b. sandbox diagnosis (DIAG_BUDGET_S=150), $(elapsed) s"
DIAG_BUDGET_S=150 OUT="$W/diag" timeout -k 10 200 bash scripts/device_sandbox_diag.sh >"$W/diag.txt" 2>&1
echo "diag exit $? after $(elapsed) s"
mkdir -p "$W/diag" && mv "$W/diag.txt" "$W/diag/console.txt"
# Its table (and whatever it printed before its logs): the first 60 lines.
sed -n '1,60p' "$W/diag/console.txt"

LEFT=$(( BUDGET - $(elapsed) ))
[ "$LEFT" -lt 200 ] && LEFT=200
echo "== c. cuda controls (softmax, add, matmul) and torch cuda controls, in parallel, within $LEFT s, $(elapsed) s"
mkdir -p "$W/cuda_controls/reports" "$W/torch_cuda/logs"
timeout -k 10 "$LEFT" python3 scripts/verify_controls.py --backend cuda --kcv build/kcv --only '^(softmax|add|matmul)\.' \
  --jobs 4 --timeout 200 --out "$OUT/cuda_controls.md" --reports "$W/cuda_controls/reports" \
  >"$W/cuda_controls/console.txt" 2>&1 &
pc=$!
timeout -k 10 "$LEFT" python3 scripts/ctest_elsewhere.py "$DUMP" --bin build --jobs 3 --timeout 230 \
  --logs "$W/torch_cuda/logs" >"$OUT/torch_cuda.txt" 2>&1 &
pt=$!
wait $pc; rc_c=$?
wait $pt; rc_t=$?
echo "-- cuda controls: exit $rc_c"
tail -n 40 "$W/cuda_controls/console.txt"
echo "-- torch cuda controls: exit $rc_t"
cat "$OUT/torch_cuda.txt"
[ "$rc_c" = 0 ] && [ "$rc_t" = 0 ] && finish 0
finish 1
}

# Everything printed also goes to summary.txt (a pipe, not a process substitution: the file is
# complete when the script returns).
main 2>&1 | tee "$OUT/summary.txt"
exit "${PIPESTATUS[0]}"
