#!/usr/bin/env bash
# One device command (H200, repo root): the register-resident forward walk (GLR_WALK_REGS) against
# the default WMMA walk, built on the host and carried in BINDIR: glr_fwd_time and glr_fwd_time_regs,
# glr_bwd_time and glr_bwd_time_regs (optionally glr_cuda_tests built with -DGLR_WALK_REGS as
# glr_cuda_tests_regs). About 3 minutes:
#   1. glr_cuda_tests_regs whole, when carried
#   2. the timers, alternated twice: regs, wmma, regs, wmma (forward split alone, with its check
#      against the FFMA forward, max|split-ffma|/max|ffma|; backward without FFMA)
# Results into $OUT: tests.txt, env.txt, and tables.tgz (fwd_{regs,wmma}_{1,2}.md, bwd_{regs,wmma}_{1,2}.md).
#   bench/glr/device_walk_ab.sh BINDIR
set -uo pipefail
bin="${1:?usage: bench/glr/device_walk_ab.sh BINDIR}"
out="${OUT:?set OUT to the results folder}"
t0=$SECONDS
note() { echo "[$((SECONDS - t0))s] $*" >> "$out/env.txt"; }
nvidia-smi -L >> "$out/env.txt" 2>&1
[ -x "$bin/glr_cuda_tests_regs" ] && { timeout 200 "$bin/glr_cuda_tests_regs" > "$out/tests.txt" 2>&1; note "glr_cuda_tests_regs rc=$?"; }
for round in 1 2; do
  for form in regs wmma; do
    suffix=$([ $form = regs ] && echo _regs || echo "")
    timeout 60 "$bin/glr_fwd_time$suffix" 7 split > "$out/fwd_${form}_$round.md" 2>&1; note "fwd $form $round rc=$?"
    timeout 60 "$bin/glr_bwd_time$suffix" --no-ffma 7 > "$out/bwd_${form}_$round.md" 2>&1; note "bwd $form $round rc=$?"
  done
done
grep -E "PASSED|FAILED" "$out/tests.txt" 2>/dev/null | head -5
head -12 "$out/fwd_regs_1.md" "$out/fwd_wmma_1.md"
# The device tool brings back only a few files per call: the eight tables travel as one archive
# (session 24 lost the forward's round 2 to that limit).
(cd "$out" && tar czf tables.tgz fwd_*.md bwd_*.md && rm -f fwd_*.md bwd_*.md)
