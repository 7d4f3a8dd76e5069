#!/usr/bin/env bash
# Issue 24's two targets as one job on the GPU machine (start it with device_background.sh, wait in
# the next commands): the corpus's first run with kcv A (fresh build and reference caches, compile
# included), then the same corpus rerun with kcv B, another build (a changed binary), against the
# first run's build cache and a fresh reference cache. Same seed, same arguments otherwise.
# Usage (repo root, GPU machine; A and B are folders holding kcv and kcv-worker):
#   bench/kernelbench/device_cold_warm.sh A B CORPUS RESULTS COLD_S WARM_S [kcv corpus run args...]
# Each run is bench/kernelbench/device_corpus.sh (its vmstat and CPU-by-process tables beside the
# journal); the two run folders (/tmp/kcv-runs/cold and warm) come back as RESULTS/cold.tgz and
# RESULTS/warm.tgz, without their caches.
set -uo pipefail
a="${1:?A}"; b="${2:?B}"; corpus="${3:?CORPUS}"; results="${4:?RESULTS}"; cold_s="${5:?COLD_S}"; warm_s="${6:?WARM_S}"
shift 6
mkdir -p build "$results" /tmp/kcv-runs
rm -rf /tmp/kcv-runs/cold /tmp/kcv-runs/warm
cp "$a/kcv" "$a/kcv-worker" build/ || exit 2
echo "== cold: $(./build/kcv --version | head -1)"
OUT="$results" KCV_DRAIN_S="${KCV_DRAIN_S_COLD:-300}" \
  bench/kernelbench/device_corpus.sh "$cold_s" /tmp/kcv-runs/cold "$corpus" "$@"
du -sh /tmp/kcv-runs/cold/reference-cache /tmp/kcv-runs/cold/build-cache 2>&1
rm -rf /tmp/kcv-runs/cold/reference-cache   # the rerun computes its own; the disk is 64 GiB
cp "$b/kcv" "$b/kcv-worker" build/ || exit 2
echo "== warm: $(./build/kcv --version | head -1)"
OUT="$results" KCV_DRAIN_S="${KCV_DRAIN_S_WARM:-200}" \
  bench/kernelbench/device_corpus.sh "$warm_s" /tmp/kcv-runs/warm "$corpus" \
  --build-cache /tmp/kcv-runs/cold/build-cache "$@"
du -sh /tmp/kcv-runs/warm/reference-cache 2>&1
