#!/usr/bin/env bash
# The session-wide pool (issue 22, docs/architecture.md "The session-wide pool") on a host with
# cores to spare: session_speed.py on the rowsum controls with KCV_POOL=0 (before: standby workers
# only, every candidate starts its workers in verify()) and KCV_POOL=1 (after), standby on, same
# seed, same candidates, back to back (--pause 0) and with a pause between candidates (--pause
# PAUSE: a generator loop's LLM call), nothing else running.
#
# Usage (repo root, device machine; nothing fetched there):
#   bench/kernelbench/device_pool.sh OUT [BACKEND=cpu] [SOLUTION ...]
#   env: XFER (default .xfer/s22b), PAUSES (default "0 10"), POOLS (default "0 1")
# Needs (git-ignored, carried) $XFER: kcv, kcv-worker, libkcv_core.a, libkcv_registry.a, libglr_contracts.a,
# libkcv_base.a, libseccomp.a, generated/ (stage: bench/kernelbench/stage_pool.sh). The Python module
# kcv._kcv is compiled here for the device's python, as device_standby.sh does.
set -uo pipefail
out="${1:?OUT}"; backend="${2:-cpu}"; shift $(( $# >= 2 ? 2 : 1 ))
R=controls/torch/rowsum
sols=("$@"); [ ${#sols[@]} -gt 0 ] || sols=("$R/solution_ok.py" "$R/solution_assumes_contiguous.py" "$R/solution_ok.py")
mkdir -p "$out"; out=$(cd "$out" && pwd)
X=$PWD/${XFER:-.xfer/s22b}
py="${KCV_PYTHON:-$(command -v python3)}"
export KCV_PYTHON="$py" KCV_INCLUDE_DIR=$PWD/include KCV_ADAPTERS_DIR=$PWD/adapters KCV_WORKER=$X/kcv-worker
export PATH=/usr/local/cuda/bin:$PATH PYTHONPATH=$X/python KCV_STANDBY=1
summary=$out/pool-$backend.md
{ echo "# session-wide pool on $(hostname): $(date -u +%FT%TZ), backend $backend, $(nproc) cores"
  "$py" -c "import torch, sys; print('python', sys.version.split()[0], 'torch', torch.__version__, 'cuda', torch.cuda.is_available())"
  "$X/kcv" --version | head -1; cat "$X/STAGED" 2>/dev/null; } 2>&1 | tee "$summary"

bench/kernelbench/build_kcv_module.sh "$X" "$py" "$out/module.log" | tee -a "$summary"
[ "${PIPESTATUS[0]}" = 0 ] || exit 2

for pause in ${PAUSES:-0 10}; do
  for pool in ${POOLS:-0 1}; do
    echo "## KCV_POOL=$pool, pause $pause s" | tee -a "$summary"
    KCV_POOL=$pool /usr/bin/time -f "KCV_POOL=$pool pause $pause: %e s wall, %U s user, %S s sys (whole run)" \
      "$py" bench/kernelbench/session_speed.py "$R/problem.py" "${sols[@]}" --kcv "$X/kcv" --backend "$backend" \
      --python "$py" --skip-first-separate --pause "$pause" --json "$out/session-$backend-pool$pool-pause$pause.json" \
      2>&1 | tee -a "$summary"
  done
done
