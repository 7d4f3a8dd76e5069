#!/usr/bin/env bash
# Host simulation of the split forward (glr_fwd_split.cuh; SIM_FLAGS=-DGLR_FWD_WGMMA for the wgmma out
# kernel, glr_fwd_out_wgmma.cuh, over wgmma_sim.hpp's emulation of the ISA's operand tables) against
# glr::cpu::fwd_slice<double>, in ascending and descending thread order (run.sh says what the simulation
# can and cannot see). From the repo root:
#
#   SIM_FLAGS=-DGLR_FWD_WGMMA bench/glr/split_sim/run_fwd.sh [quick]   (build/split_sim_fwd/)
set -euo pipefail
out=${SIM_OUT:-build/split_sim_fwd}  # SIM_OUT: another folder (ctest runs several at once)
mkdir -p "$out"
python3 bench/glr/split_sim/gen.py . "$out/include"
cuda_inc=${CUDA_HOME:-/usr/local/cuda}/include
g++ -std=c++20 -O1 ${SIM_FLAGS:-} -include bench/glr/split_sim/sim.hpp -I"$out/include" -Iinclude -I"$cuda_inc" \
  bench/glr/split_sim/fwd_harness.cpp -o "$out/harness" \
  -L"${CUDA_HOME:-/usr/local/cuda}/lib64" -lcudart_static -ldl -lpthread -lrt  # launch_gate names cudaMemcpyAsync
"$out/harness" "$@" | tee "$out/forward.txt"
SIM_REVERSE=1 "$out/harness" "$@" > "$out/reverse.txt"
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
