#!/usr/bin/env bash
# One device command (H200, repo root): the split forward's out kernel on wgmma (the default on sm_90a
# devices since session 27: include/glr/cuda/sm90/glr_fwd_out_wgmma.cuh) against the WMMA/FFMA out kernel
# it replaced (GLR_FWD_WMMA_OUT; sm_100a devices still run it), with binaries built on the host and
# carried in BINDIR:
#   glr_cuda_tests         the default build (it holds the wgmma building block's GlrCudaSm90Wgmma.* too)
#   glr_fwd_time           the forward timer, default build (wgmma out on the H200)
#   glr_fwd_time_wmmaout   the same with -DGLR_FWD_WMMA_OUT
# Host, before the call:
#   cmake --build build --target glr_cuda_tests glr_fwd_time_wmmaout glr_fwd_time
#   mkdir -p .xfer/bin && cp build/glr_cuda_tests build/glr_fwd_time_wmmaout build/glr_fwd_time .xfer/bin/
# Device (carry .xfer/bin): bench/glr/device_wgmma_ab.sh .xfer/bin
# About 5 minutes at most (timeouts 60 + 240 + 4 x 60 s):
#   1. GlrCudaSm90Wgmma.* (the building block: expect 7 passed, 0 skipped)          -> wgmma.txt
#   2. GlrCudaFwd.* (default build), against the fp64 reference                       -> fwd_tests.txt
#   3. the timers at the 7 shapes, `split`, alternated twice: wgmma, wmma, wgmma, wmma; each prints
#      max|split-ffma|/max|ffma| (for the wgmma build: max|wgmma-ffma|/max|ffma|) -> tables.tgz
#      (fwd_{wgmma,wmma}_{1,2}.md), and HGMMA in the wgmma timer's SASS where cuobjdump is there -> env.txt
# Results into $OUT: env.txt, wgmma.txt, fwd_tests.txt, tables.tgz (4 files; the device tool brings back
# only a few). Exit 0 when every step ran (read the files for the verdicts), 2 when it cannot start (no
# GPU, a binary missing).
#   bench/glr/device_wgmma_ab.sh BINDIR
set -uo pipefail
bin="${1:?usage: bench/glr/device_wgmma_ab.sh BINDIR}"
out="${OUT:?set OUT to the results folder}"
t0=$SECONDS
note() { echo "[$((SECONDS - t0))s] $*" >> "$out/env.txt"; }
missing=""
for b in glr_cuda_tests glr_fwd_time_wmmaout glr_fwd_time; do [ -x "$bin/$b" ] || missing="$missing $b"; done
if [ -n "$missing" ]; then
  note "FAIL: not in $bin:$missing (build them on the host: see this script's header)"
  cat "$out/env.txt"; exit 2
fi
if ! nvidia-smi -L >> "$out/env.txt" 2>&1; then
  note "FAIL: no GPU here (nvidia-smi -L failed)"
  cat "$out/env.txt"; exit 2
fi
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv >> "$out/env.txt" 2>&1
if command -v cuobjdump > /dev/null; then  # SASS: HGMMA in the default build's out kernels, none in the wmmaout one
  for b in glr_fwd_time glr_fwd_time_wmmaout; do
    n=$(cuobjdump -sass "$bin/$b" | grep -E 'Function|HGMMA' | grep -B1 HGMMA | grep -c Function)
    note "$b: $n functions with HGMMA"
  done
else
  note "cuobjdump not found: HGMMA not checked"
fi
timeout 60 "$bin/glr_cuda_tests" --gtest_filter='GlrCudaSm90Wgmma.*' > "$out/wgmma.txt" 2>&1
note "GlrCudaSm90Wgmma.* rc=$?"
timeout 240 "$bin/glr_cuda_tests" --gtest_filter='GlrCudaFwd.*' > "$out/fwd_tests.txt" 2>&1
note "GlrCudaFwd.* (default build: wgmma out) rc=$?"
for round in 1 2; do
  for form in wgmma wmma; do
    suffix=$([ $form = wgmma ] && echo "" || echo _wmmaout)
    timeout 60 "$bin/glr_fwd_time$suffix" 7 split > "$out/fwd_${form}_$round.md" 2>&1
    note "fwd $form $round rc=$?"
  done
done
grep -hE "^\[  (PASSED|FAILED|SKIPPED) " "$out/wgmma.txt" "$out/fwd_tests.txt" 2>/dev/null | head -20
head -12 "$out/fwd_wgmma_1.md" "$out/fwd_wmma_1.md"
(cd "$out" && tar czf tables.tgz fwd_*.md && rm -f fwd_*.md)
cat "$out/env.txt"
exit 0
