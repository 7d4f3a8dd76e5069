#!/usr/bin/env bash
# One device command: kcv's own CPU (not its children's) and the whole process tree's, for one
# problem offered as its own candidate (no build), once per kcv binary given, one after another
# on an idle host: an A/B of kcv versions on the GPU machine.
# Usage (repo root, GPU machine): bench/kernelbench/device_kcv_cpu.sh PROBLEM.py GATES KCV...
# kcv's own CPU is read from /proc/<pid>/stat every 0.2 s; the last reading before it exits
# is printed (so it can be up to 0.2 s short). KCV_BACKEND=cpu runs it on the cpu backend.
set -uo pipefail
problem="${1:?PROBLEM.py}"; gates="${2:?GATES}"; shift 2
export KCV_INCLUDE_DIR=$PWD/include KCV_ADAPTERS_DIR=$PWD/adapters PATH=/usr/local/cuda/bin:$PATH
py="${KCV_PYTHON:-$(command -v python3)}"
tick=$(getconf CLK_TCK)
for kcv in "$@"; do
  start=$SECONDS
  /usr/bin/time -f "$kcv tree: wall=%e user=%U sys=%S maxrss_kb=%M" "$kcv" verify --kernelbench "$problem" "$problem" \
    --backend "${KCV_BACKEND:-cuda}" --python "$py" --gates "$gates" --seed 5 --quiet > /tmp/kcv-cpu.out 2> /tmp/kcv-cpu.err &
  timer=$!
  sleep 0.5
  pid=$(pgrep -P "$timer" | head -1)
  own=0; echo "timing $(cat /proc/$pid/comm 2>/dev/null) (pid $pid)"
  while kill -0 "$pid" 2>/dev/null; do
    read -r -a f < "/proc/$pid/stat" 2>/dev/null && own=$(( ${f[13]} + ${f[14]} ))
    sleep 0.2
  done
  wait "$timer"; rc=$?
  echo "$kcv: rc=$rc, kcv's own CPU $(awk -v t="$own" -v h="$tick" 'BEGIN{printf "%.1f", t/h}') s, $((SECONDS - start)) s"
  tail -1 /tmp/kcv-cpu.err
done
