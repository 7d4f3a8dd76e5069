#!/usr/bin/env bash
# One device command for issue 25's cuda placement (docs/security.md, "Placement on cuda"): every
# cuda control but glr's judged by the kcv under test (scripts/verify_controls.py, the sandbox on),
# the new ones first, and the KernelBench smoke (device_smoke.sh) beside them; about 250 s on an
# H200, under 300 s. Results under OUTDIR: new-controls.md and cuda-controls.md (verdict tables with
# gate seconds per control, to compare with bench/results/cuda-controls.md), reports/NAME.json,
# smoke/ and smoke.log, gpu.txt, summary.txt.
# Usage (repo root, GPU machine): bench/kernelbench/device_sbx_cuda.sh OUTDIR [BINDIR]
#   BINDIR holds kcv and kcv-worker (default build; e.g. .xfer/sbx4 carried from the dev machine).
set -uo pipefail
out="${1:?OUTDIR}"; bin="${2:-build}"
mkdir -p "$out/reports"
export KCV_INCLUDE_DIR=$PWD/include KCV_ADAPTERS_DIR=$PWD/adapters PATH=/usr/local/cuda/bin:$PATH
[ -z "${KCV_PYTHON:-}" ] && [ -x /opt/torch/.venv/bin/python3 ] && export KCV_PYTHON=/opt/torch/.venv/bin/python3
start=$SECONDS
left() { echo $(( 290 - (SECONDS - start) )); }
{ nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; nvcc --version | tail -2; "$bin/kcv" --version; } \
  > "$out/gpu.txt" 2>&1

KCV=$bin/kcv timeout 240 bench/kernelbench/device_smoke.sh "$out/smoke" > "$out/smoke.log" 2>&1 &
smoke=$!

# The controls of this change first (their tables survive a later cut), then every other non-glr one.
new='^(softmax\.(fixed_offset_tell|skips_computed_output|ok|allocation_probe)|add\.(ok|ok_float4))$'
timeout "$(left)" python3 scripts/verify_controls.py --backend cuda --kcv "$bin/kcv" --only "$new" --jobs 6 \
  --timeout 200 --reports "$out/reports" --out "$out/new-controls.md" > "$out/new-controls.log" 2>&1
new_rc=$?
echo "new controls: rc=$new_rc at $((SECONDS - start)) s" | tee "$out/summary.txt"
timeout "$(left)" python3 scripts/verify_controls.py --backend cuda --kcv "$bin/kcv" \
  --only '^(?!glr|softmax\.(fixed_offset_tell|skips_computed_output|ok|allocation_probe)$|add\.(ok|ok_float4)$)' --jobs 8 \
  --timeout 200 --reports "$out/reports" --out "$out/cuda-controls.md" > "$out/cuda-controls.log" 2>&1
rest_rc=$?
echo "other controls: rc=$rest_rc at $((SECONDS - start)) s" | tee -a "$out/summary.txt"
wait "$smoke"; smoke_rc=$?
grep -c as-expected "$out/smoke.log" | sed 's/^/smoke as expected: /' | tee -a "$out/summary.txt"
grep MISMATCH "$out/smoke.log" | tee -a "$out/summary.txt"
echo "smoke: rc=$smoke_rc; all done at $((SECONDS - start)) s" | tee -a "$out/summary.txt"
tail -3 "$out/new-controls.md" "$out/cuda-controls.md" 2>/dev/null
[ $new_rc = 0 ] && [ $rest_rc = 0 ] && [ $smoke_rc = 0 ]
