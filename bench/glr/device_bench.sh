#!/usr/bin/env bash
# One device command (H200, repo root; carry .xfer/fla): glr against FLA chunk_gla, verified then
# timed, by bench/glr/bench_glr_vs_fla.py (issue 19, deliverables 1-3).
#
#   bench/glr/device_bench.sh [OUTDIR] [--prepare] [BENCH ARGS...]     (OUTDIR default: $OUT)
#     e.g. bench/glr/device_bench.sh                   the default run (7 shapes x 3 variants)
#          bench/glr/device_bench.sh --quick           vector gate without h0/hT only
#          bench/glr/device_bench.sh --shapes 1,2      a subset (bench_glr_vs_fla.py --list)
#          bench/glr/device_bench.sh --dtype f32       f32 q,k,v,do (issue 19 deliverable 4): glr's
#                                                      FFMA path against FLA's TF32, each one's accuracy
#          bench/glr/device_bench.sh --prepare         build and compile only (a fresh machine's
#                                                      first call; the next call then benches)
#
# Steps: glr_torch built with glr/python/glr_torch/setup.py against the machine's torch into
# build/glr_torch_bench/ (git-ignored, so a warm machine keeps it between calls and ninja rebuilds
# only what changed), as device_gates.sh builds it; at the same time FLA's Triton kernels compiled
# for the selected shapes by nproc-2 processes (bench_glr_vs_fla.py --warm-fla: every autotune
# configuration, nothing tuned is kept) into build/triton-cache-bench/, and FLA chunk_simple_gla's
# refusal recorded (--probe-simple-gla). Then the benchmark, one child per shape, inside what is
# left of GLR_BENCH_DEADLINE_S (default 570 s: the device tool stops a command at 600 s).
# FLA comes from .xfer/fla (a fetched copy, git-ignored, carried; never committed), imported as
# bench/glr/kcv_fla/solution_fla.py does. GLR_DEFINES=GLR_NEXT (a ;-list of the kernel switches of
# include/glr/cuda/sm90/switches.cuh) builds glr_torch with them (glr_torch.switches); the JSON's
# glr_defines and the markdown's header record them.
#
# Writes OUTDIR/glr-vs-fla.json and OUTDIR/glr-vs-fla.md (--dtype f32: glr-vs-fla-f32.json and
# glr-vs-fla-f32.md; copy both to bench/results/), OUTDIR/env.txt, OUTDIR/summary.txt and
# OUTDIR/logs/. Exit 0 when the benchmark ran (its table says what passed, failed or was not
# timed), 1 when glr_torch did not build or the benchmark failed, 2 on a setup error.
set -uo pipefail
t_start=$SECONDS
out="${OUT:-}"
if [ $# -gt 0 ] && [ "${1#-}" = "$1" ]; then out=$1; shift; fi
[ -n "$out" ] || { echo "device_bench.sh: pass OUTDIR or set OUT" >&2; exit 2; }
prepare=0
args=()
dtype=bf16   # the benchmark's default; read from the arguments for the warm-up key and the file names
prev=""
for a in "$@"; do
  if [ "$a" = "--prepare" ]; then prepare=1; else args+=("$a"); fi
  case "$a" in --dtype=*) dtype=${a#--dtype=} ;; esac
  [ "$prev" = "--dtype" ] && dtype=$a
  prev=$a
done
case "$dtype" in
  bf16) stem=glr-vs-fla ;;
  f32) stem=glr-vs-fla-f32 ;;
  *) echo "device_bench.sh: --dtype $dtype: choose bf16 or f32" >&2; exit 2 ;;
esac
deadline=${GLR_BENCH_DEADLINE_S:-570}
repo=$PWD
bench=bench/glr/bench_glr_vs_fla.py
mkdir -p "$out/logs"
: > "$out/summary.txt"
note() { echo "[$((SECONDS - t_start))s] $*" | tee -a "$out/summary.txt"; }
left() { echo $((deadline - (SECONDS - t_start))); }

[ -f "$bench" ] || { note "FAIL: run from the repo root ($bench not found in $repo)"; exit 2; }
export PATH=/usr/local/cuda/bin:$PATH
py="${GLR_PYTHON:-${KCV_PYTHON:-$(command -v python3)}}"
export PATH=$(dirname "$py"):$PATH   # a venv keeps ninja (torch's extension builds) beside its python
if ! "$py" -c "import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)" > "$out/logs/torch_check.txt" 2>&1; then
  note "FAIL: $py has no CUDA torch: $(tail -1 "$out/logs/torch_check.txt")"; exit 2
fi
fla_path=""
if [ -f .xfer/fla/fla/ops/gla/chunk.py ]; then
  fla_path=$repo/.xfer/fla
  [ -s .xfer/fla/FLA_COMMIT ] ||
    note "WARN: .xfer/fla has no FLA_COMMIT: FLA runs but its commit goes unrecorded (stage it with bench/glr/stage_fla.sh)"
else
  note "WARN: FLA not carried (.xfer/fla/fla/ops/gla/chunk.py missing): FLA will be reported 'not available'"
fi
export GLR_BENCH_NO_JIT=1   # glr_torch comes from the build below; a child never compiles it
export TRITON_CACHE_DIR=$repo/build/triton-cache-bench   # this benchmark's own: nothing tuned elsewhere
mkdir -p "$TRITON_CACHE_DIR"
{
  echo "date: $(date -u +%FT%TZ)"; echo "repo: $repo (include/ $(bench/glr/headers_id.sh include): bench/glr/headers_id.sh; the copy's git metadata is not trusted)"
  nvidia-smi -L 2>&1; nvidia-smi --query-gpu=driver_version,clocks.sm,clocks.max.sm,power.limit,temperature.gpu --format=csv 2>&1
  "$py" -c "import torch, triton; print('torch', torch.__version__, 'cuda', torch.version.cuda, '| triton', triton.__version__)" 2>&1
  nvcc --version 2>&1 | tail -1; echo "nproc: $(nproc)"
  if [ -z "$fla_path" ]; then echo "fla: not carried"
  else echo "fla: $(cat .xfer/fla/FLA_COMMIT 2>/dev/null || echo 'carried, commit unknown (no FLA_COMMIT)')"; fi
  echo "bench args: ${args[*]:-(default)}; dtype $dtype"
} > "$out/env.txt"
cat "$out/env.txt"

# ---- glr_torch (build/glr_torch_bench/lib), FLA's compile warm-up and the chunk_simple_gla probe, at once ----
lib=$repo/build/glr_torch_bench/lib
(
  t0=$SECONDS
  note "glr_torch: building (glr/python/glr_torch/setup.py, GLR_TORCH_ARCH=${GLR_TORCH_ARCH:-90a}, kernel switches GLR_DEFINES='${GLR_DEFINES:-}')"
  if (cd glr/python/glr_torch && MAX_JOBS=$(nproc) GLR_TORCH_ARCH=${GLR_TORCH_ARCH:-90a} \
        timeout $(( $(left) > 120 ? $(left) - 60 : 60 )) "$py" setup.py build --build-base "$repo/build/glr_torch_bench/tmp" \
        --build-lib "$lib") > "$out/logs/glr_torch_build.txt" 2>&1 && ls "$lib"/glr_torch/_C*.so > /dev/null 2>&1; then
    note "glr_torch: built in $((SECONDS - t0)) s ($(ls "$lib"/glr_torch/_C*.so))"
    echo 0 > "$out/logs/glr_torch_build.rc"
  else
    echo 1 > "$out/logs/glr_torch_build.rc"
    note "FAIL: glr_torch did not build after $((SECONDS - t0)) s:"
    grep -E "error|Error" "$out/logs/glr_torch_build.txt" | head -8 | tee -a "$out/summary.txt"
  fi
) &
# NOTES: the mark says which kernels the cache holds: Triton compiles per dtype, so the dtype is in
# its name (and in the arguments hashed); --warm-fla gets the same arguments, --dtype included, and
# compiles FLA's kernels for that dtype.
warm_mark="$TRITON_CACHE_DIR/.warm-$dtype-$(echo "${args[*]:-default}" | md5sum | cut -c1-12)"
if [ -n "$fla_path" ] && [ -f "$warm_mark" ]; then
  note "FLA compile warm-up: already done on this machine for these arguments, $dtype ($warm_mark)"
  PYTHONPATH="$fla_path" timeout 120 "$py" $bench --probe-simple-gla "$out/simple_gla_probe.json" \
    > "$out/logs/probe_simple_gla.txt" 2>&1 &
elif [ -n "$fla_path" ]; then
  (
    t0=$SECONDS
    n=$(( $(nproc) > 4 ? $(nproc) - 2 : 2 ))
    # NOTES: capped so that the benchmark keeps most of the call; what is not compiled by then is
    # compiled by the children (slower). --prepare gives it the whole call.
    if [ $prepare = 1 ]; then wl=$(( $(left) - 30 )); else wl=$(( $(left) - 330 )); [ $wl -gt 240 ] && wl=240; fi
    [ $wl -lt 30 ] && wl=30
    for i in $(seq 0 $((n - 1))); do
      PYTHONPATH="$fla_path" timeout $wl "$py" $bench --warm-fla $i $n "${args[@]}" \
        > "$out/logs/warm_fla_$i.txt" 2>&1 &
    done
    PYTHONPATH="$fla_path" timeout 120 "$py" $bench --probe-simple-gla "$out/simple_gla_probe.json" \
      > "$out/logs/probe_simple_gla.txt" 2>&1 &
    wait
    note "FLA compile warm-up ($dtype, $n processes): done after $((SECONDS - t0)) s; $(cat "$out"/logs/warm_fla_*.txt | grep -c error) error line(s)"
    [ "$(cat "$out"/logs/warm_fla_*.txt | grep -c ': done in')" = "$n" ] && touch "$warm_mark"
    grep -h "error" "$out"/logs/warm_fla_*.txt | sort -u | head -4 | tee -a "$out/summary.txt"
    note "chunk_simple_gla probe: $(cat "$out/simple_gla_probe.json" 2>/dev/null || echo 'no result')"
  ) &
fi
wait
if [ "$(cat "$out/logs/glr_torch_build.rc" 2>/dev/null)" != 0 ]; then
  note "glr_torch did not build: the benchmark runs FLA alone (glr 'not available')"
fi
if [ $prepare = 1 ]; then
  note "RESULT: prepared (glr_torch build rc $(cat "$out/logs/glr_torch_build.rc"), Triton cache $TRITON_CACHE_DIR) in $((SECONDS - t_start)) s"
  exit 0
fi

# ---- the benchmark ----
budget=$(( $(left) - 10 ))
if [ $budget -lt 30 ]; then
  note "RESULT: no time left for the benchmark ($budget s): run 'device_bench.sh --prepare' and then the benchmark in a second call"
  exit 1
fi
probe=()
[ -f "$out/simple_gla_probe.json" ] && probe=(--simple-gla-probe "$out/simple_gla_probe.json")
note "benchmark: $bench --out $out ${args[*]} (deadline $budget s)"
PYTHONPATH="$lib${fla_path:+:$fla_path}${PYTHONPATH:+:$PYTHONPATH}" \
  timeout --signal=TERM --kill-after=10 $(( budget + 5 )) "$py" $bench --out "$out" --deadline "$budget" \
  "${probe[@]}" \
  --command "bench/glr/device_bench.sh ${args[*]}" "${args[@]}" 2>&1 | tee "$out/logs/bench.txt"
rc=${PIPESTATUS[0]}
note "benchmark: exit $rc"
if [ "$rc" = 0 ] && [ "$(cat "$out/logs/glr_torch_build.rc")" = 0 ]; then
  note "RESULT: OK in $((SECONDS - t_start)) s: $out/$stem.json and $stem.md (copy both to bench/results/)"
  exit 0
fi
note "RESULT: problem(s) ($stem): benchmark exit $rc, glr_torch build rc $(cat "$out/logs/glr_torch_build.rc") in $((SECONDS - t_start)) s"
exit 1
