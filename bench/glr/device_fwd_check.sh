#!/usr/bin/env bash
# One device command (H200, repo root): the split forward after a change to its kernels (issue 19,
# the prep kernel's factored diagonal), checked, then timed, then profiled.
#
#   bench/glr/device_fwd_check.sh BINDIR        (results into $OUT)
#
# BINDIR holds glr_cuda_tests and glr_fwd_time built on the host (carry it). Steps, each under
# `timeout`, each exit code into $OUT/env.txt, each log into $OUT/<step>.txt:
#   1. smoke    glr_cuda_tests on the forward's quick cases (both diagonal forms, a −Inf gate, every
#               dtype, the benchmark's V tiles 64 and 32); a failure stops the script here (exit 1)
#   2. tests    the whole glr_cuda_tests (the backward consumes the prep kernel's A, Qg, Kd, El)
#   3. time     glr_fwd_time 5 split (the split alone at the first five shapes; 90 s)
#   4. ncu      the forward kernels at shape 1 (4,2048,16,128): SpeedOfLight, Occupancy, LaunchStats (60 s)
# Exit 0 when steps 1 and 2 passed (3 and 4 are measurements: their exit codes are in env.txt),
# 1 when a test failed, 2 on a setup error. Knob: GLR_CHECK_TESTS_TIMEOUT (step 2, default 300 s).
set -uo pipefail
t_start=$SECONDS
bin="${1:?usage: bench/glr/device_fwd_check.sh BINDIR (glr_cuda_tests, glr_fwd_time); results into \$OUT}"
out="${OUT:?set OUT to the results folder}"
mkdir -p "$out"
env_txt=$out/env.txt
: > "$env_txt"
note() { echo "[$((SECONDS - t_start))s] $*" | tee -a "$env_txt"; }
export PATH=/usr/local/cuda/bin:$PATH

for f in glr_cuda_tests glr_fwd_time; do
  [ -x "$bin/$f" ] || { note "FAIL: $bin/$f missing or not executable: carry it (build it on the host first)"; exit 2; }
done
{
  echo "date: $(date -u +%FT%TZ)"
  echo "repo: $PWD (include/ $(bench/glr/headers_id.sh include): bench/glr/headers_id.sh; the copy's git metadata is not trusted)"
  echo "bin: $bin"
  nvidia-smi -L 2>&1
  nvidia-smi --query-gpu=driver_version,clocks.max.sm --format=csv,noheader 2>&1
  echo "ncu: $(command -v ncu || echo 'not found')"
} >> "$env_txt"

# step NAME TIMEOUT_S CMD...: runs CMD under timeout, its output into $out/NAME.txt, rc into env.txt.
step() {
  local name=$1 limit=$2
  shift 2
  local t0=$SECONDS
  timeout --kill-after=10 "$limit" "$@" > "$out/$name.txt" 2>&1
  local rc=$?
  note "step $name: rc=$rc ($((SECONDS - t0)) s, limit $limit s): $*"
  return $rc
}

# 1. smoke: fail fast
smoke='GlrCudaFwd.EveryDtypeAndGate:GlrCudaFwd.GateExtremesTakeBothDiagonalForms:GlrCudaFwd.MinusInfGateLeavesEarlierRowsFinite:GlrCudaFwd.TheBenchmarksVTiles'
if ! step smoke 120 "$bin/glr_cuda_tests" --gtest_filter="$smoke"; then
  note "FAIL: smoke failed: the rest did not run (see $out/smoke.txt)"
  tail -40 "$out/smoke.txt"
  exit 1
fi

# 2. the whole suite
step tests "${GLR_CHECK_TESTS_TIMEOUT:-300}" "$bin/glr_cuda_tests"
tests_rc=$?
grep -E '^\[  (PASSED|FAILED) |^\[  SKIPPED|tests ran' "$out/tests.txt" | tee -a "$env_txt"

# 3. times (measurements)
step time 90 "$bin/glr_fwd_time" 5 split
cat "$out/time.txt"

# 4. ncu at shape 1 (prep, walk, out of the split; the FFMA check run is not matched)
if command -v ncu > /dev/null; then
  step ncu 60 ncu --kernel-name regex:'sm90_glr_fwd_' --launch-count 6 --section SpeedOfLight --section Occupancy \
    --section LaunchStats "$bin/glr_fwd_time" 1 split
  grep -E 'sm90_glr_fwd_|Duration|Registers Per|Achieved Occupancy|Theoretical Occupancy|Dynamic Shared|Memory Throughput|Compute \(SM\)' \
    "$out/ncu.txt" | head -80
else
  note "SKIPPED: ncu not found on PATH"
fi

note "done: smoke passed, tests rc=$tests_rc"
[ "$tests_rc" -eq 0 ] && exit 0 || exit 1
