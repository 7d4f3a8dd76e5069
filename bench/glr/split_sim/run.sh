#!/usr/bin/env bash
# Host simulation of the split backward (glr_bwd_split.cuh with the forward split's prep and walk):
# the real kernels and launchers, compiled by g++ with the CUDA constructs mocked (sim.hpp: one CTA
# at a time, its 256 threads as fibers run phase by phase between barriers, WMMA tiles computed
# whole by lane 0, cp.async a synchronous copy, shared memory and the workspace filled with NaN
# first), against glr::cpu::bwd_slice<double>, twice: threads in ascending and in descending order
# within each phase, whose outputs must agree bit for bit (a missing barrier shows there). It checks
# indices, tiles, selections, barriers and the launchers' grids without a GPU; it cannot see
# asynchrony (a missing cp.async wait), WMMA fragment layouts or timing. From the repo root:
#
#   bench/glr/split_sim/run.sh [quick|ktiles|sweep]   (build/split_sim/; a few minutes on 2 cores)
#   bench/glr/split_sim/run.sh huge   reproduces a known limit (docs/glr.md, "Range"): it fails
#   SIM_FLAGS=-DGLR_DSTATE_3CTAS bench/glr/split_sim/run.sh ...   (a build variant)
#   SIM_OUT=DIR (another output folder), SIM_SAME_AS=DIR0/forward.txt (every hash must equal that run's)
# ctest runs it: glr.split_sim.* (glr/CMakeLists.txt).
set -euo pipefail
out=${SIM_OUT:-build/split_sim}  # SIM_OUT: another folder (ctest runs several at once)
mkdir -p "$out"
python3 bench/glr/split_sim/gen.py . "$out/include"
cuda_inc=${CUDA_HOME:-/usr/local/cuda}/include
g++ -std=c++20 -O1 ${SIM_FLAGS:-} -include bench/glr/split_sim/sim.hpp -I"$out/include" -Iinclude -I"$cuda_inc" \
  bench/glr/split_sim/harness.cpp -o "$out/harness"
"$out/harness" "$@" | tee "$out/forward.txt"
SIM_REVERSE=1 "$out/harness" "$@" > "$out/reverse.txt"
# a race-free kernel gives bitwise the same outputs whichever thread runs first in a phase
if ! diff <(grep -o 'hash [0-9a-f]*' "$out/forward.txt") <(grep -o 'hash [0-9a-f]*' "$out/reverse.txt") > /dev/null; then
  echo "FAIL: the outputs differ between ascending and descending thread order (a missing barrier?)"; exit 1
fi
echo "the same outputs, bit for bit, in ascending and descending thread order"
# SIM_SAME_AS=FILE (a bit-identical variant): its outputs must be FILE's (another run's forward.txt), case by case
if [ -n "${SIM_SAME_AS:-}" ]; then
  if ! diff <(grep -o 'hash [0-9a-f]*' "$SIM_SAME_AS") <(grep -o 'hash [0-9a-f]*' "$out/forward.txt") > /dev/null; then
    echo "FAIL: the outputs differ from $SIM_SAME_AS's"; exit 1
  fi
  echo "the same outputs, bit for bit, as $SIM_SAME_AS"
fi
