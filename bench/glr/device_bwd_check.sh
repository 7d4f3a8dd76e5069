#!/usr/bin/env bash
# One device command (H200, repo root) for the split backward's K-tiled kernels (wip-bwd2): a
# fail-fast smoke, the whole glr_cuda_tests, the timing and ncu of the backward's kernels.
#
#   bench/glr/device_bwd_check.sh BINDIR      (BINDIR holds glr_cuda_tests and glr_bwd_time, built on
#                                              the host: cmake --build build --target glr_cuda_tests glr_bwd_time)
#
# Results into $OUT: env.txt (machine, binaries, each step's command and exit code), smoke.txt,
# tests.txt, time.txt (glr_bwd_time's markdown table), ncu.txt. Steps, each under `timeout`:
#   1. smoke: glr_cuda_tests --gtest_filter=GlrCudaBwdSplit.KTiles (the new K-tile boundaries, both
#      gates); stops here when it fails (exit 1): nothing else is worth the device time then.
#   2. glr_cuda_tests, every test.
#   3. glr_bwd_time --no-ffma 3: the split backward's median ms at the first three issue-19 shapes.
#   4. ncu of the backward's kernels at shape 1 (SpeedOfLight, Occupancy, LaunchStats).
# Exits 0 when the smoke and the whole suite passed (the timing and ncu are measurements; their
# exit codes are recorded, not judged). Knobs: BWD_SMOKE_TIMEOUT (120 s), BWD_TESTS_TIMEOUT (300 s),
# BWD_TIME_TIMEOUT (90 s), BWD_NCU_TIMEOUT (60 s).
set -uo pipefail
bin="${1:?usage: bench/glr/device_bwd_check.sh BINDIR (holding glr_cuda_tests and glr_bwd_time)}"
out="${OUT:?set OUT to the results directory}"
mkdir -p "$out"
env_txt="$out/env.txt"
t_start=$SECONDS
note() { echo "[$((SECONDS - t_start))s] $*" | tee -a "$env_txt"; }

{
  echo "date: $(date -u +%FT%TZ)"
  echo "repo: $PWD (include/ $(bench/glr/headers_id.sh include): bench/glr/headers_id.sh; the copy's git metadata is not trusted)"
  nvidia-smi -L 2>&1
  nvidia-smi --query-gpu=driver_version,clocks.max.sm --format=csv,noheader 2>&1
  echo "nproc: $(nproc)"
  ls -l "$bin" 2>&1
} > "$env_txt"

for f in glr_cuda_tests glr_bwd_time; do
  [ -x "$bin/$f" ] || { note "FAIL: $bin/$f missing or not executable"; exit 2; }
done
ncu_bin=$(command -v ncu || ls /usr/local/cuda/bin/ncu 2>/dev/null || true)

step() {  # NAME TIMEOUT_S LOGFILE COMMAND...: runs it under timeout, notes the command and its exit code
  local name=$1 lim=$2 log=$3 t0=$SECONDS
  shift 3
  note "$name: $* (timeout ${lim} s)"
  timeout --signal=TERM --kill-after=10 "$lim" "$@" > "$log" 2>&1
  local rc=$?
  case $rc in 124 | 137) note "$name: rc=$rc (TIMEOUT after $((SECONDS - t0)) s)" ;;
    *) note "$name: rc=$rc after $((SECONDS - t0)) s" ;; esac
  return $rc
}

step smoke "${BWD_SMOKE_TIMEOUT:-120}" "$out/smoke.txt" \
  "$bin/glr_cuda_tests" --gtest_filter='GlrCudaBwdSplit.KTiles'
smoke_rc=$?
tail -5 "$out/smoke.txt"
if [ "$smoke_rc" -ne 0 ]; then
  note "STOP: the smoke failed (rc=$smoke_rc); the first failures:"
  grep -m 20 -E "Failure|FAILED|error|Expected|Which is" "$out/smoke.txt" | tee -a "$env_txt"
  exit 1
fi

step tests "${BWD_TESTS_TIMEOUT:-300}" "$out/tests.txt" "$bin/glr_cuda_tests"
tests_rc=$?
grep -E "^\[  (PASSED|FAILED|  SKIPPED) |^\[  FAILED  \]" "$out/tests.txt" | tee -a "$env_txt"

step time "${BWD_TIME_TIMEOUT:-90}" "$out/time.txt" "$bin/glr_bwd_time" --no-ffma 3
cat "$out/time.txt"

if [ -n "$ncu_bin" ]; then
  step ncu "${BWD_NCU_TIMEOUT:-60}" "$out/ncu.txt" "$ncu_bin" --kernel-name regex:'sm90_glr_(fwd_prep|fwd_walk|bwd_)' \
    --launch-count 8 --section SpeedOfLight --section Occupancy --section LaunchStats "$bin/glr_bwd_time" --no-ffma 1
  grep -E "sm90_glr_|Duration|Registers Per Thread|Dynamic Shared Memory Per Block|Achieved Occupancy|Theoretical Occupancy|Block Limit (Registers|Shared Mem)" \
    "$out/ncu.txt" | tee "$out/ncu_summary.txt"
else
  note "ncu: SKIPPED (no ncu on PATH or in /usr/local/cuda/bin)"
fi

note "done: smoke rc=0, tests rc=$tests_rc"
[ "$tests_rc" -eq 0 ]
