#!/usr/bin/env bash
# One device command: a corpus run that stops itself before the device's per-command limit, so
# that the journal (and a rerun, which resumes it) carries the rest.
# Usage (repo root, GPU machine, build/ and bench/kernelbench/data carried):
#   bench/kernelbench/device_corpus.sh SECONDS OUTDIR <kcv corpus run arguments...>
# With $OUT set (the device tool's result folder), OUTDIR comes back as $OUT/<its name>.tgz.
# vmstat's log (CPU, memory, I/O every 10 s) and cpu_by_process.py's table (CPU seconds by kind
# of process) land in OUTDIR beside the journal.
# Unpack it at the repo root (tar xzf .../<name>.tgz) before the next call carries the tree, or
# the next call resumes from the old journal and redoes the pairs (session 5 did that once).
set -uo pipefail
limit="${1:?SECONDS}"; out="${2:?OUTDIR}"; shift 2
export KCV_INCLUDE_DIR=$PWD/include KCV_ADAPTERS_DIR=$PWD/adapters PATH=/usr/local/cuda/bin:$PATH
py="${KCV_PYTHON:-$(command -v python3)}"
mkdir -p "$out"
# The host's CPU, memory and I/O every 10 s while the run lasts: is the host the bottleneck?
vmstat -n -t 10 > "$out/vmstat-$(date +%H%M%S).log" 2>&1 &
vmstat_pid=$!
# ... and which kinds of process spend that CPU (compile, sanitizer, worker, reference, kcv).
by_process="$out/cpu-by-process-$(date +%H%M%S).md"
"$py" bench/kernelbench/cpu_by_process.py "$by_process" --interval 0.5 &
sampler_pid=$!
t0=$SECONDS
# Each progress line gets the seconds since the start, so runs cut at different times compare.
# KCV_DRAIN_S (default 300, longer than a pair under load) before the limit kcv gets SIGTERM: it starts no new pair and the
# running ones finish and are journaled; whatever still runs at the limit is killed and lost.
drain="${KCV_DRAIN_S:-300}"
[ "$drain" -lt "$limit" ] || drain=$((limit / 4 + 1))
timeout --signal=TERM --kill-after="$drain" "$((limit - drain))" \
  ./build/kcv corpus run "$@" --out "$out" --backend cuda --python "$py" \
  > "$out/run.stdout" 2> >(while IFS= read -r line; do printf '%4ds %s\n' $((SECONDS - t0)) "$line"; done \
                             > "$out/run.stderr")
echo "corpus run rc=$? wall=$((SECONDS - t0))s"
rm -rf "$out/torch-pch"   # a run killed at the limit leaves its precompiled headers (0.7 GB each)
kill "$vmstat_pid" 2>/dev/null
sleep 1  # a run that ended at once: let the sampler get to its signal handler first
kill "$sampler_pid" 2>/dev/null && wait "$sampler_pid"
sed -n '1,14p' "$by_process" 2>/dev/null
tail -5 "$out/run.stderr"
./build/kcv report "$out" && tail -30 "$out/run.stdout"
if [ -n "${OUT:-}" ]; then
  # The caches stay behind: a corpus's reference answers and built extensions run to gigabytes.
  tar czf "$OUT/$(basename "$out").tgz" --exclude=reference-cache --exclude=build-cache --exclude=torch-pch \
    "$out" && echo "journal and report: \$OUT/$(basename "$out").tgz"
fi
