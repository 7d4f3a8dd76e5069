#!/usr/bin/env bash
# Standby workers (issue 22, docs/architecture.md) on a host with cores to spare: session_speed.py
# on the rowsum controls with KCV_STANDBY=0 (before: every worker started when its gate comes) and
# KCV_STANDBY=1 (after), same seed, same candidates, one after the other, nothing else running.
#
# Usage (repo root, device machine; nothing fetched there):
#   bench/kernelbench/device_standby.sh OUT [BACKEND=cpu] [SOLUTION ...]
#   (default solutions: the rowsum pair of bench/results/kcv-session.md)
# Needs (git-ignored, carried) .xfer/s22: kcv, kcv-worker, libkcv_core.a, libkcv_registry.a,
# libglr_contracts.a, libkcv_base.a, libseccomp.a, generated/ from this build (stage: see
# bench/kernelbench/stage_issue22.sh, the same files). The Python module kcv._kcv is compiled here for
# the device's python, as device_issue22.sh does.
set -uo pipefail
out="${1:?OUT}"; backend="${2:-cpu}"; shift $(( $# >= 2 ? 2 : 1 ))
R=controls/torch/rowsum
sols=("$@"); [ ${#sols[@]} -gt 0 ] || sols=("$R/solution_ok.py" "$R/solution_assumes_contiguous.py" "$R/solution_ok.py")
mkdir -p "$out"; out=$(cd "$out" && pwd)
X=$PWD/.xfer/s22
py="${KCV_PYTHON:-$(command -v python3)}"
export KCV_PYTHON="$py" KCV_INCLUDE_DIR=$PWD/include KCV_ADAPTERS_DIR=$PWD/adapters KCV_WORKER=$X/kcv-worker
export PATH=/usr/local/cuda/bin:$PATH PYTHONPATH=$X/python
summary=$out/standby-$backend.md
{ echo "# standby workers on $(hostname): $(date -u +%FT%TZ), backend $backend, $(nproc) cores"
  "$py" -c "import torch, sys; print('python', sys.version.split()[0], 'torch', torch.__version__, 'cuda', torch.cuda.is_available())"
  "$X/kcv" --version | head -1; } 2>&1 | tee "$summary"

bench/kernelbench/build_kcv_module.sh "$X" "$py" "$out/module.log" | tee -a "$summary"
[ "${PIPESTATUS[0]}" = 0 ] || exit 2

for sb in ${STANDBY:-0 1}; do
  echo "## KCV_STANDBY=$sb" | tee -a "$summary"
  KCV_STANDBY=$sb /usr/bin/time -f "KCV_STANDBY=$sb: %e s wall, %U s user, %S s sys (whole run)" \
    "$py" bench/kernelbench/session_speed.py "$R/problem.py" "${sols[@]}" --kcv "$X/kcv" --backend "$backend" \
    --python "$py" --skip-first-separate --json "$out/session-$backend-standby$sb.json" 2>&1 | tee -a "$summary"
done
