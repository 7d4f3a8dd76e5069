#!/usr/bin/env bash
# One device command (H200, repo root): the default glr timers against build variants, built on the
# host and carried in BINDIR (glr/CMakeLists.txt's A/B timers: glr_fwd_time_SUFFIX, glr_bwd_time_SUFFIX,
# noseg = GLR_WALK_SEGMENTS_OFF,
# dstate3 = GLR_DSTATE_3CTAS, nohoist = GLR_NOHOIST, range = GLR_DIAG_RANGE (each table's last column
# hashes the split's outputs: a bit-identical variant shows the default's);
# include/glr/cuda/sm90/switches.cuh lists the switches), alternated twice: default, each
# variant, default, each variant. Forward = `glr_fwd_time[_S] 7 split` (prep + walk + out, with its
# check against the FFMA forward, which must read the same for a bit-identical variant), backward =
# `glr_bwd_time[_S] --no-ffma 7`. About 25 s per timer and round on the H200.
#   bench/glr/device_ab.sh BINDIR SUFFIX...      e.g. bench/glr/device_ab.sh .xfer/ab dstate3
# Results into $OUT: env.txt, and tables.tgz (fwd_NAME_ROUND.md, bwd_NAME_ROUND.md; NAME default or
# the suffix; a backward variant carried without its forward timer has no fwd table): the device
# tool brings back at most 8 files. Exit 1 when a timer failed, 2 on a setup error.
set -uo pipefail
bin="${1:?usage: bench/glr/device_ab.sh BINDIR SUFFIX...}"; shift
out="${OUT:?set OUT to the results folder}"
[ $# -gt 0 ] || { echo "device_ab.sh: name at least one variant (noseg, dstate3, nohoist, range)" >&2; exit 2; }
t0=$SECONDS
note() { echo "[$((SECONDS - t0))s] $*" >> "$out/env.txt"; }
# A variant of the backward alone may come without its forward timer (its forward is the default's):
# then its forward is not timed. The default needs both; every variant its backward.
for s in "" "$@"; do
  for t in fwd bwd; do
    f="$bin/glr_${t}_time${s:+_$s}"
    [ -x "$f" ] || [ "$t" = fwd -a -n "$s" ] || { note "FAIL: $f missing: build it on the host and carry $bin"; exit 2; }
  done
done
{ nvidia-smi -L; echo "include/ $(bench/glr/headers_id.sh include) (bench/glr/headers_id.sh)"; } >> "$out/env.txt" 2>&1
mkdir -p "$out/tables"
rc=0
for round in 1 2; do
  for s in "" "$@"; do
    name=${s:-default}
    if [ -x "$bin/glr_fwd_time${s:+_$s}" ]; then
      timeout 90 "$bin/glr_fwd_time${s:+_$s}" 7 split > "$out/tables/fwd_${name}_$round.md" 2>&1
      r=$?; note "fwd $name $round rc=$r"; [ $r -eq 0 ] || rc=1
    else
      note "fwd $name $round: no forward timer (a backward variant), not timed"
    fi
    timeout 90 "$bin/glr_bwd_time${s:+_$s}" --no-ffma 7 > "$out/tables/bwd_${name}_$round.md" 2>&1
    r=$?; note "bwd $name $round rc=$r"; [ $r -eq 0 ] || rc=1
  done
done
for s in "" "$@"; do [ -f "$out/tables/fwd_${s:-default}_1.md" ] && head -12 "$out/tables/fwd_${s:-default}_1.md"; done
(cd "$out" && tar czf tables.tgz tables && rm -rf tables)
exit $rc
