#!/usr/bin/env bash
# The simulation's named barriers (sim.hpp, include/glr/cuda/sm90/named_barrier.cuh) on a producer and
# consumer ring (barrier_ring.cuh), in ascending and descending thread order. Passes when:
#   - the right ring gives the sequential sums, bit for bit, in both orders;
#   - the ring whose consumers free a buffer before reading it gives other sums in at least one order
#     (the simulation sees a use-after-release race);
#   - the ring whose producer never fills step 0 is stopped as a deadlock.
# From the repo root: bench/glr/split_sim/run_barriers.sh   (build/split_sim_barriers/; SIM_OUT: another folder)
set -euo pipefail
out=${SIM_OUT:-build/split_sim_barriers}
mkdir -p "$out"
python3 bench/glr/split_sim/gen.py . "$out/include"
cuda_inc=${CUDA_HOME:-/usr/local/cuda}/include
g++ -std=c++20 -O1 -include bench/glr/split_sim/sim.hpp -I"$out/include" -Iinclude -Ibench/glr/split_sim -I"$cuda_inc" \
  bench/glr/split_sim/barrier_harness.cpp -o "$out/harness"
fail=0
right=$("$out/harness" 0); right_rev=$(SIM_REVERSE=1 "$out/harness" 0)
echo "$right"; echo "$right_rev (descending)"
case "$right" in *": 0 of "*) ;; *) echo "FAIL: the right ring's sums differ from the sequential sum (ascending)"; fail=1 ;; esac
[ "$right" = "$right_rev" ] || { echo "FAIL: the right ring differs between the two thread orders"; fail=1; }
early=$("$out/harness" 1); early_rev=$(SIM_REVERSE=1 "$out/harness" 1)
echo "$early"; echo "$early_rev (descending)"
if [ "$early" = "$early_rev" ] && [[ "$early" == *": 0 of "* ]]; then
  echo "FAIL: a buffer freed before it is read went unseen in both orders"; fail=1
fi
if bash -c '"$0" 2; exit $?' "$out/harness" > "$out/deadlock.txt" 2>&1; then  # (its abort reported into the file)
  echo "FAIL: the ring that never fills step 0 ended"; fail=1
elif ! grep -q 'deadlock' "$out/deadlock.txt"; then
  echo "FAIL: the ring that never fills step 0 stopped without naming a deadlock:"; cat "$out/deadlock.txt"; fail=1
else
  echo "the ring that never fills step 0: $(grep -o 'sim: deadlock.*' "$out/deadlock.txt")"
fi
[ $fail -eq 0 ] && echo "named barriers: as expected"
exit $fail
