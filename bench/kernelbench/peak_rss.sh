#!/usr/bin/env bash
# Peak resident memory of the kcv process itself (VmHWM, sampled every 0.2 s until it exits; its
# workers and the reference server are separate processes, not counted) for one verification.
# Usage (repo root): bench/kernelbench/peak_rss.sh KCV_BINARY kcv-verify-arguments...
# Prints "kcv peak RSS <MiB> MiB, wall <s> s, exit <rc>".
set -uo pipefail
kcv="${1:?KCV_BINARY}"; shift
export KCV_INCLUDE_DIR=${KCV_INCLUDE_DIR:-$PWD/include} KCV_ADAPTERS_DIR=${KCV_ADAPTERS_DIR:-$PWD/adapters}
t0=$(date +%s.%N)
"$kcv" verify "$@" > /tmp/peak_rss.$$.out 2>&1 &
pid=$!
peak=0
while kill -0 "$pid" 2> /dev/null; do
  kb=$(awk '/^VmHWM:/ {print $2}' "/proc/$pid/status" 2> /dev/null)
  [ -n "$kb" ] && [ "$kb" -gt "$peak" ] && peak=$kb
  sleep 0.2
done
wait "$pid"; rc=$?
t1=$(date +%s.%N)
tail -3 /tmp/peak_rss.$$.out; rm -f /tmp/peak_rss.$$.out
echo "kcv peak RSS $((peak / 1024)) MiB, wall $(awk "BEGIN {printf \"%.1f\", $t1 - $t0}") s, exit $rc"
