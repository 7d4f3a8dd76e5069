#!/usr/bin/env bash
# One device command (H200, repo root; carry build/kcv, build/kcv-worker and .xfer/fla): glr_torch
# built against the machine's torch and tested, then FLA's chunk_gla beside glr's kernels through
# kcv's 12 gates (issue 18 part 4), at f32 and at bf16, on the KernelBench-format problem
# bench/glr/kcv_fla/problem.py (its own Model as the reference control beside them).
#
#   bench/glr/device_gates.sh [OUTDIR]          (default: $OUT)
#
# Writes OUTDIR/summary.md (the side-by-side gate table and every non-passing gate's evidence),
# OUTDIR/summary.txt (what ran, when, exit codes), OUTDIR/env.txt, OUTDIR/reports/*.json
# (kcv.report/1) and OUTDIR/logs/*.txt. Exits 0 when glr_torch built, its tests passed, the problem's
# own Model passes all 12 gates and glr passes every gate that glr's algorithm in plain torch (the
# chunked control) passes; FLA's verdicts are measurements, not expectations. Everything runs inside GLR_GATES_DEADLINE_S (default 540 s: the device tool stops a
# command at 600 s); a verification still running then is stopped and reported as such.
#
# Timeline (16 cores): glr_torch's build (setup.py, and its JIT path beside it: glr_torch_jit_smoke.py),
# FLA's Triton warm-up (warm_fla.py, 12 processes) and the
# four controls of the problem start at once; glr's two verifications and the tests start when the
# build is done, FLA's two (each as two gate groups side by side) when the warm-up is.
# Knobs: GLR_GATES_DEADLINE_S, GLR_GATES_CALL_TIMEOUT (kcv --timeout, default 180 s: FLA's first
# call at an unwarmed size compiles and autotunes), GLR_TORCH_ARCH, KCV_PYTHON, KCV_THREADS;
# GLR_GATES_GATES=g1,g2 (kcv --gates) and GLR_GATES_BACKEND=cpu to rehearse the script's flow on a
# machine without a GPU (the controls run on the CPU; glr and FLA then fail loudly).
set -uo pipefail
t_start=$SECONDS
out="${1:-${OUT:?pass OUTDIR or set OUT}}"
deadline=${GLR_GATES_DEADLINE_S:-540}
repo=$PWD
kb=bench/glr/kcv_fla
mkdir -p "$out/reports" "$out/logs"
: > "$out/summary.txt"
note() { echo "[$((SECONDS - t_start))s] $*" | tee -a "$out/summary.txt"; }
left() { echo $((deadline - (SECONDS - t_start))); }

export KCV_INCLUDE_DIR=$repo/include KCV_ADAPTERS_DIR=$repo/adapters PATH=/usr/local/cuda/bin:$PATH
export KCV_THREADS=${KCV_THREADS:-2}  # eight verifications share 16 cores
unset TRITON_CACHE_DIR                # solution_fla.py and warm_fla.py pick .xfer/triton-cache
py="${KCV_PYTHON:-$(command -v python3)}"
export PATH=$(dirname "$py"):$PATH   # a venv keeps ninja (torch's extension builds) beside its python
work=$(mktemp -d /tmp/glr-gates.XXXXXX)

# ---- preconditions, loudly ----
problems=()
[ -f "$kb/problem.py" ] || { note "FAIL: run from the repo root ($kb/problem.py not found in $repo)"; exit 2; }
for f in build/kcv build/kcv-worker; do
  [ -x "$f" ] || { note "FAIL: $f missing: carry it (build it on the host first)"; exit 2; }
done
backend=${GLR_GATES_BACKEND:-cuda}
gate_args=(); [ -n "${GLR_GATES_GATES:-}" ] && gate_args=(--gates "$GLR_GATES_GATES")
if [ "$backend" = cuda ] && ! "$py" -c "import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)" > "$out/logs/torch_check.txt" 2>&1; then
  note "FAIL: $py has no CUDA torch: $(tail -1 "$out/logs/torch_check.txt")"; exit 2
fi
have_fla=1
if [ ! -f .xfer/fla/fla/ops/gla/chunk.py ]; then
  have_fla=0; problems+=("FLA not carried (.xfer/fla/fla/ops/gla/chunk.py missing): FLA's verifications did not run")
  note "WARN: ${problems[-1]}"
fi
{
  echo "date: $(date -u +%FT%TZ)"; echo "repo: $repo (include/ $(bench/glr/headers_id.sh include): bench/glr/headers_id.sh; the copy's git metadata is not trusted)"
  nvidia-smi -L 2>&1; nvidia-smi --query-gpu=driver_version --format=csv,noheader 2>&1
  "$py" -c "import torch, triton; print('torch', torch.__version__, 'cuda', torch.version.cuda, '| triton', triton.__version__)" 2>&1
  nvcc --version 2>&1 | tail -1; echo "nproc: $(nproc)"
  echo "fla: $(cat .xfer/fla/FLA_COMMIT 2>/dev/null || echo 'commit unknown')"
} > "$out/env.txt"
cat "$out/env.txt"

verify() {  # NAME PROBLEM SOLUTION [kcv args]: kcv verify --kernelbench, all 12 gates unless said
  local name=$1 p=$2 s=$3 t0=$SECONDS lim=$(( $(left) - 15 )); shift 3
  local args=("${gate_args[@]}" "$@")
  if [ "$lim" -lt 30 ]; then note "$name: not started ($lim s left before the deadline)"; return; fi
  note "$name: kcv verify --kernelbench $p $s"
  PYTHONPATH="$work/lib:$repo/.xfer/fla${PYTHONPATH:+:$PYTHONPATH}" \
    timeout --signal=TERM --kill-after=10 "$lim" ./build/kcv verify --backend "$backend" --python "$py" \
    "${args[@]}" --baseline kernelbench --timeout "${GLR_GATES_CALL_TIMEOUT:-180}" --json "$out/reports/$name.json" \
    --kernelbench "$p" "$s" > "$out/logs/$name.txt" 2>&1
  local rc=$? what
  case $rc in 0) what="every gate run PASS" ;; 1) what="some gate did not pass" ;;
    124|137) what="STOPPED at the deadline" ;; *) what="setup error: $(tail -1 "$out/logs/$name.txt")" ;; esac
  note "$name: exit $rc ($what) after $((SECONDS - t0)) s"
  echo "$rc" > "$out/logs/$name.rc"
}

# ---- glr: build glr_torch, then its tests and glr's two verifications ----
(
  t0=$SECONDS
  note "glr_torch: building (glr/python/glr_torch/setup.py, GLR_TORCH_ARCH=${GLR_TORCH_ARCH:-90a})"
  if (cd glr/python/glr_torch && MAX_JOBS=$(nproc) GLR_TORCH_ARCH=${GLR_TORCH_ARCH:-90a} timeout 300 "$py" setup.py build \
        --build-base "$work/build" --build-lib "$work/lib") > "$out/logs/glr_torch_build.txt" 2>&1 &&
     ls "$work"/lib/glr_torch/_C*.so > /dev/null 2>&1; then
    note "glr_torch: built in $((SECONDS - t0)) s ($(ls "$work"/lib/glr_torch/_C*.so))"
    echo 0 > "$out/logs/glr_torch_build.rc"
    (
      t1=$SECONDS
      PYTHONPATH="$work/lib" GLR_TORCH_REQUIRE_CUDA=1 timeout $(( $(left) - 10 )) "$py" tests/python/test_glr_torch.py -v \
        > "$out/logs/test_glr_torch.txt" 2>&1
      rc=$?; echo $rc > "$out/logs/test_glr_torch.rc"
      note "tests/python/test_glr_torch.py: exit $rc after $((SECONDS - t1)) s: $(grep -E '^(OK|FAILED|Ran )' "$out/logs/test_glr_torch.txt" | tr '\n' ' ')"
    ) &
    verify glr_f32 $kb/problem.py $kb/solution_glr.py &
    verify glr_bf16 $kb/problem_bf16.py $kb/solution_glr.py &
    wait
  else
    echo 1 > "$out/logs/glr_torch_build.rc"
    note "FAIL: glr_torch did not build after $((SECONDS - t0)) s; glr's verifications and tests did not run:"
    { grep -E "error|Error" "$out/logs/glr_torch_build.txt" | head -8; echo "..."; tail -4 "$out/logs/glr_torch_build.txt"; } \
      | tee -a "$out/summary.txt"
  fi
) &

# ---- glr_torch's JIT path (a checkout without installing), beside the setup.py build ----
(
  t0=$SECONDS
  env -u PYTHONPATH TORCH_EXTENSIONS_DIR="$work/jit" MAX_JOBS=4 timeout 360 "$py" bench/glr/glr_torch_jit_smoke.py \
    > "$out/logs/glr_torch_jit.txt" 2>&1
  rc=$?; echo $rc > "$out/logs/glr_torch_jit.rc"
  note "glr_torch JIT path (bench/glr/glr_torch_jit_smoke.py): exit $rc after $((SECONDS - t0)) s: $(tail -1 "$out/logs/glr_torch_jit.txt")"
) &

# ---- FLA: warm Triton's cache at the gates' sizes, then FLA's two verifications ----
if [ $have_fla = 1 ]; then
  (
    t0=$SECONDS
    for i in $(seq 0 11); do  # Triton compiles in one thread per process: 12 processes, 2-3 points each
      PYTHONPATH="$repo/.xfer/fla" timeout 240 "$py" $kb/warm_fla.py "$i" 12 > "$out/logs/warm_fla_$i.txt" 2>&1 &
    done
    wait
    note "FLA warm-up: done after $((SECONDS - t0)) s ($(cat "$out"/logs/warm_fla_*.txt | grep -c '^warm_fla') of 28 points; logs/warm_fla_*.txt)"
    grep -h -E "Error|error" "$out"/logs/warm_fla_*.txt | sort -u | head -5 | tee -a "$out/summary.txt"
    # NOTES: each FLA verification in two gate groups side by side, so that a group cut at the
    # deadline leaves the other's report (summarize.py merges NAME.part*.json)
    for dt in f32 bf16; do
      p=$kb/problem.py; [ $dt = bf16 ] && p=$kb/problem_bf16.py
      if [ -n "${GLR_GATES_GATES:-}" ]; then
        verify fla_$dt $p $kb/solution_fla.py &
      else
        verify fla_$dt.part1 $p $kb/solution_fla.py --gates numerics,shapes,values,nonfinite,bounds,inputs_intact &
        verify fla_$dt.part2 $p $kb/solution_fla.py --gates coverage,determinism,layout,stateless,concurrency,sanitizer &
      fi
    done
    wait
  ) &
fi

# ---- controls of the problem itself: its own Model as its candidate (must pass all 12 gates), and
# glr's chunk-64 algorithm in plain torch (solution_chunked_torch.py): a correct chunked algorithm,
# so a gate it fails is one this front door cannot judge chunked kernels by ----
verify reference_f32 $kb/problem.py $kb/problem.py &
verify reference_bf16 $kb/problem_bf16.py $kb/problem_bf16.py &
verify chunked_f32 $kb/problem.py $kb/solution_chunked_torch.py &
verify chunked_bf16 $kb/problem_bf16.py $kb/solution_chunked_torch.py &
wait

# ---- the summary ----
names="reference_f32 chunked_f32 glr_f32 fla_f32 reference_bf16 chunked_bf16 glr_bf16 fla_bf16"
{
  echo "# glr and FLA chunk_gla through kcv's 12 gates (bench/glr/device_gates.sh)"
  echo; echo '```'; cat "$out/env.txt"; echo '```'; echo
  echo "Problem: $kb/problem.py (f32) and problem_bf16.py; solutions solution_glr.py, solution_fla.py;"
  echo "reference_* = the problem's own Model as its candidate; chunked_* = glr's chunk-64 algorithm in plain torch"
  echo "(a gate it fails is one this front door cannot judge chunked kernels by: bench/glr/kcv_fla/README.md)."
  echo "Cell: verdict, gate seconds, worst error/bound."
  echo
  "$py" $kb/summarize.py "$out/reports" "$out/logs" $names
  echo; echo '## Run'; echo '```'; cat "$out/summary.txt"; echo '```'
} > "$out/summary.md" 2>&1

for n in reference_f32 reference_bf16; do
  [ "$(cat "$out/logs/$n.rc" 2>/dev/null)" = 0 ] || problems+=("$n did not pass all 12 gates (rc $(cat "$out/logs/$n.rc" 2>/dev/null || echo none))")
done
# glr is expected to pass every gate the chunked control passes, at the same dtype
while IFS= read -r line; do [ -n "$line" ] && problems+=("$line"); done < <("$py" - "$out/reports" "$kb" <<'PY'
import os, sys
sys.path.insert(0, sys.argv[2])
from summarize import load
def gates(name):
    r = load(sys.argv[1], name)
    return None if r is None else {g["id"]: g["verdict"] for g in r["gates"]}
for dt in ("f32", "bf16"):
    glr, ctl = gates("glr_" + dt), gates("chunked_" + dt)
    if glr is None:
        print(f"glr_{dt}: no report")
        continue
    for gid, v in glr.items():
        if v != "PASS" and (ctl is None or ctl.get(gid) == "PASS"):
            print(f"glr_{dt}: {gid} {v}" + ("" if ctl is None else " where the chunked control passes"))
PY
)
[ "$(cat "$out/logs/glr_torch_build.rc" 2>/dev/null)" = 0 ] || problems+=("glr_torch did not build (logs/glr_torch_build.txt)")
[ "$(cat "$out/logs/test_glr_torch.rc" 2>/dev/null)" = 0 ] || problems+=("tests/python/test_glr_torch.py did not pass (logs/test_glr_torch.txt)")
[ "$(cat "$out/logs/glr_torch_jit.rc" 2>/dev/null)" = 0 ] || problems+=("glr_torch's JIT path failed (logs/glr_torch_jit.txt)")
cat "$out/summary.md"
rm -rf "$work"
if [ ${#problems[@]} -eq 0 ]; then
  note "RESULT: OK (glr_torch built and tested; the reference controls pass all 12 gates; glr passes every gate the chunked control passes) in $((SECONDS - t_start)) s"
  exit 0
fi
note "RESULT: ${#problems[@]} problem(s):"
for p in "${problems[@]}"; do note "  - $p"; done
exit 1
