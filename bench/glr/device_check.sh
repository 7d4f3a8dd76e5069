#!/usr/bin/env bash
# One device command (H200, repo root): glr's CUDA kernels as they are in this tree, checked,
# timed, profiled, then judged by kcv's 12 gates — the run that must follow any kernel change
# (issues 18, 19). Binaries built on the host and carried in BINDIR: glr_cuda_tests, glr_fwd_time,
# glr_bwd_time, kcv, kcv-worker (cmake --build build --target glr_cuda_tests glr_fwd_time glr_bwd_time kcv kcv-worker),
# and the build's glr_defines.txt (the kernel switches it was built with, GLR_DEFINES: the gates use the same),
# and optionally glr_tma_check (the sm100 backward's TMA loads, run on this Hopper GPU).
#
#   bench/glr/device_check.sh BINDIR           (results into $OUT)
#
# Steps, each under `timeout`, every exit code into $OUT/env.txt, all inside GLR_CHECK_DEADLINE_S
# (default 540 s; the device tool stops a command at 600 s, and at the session's budget: set it
# below what `status` says is left):
#   1. smoke   glr_cuda_tests on a few quick split-kernel cases; a failure stops everything here
#   2. tests   the whole glr_cuda_tests
#   3. times   glr_fwd_time 7 split, glr_bwd_time --no-ffma 7 (inputs filled on the device)
#   4. ncu     the forward's and the backward's kernels at (4,2048,16,128), or at the rows GLR_NCU_ROWS
#              lists (timing.cuh's shapes, 1-based: "3" is (2,16384,16,128))
#   5. gates   scripts/verify_controls.py --only "$GLR_CHECK_ONLY" (default: every glr control,
#              contracts and negatives) with what is left of the deadline
#   stalls     (only when named) why the forward's kernels wait, at the rows GLR_NCU_ROWS lists
#              (default 3, (2,16384,16,128)): ncu's warp-state, scheduler, instruction-mix, compute
#              and memory sections for prep, walk and out into stalls.txt, and prep's and walk's
#              per-SASS-instruction stall samples (--page source, CSV) into rest.tgz: what
#              limits the two kernels that are 70% of the forward (issue 19)
# GLR_CHECK_STEPS picks steps 2-5 (default "tests times ncu gates"; the smoke always runs): the 31
# glr controls alone take about 360 s at 16 jobs, so a session runs "tests gates" in one call and
# "times ncu" in another.
# Whatever ran is packed before the deadline: at most 8 files come back (env.txt, tests.txt,
# fwd_time.md, bwd_time.md, controls.md, ncu.txt, stalls.txt, rest.tgz). Exit 0 when the smoke, the tests and
# every control were as expected; 1 otherwise; 2 on a setup error.
set -uo pipefail
t0=$SECONDS
bin="${1:?usage: bench/glr/device_check.sh BINDIR}"
out="${OUT:?set OUT to the results folder}"
deadline=${GLR_CHECK_DEADLINE_S:-540}
only=${GLR_CHECK_ONLY:-^glr_}
steps=" ${GLR_CHECK_STEPS:-tests times ncu gates} "
want() { [[ "$steps" == *" $1 "* ]]; }
# The gates compile the glr controls at run time from KCV_INCLUDE_DIR's headers: a run whose kernels
# differ from this tree's (binaries built from another branch) sets it to that branch's include/.
export KCV_INCLUDE_DIR=${KCV_INCLUDE_DIR:-$PWD/include} KCV_ADAPTERS_DIR=$PWD/adapters PATH=/usr/local/cuda/bin:$PATH
export KCV_PYTHON=${KCV_PYTHON:-$(command -v python3)}
mkdir -p "$out/more"
note() { echo "[$((SECONDS - t0))s] $*" >> "$out/env.txt"; }
left() { echo $((deadline - 20 - (SECONDS - t0))); }
pack() { (cd "$out" && tar czf rest.tgz more && rm -rf more); }
step() {  # step NAME LIMIT FILE CMD...: CMD under timeout (LIMIT capped by the deadline), output to FILE
  local name=$1 limit=$2 file=$3; shift 3
  local l; l=$(left); [ "$limit" -lt "$l" ] || limit=$l
  if [ "$limit" -le 5 ]; then note "$name: not run (deadline)"; return 124; fi
  timeout --kill-after=5 "$limit" "$@" > "$file" 2>&1; local rc=$?
  note "$name rc=$rc (limit $limit s)"; return $rc
}
# What the chosen steps run (the smoke always: glr_cuda_tests): the timers only for times, ncu and
# stalls, kcv only for gates (session 35 lost a device start to a gates-only BINDIR without timers).
need=(glr_cuda_tests)
if want times || want ncu || want stalls; then need+=(glr_fwd_time glr_bwd_time); fi
if want gates; then need+=(kcv kcv-worker); fi
for f in "${need[@]}"; do
  [ -x "$bin/$f" ] || { note "FAIL: $bin/$f missing: build it on the host and carry $bin"; pack; exit 2; }
done
# The kernel switches the binaries were built with (GLR_DEFINES; the build writes glr_defines.txt beside
# them): the gates must judge those same kernels, so kcv compiles the controls against a copy of the
# headers whose switches.cuh defines them (bench/glr/include_with_defines.sh).
[ -f "$bin/glr_defines.txt" ] || { note "FAIL: $bin/glr_defines.txt missing: carry it with the binaries (the build writes it)"; pack; exit 2; }
mapfile -t defines < <(grep -v '^[[:space:]]*$' "$bin/glr_defines.txt")
if [ ${#defines[@]} -gt 0 ]; then
  overlay=$(mktemp -d)/include
  bench/glr/include_with_defines.sh "$KCV_INCLUDE_DIR" "$overlay" "${defines[@]}" >> "$out/env.txt" 2>&1 ||
    { note "FAIL: the headers with ${defines[*]} could not be made"; pack; exit 2; }
  export KCV_INCLUDE_DIR=$overlay
  note "binaries built with ${defines[*]}: the controls compile against $overlay"
fi
# The tree's headers by content (bench/glr/headers_id.sh): the device copy's git metadata may name an
# old commit, so no `git log` here; compare with the same script on the host.
{ nvidia-smi -L; echo "include/ $(bench/glr/headers_id.sh include)"; echo "deadline ${deadline}s, controls '$only', headers $KCV_INCLUDE_DIR"; } >> "$out/env.txt" 2>&1
smoke='GlrCudaBwdSplit.KTiles:GlrCudaBwdSplit.NegInfGateMidBlockLeavesEarlierRowsFinite:GlrCudaFwd.EveryDtypeAndGate:GlrCudaFwd.MinusInfGateLeavesEarlierRowsFinite'
if ! step smoke 120 "$out/more/smoke.txt" "$bin/glr_cuda_tests" --gtest_filter="$smoke"; then
  note "smoke failed: nothing else runs"; cp "$out/more/smoke.txt" "$out/tests.txt"; pack; exit 1
fi
tests=0; controls=0
if want tests; then
  step tests 180 "$out/tests.txt" "$bin/glr_cuda_tests"; tests=$?
  # The sm100 backward's TMA half on this Hopper GPU (ctest tmem.tma_on_gpu), when carried.
  if [ -x "$bin/glr_tma_check" ]; then
    step tma 60 "$out/more/tma_check.txt" "$bin/glr_tma_check" || tests=1
    cat "$out/more/tma_check.txt" >> "$out/tests.txt"
  fi
fi
if want times; then
  step fwd_time 90 "$out/fwd_time.md" "$bin/glr_fwd_time" 7 split
  step bwd_time 90 "$out/bwd_time.md" "$bin/glr_bwd_time" --no-ffma 7
fi
if want ncu; then
  # GLR_NCU_ROWS: the shape rows profiled (timing.cuh's kShapes, 1-based; default the first).
  export GLR_TIME_ROWS=${GLR_NCU_ROWS:-1}
  note "ncu rows $GLR_TIME_ROWS"
  step ncu_fwd 60 "$out/ncu.txt" ncu --kernel-name regex:'sm90_glr_fwd_' --launch-count 6 --section SpeedOfLight \
    --section Occupancy --section LaunchStats "$bin/glr_fwd_time" 7 split
  step ncu_bwd 60 "$out/more/ncu_bwd.txt" ncu --kernel-name regex:'sm90_glr_(fwd_prep|fwd_walk|bwd_)' \
    --launch-count 8 --section SpeedOfLight --section Occupancy --section LaunchStats "$bin/glr_bwd_time" --no-ffma 7
  unset GLR_TIME_ROWS
  cat "$out/more/ncu_bwd.txt" >> "$out/ncu.txt" 2>/dev/null
fi
if want stalls; then
  export GLR_TIME_ROWS=${GLR_NCU_ROWS:-3}
  # GLR_STALLS: fwd (default) the forward's prep, walk and out, per-instruction for prep and walk;
  # bwd the backward's dstate, dqk and dv (the forward's kernels it reruns left out), per-instruction
  # for dqk and dstate.
  if [ "${GLR_STALLS:-fwd}" = bwd ]; then
    kernels='sm90_glr_bwd_(dstate|dqk|dv)'; sources="bwd_dqk bwd_dstate"; timer=("$bin/glr_bwd_time" --no-ffma 7)
  else
    kernels='sm90_glr_fwd_(prep|walk|out)'; sources="fwd_prep fwd_walk"; timer=("$bin/glr_fwd_time" 7 split)
  fi
  note "ncu stalls ${GLR_STALLS:-fwd} rows $GLR_TIME_ROWS"
  step ncu_stalls 150 "$out/stalls.txt" ncu --kernel-name regex:"$kernels" --launch-count 3 \
    --section WarpStateStats --section SchedulerStats --section InstructionStats --section ComputeWorkloadAnalysis \
    --section MemoryWorkloadAnalysis --section SpeedOfLight "${timer[@]}"
  for k in $sources; do
    # Collected into a report first, then printed from it: a print option this ncu lacks costs
    # only the print (each form tried in turn), not the profile.
    step "ncu_source_$k" 120 "$out/more/source_$k.log" ncu --kernel-name regex:"sm90_glr_$k" --launch-count 1 \
      --section WarpStateStats --section SourceCounters -f -o "/tmp/source_$k" "${timer[@]}"
    step "ncu_source_${k}_sass" 60 "$out/more/source_$k.csv" ncu --import "/tmp/source_$k.ncu-rep" --page source \
      --print-source sass --csv ||
      step "ncu_source_${k}_plain" 60 "$out/more/source_$k.csv" ncu --import "/tmp/source_$k.ncu-rep" --page source --csv ||
      step "ncu_source_${k}_details" 60 "$out/more/source_$k.csv" ncu --import "/tmp/source_$k.ncu-rep" --page details \
        --print-details all --csv
  done
  unset GLR_TIME_ROWS
fi
if want gates; then
  l=$(left)
  # --share-builds: glr's 39 controls name 23 sources (a source serves its vector and scalar contract),
  # each built once. Each source compiles only its contract's dtype and direction (glr/cuda/built.hpp):
  # the build of all 161 kernels was ~150 s of a control's ~215 s with 16 at once (session 29); on this
  # host's 2 cores a bf16 backward source took 52 s and a bf16 forward one 30 s against 151 s for all.
  KCV_THREADS=1 step controls "$l" "$out/more/controls.log" python3 scripts/verify_controls.py --kcv "$bin/kcv" \
    --backend cuda --only "$only" --jobs 16 --timeout $((l > 30 ? l - 10 : 20)) --reports "$out/more/reports" \
    --share-builds --out "$out/controls.md"
  controls=$?
fi
pack
[ $tests -eq 0 ] && [ $controls -eq 0 ] && exit 0 || exit 1
