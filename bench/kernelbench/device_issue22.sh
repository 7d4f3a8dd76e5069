#!/usr/bin/env bash
# Issue 22's H200 measurements in one device command, under its own deadlines (default 400 s):
#   1. adversarial: KernelBench's three adversarial kernels (kernelbench_adversarial.py): kcv's 12
#      gates and builds in parallel (t < 175 s), then KernelBench's eval alone on the GPU (t < 215 s).
#   2. session: session_speed.py on the cuda backend, level1/1_Square_matrix_multiplication_
#      (N = 4096) and 3 candidates (its reference rewritten as ModelNew, torch.mm, and one that turns
#      TF32 on: numerics must fail): the 2nd..Nth speed-up over separate `kcv verify`, candidates per
#      minute, the per-candidate split (t < 335 s when part 3 follows, else to the end).
#   3. timing: timing_vs_kernelbench.py on ordinary pairs (the matmul problem with its reference
#      rewritten; the project's pure-torch side-stream control), kcv time --gates numerics (to the end).
# Parts run one after another, so nothing is timed beside other work. Each writes its markdown to
# OUT as it goes; a part cut by its deadline keeps the rows it printed.
#
# Usage (repo root, GPU machine; nothing fetched there):
#   bench/kernelbench/device_issue22.sh OUT [BUDGET_S]      PARTS="adversarial session timing" (default)
#   SESSION_ARGS (default --skip-first-separate): session_speed.py's choice of separate runs; --session-only
#   gives the throughput and the split alone (level1/1 at N = 4096: about 100 s a candidate on the H200).
# Needs (git-ignored, carried): .xfer/kb (KernelBench: git --git-dir=<mirror> archive HEAD | tar -x -C .xfer/kb)
# and .xfer/kb22 (bench/kernelbench/stage_issue22.sh: kcv, kcv-worker, libkcv_{core,base}.a,
# libseccomp.a, generated/). The Python module kcv._kcv is compiled here for the device's python
# (its Python.h, and the pybind11 that torch bundles) beside part 1.
set -uo pipefail
out="${1:?OUT}"; budget="${2:-400}"
parts="${PARTS:-adversarial session timing}"
mkdir -p "$out"; out=$(cd "$out" && pwd)
T0=$SECONDS
X=$PWD/.xfer/kb22 KB=$PWD/.xfer/kb
py="${KCV_PYTHON:-$(command -v python3)}"
backend="${KCV_BACKEND:-cuda}"
export KCV_PYTHON="$py" KCV_INCLUDE_DIR=$PWD/include KCV_ADAPTERS_DIR=$PWD/adapters KCV_WORKER=$X/kcv-worker
export PATH=/usr/local/cuda/bin:$PATH PYTHONPATH=$X/python
kcv=$X/kcv
summary=$out/issue22.md
say() { echo "$*" | tee -a "$summary"; }
t() { echo $((SECONDS - T0)); }

# part NAME END_T CMD...: CMD in a process group of its own, output to OUT/NAME.log; at END_T seconds
# after the start, SIGTERM to the group (kcv stops its workers and exits), SIGKILL 10 s later.
part() {
  local name=$1 end=$2; shift 2
  local t0=$SECONDS
  setsid "$@" > "$out/$name.log" 2>&1 &
  local pid=$! cut=""
  while kill -0 $pid 2>/dev/null; do
    if (( SECONDS - T0 >= end )); then
      cut=" CUT at its deadline (t=${end}s)"
      kill -TERM -- -$pid 2>/dev/null
      for _ in $(seq 10); do kill -0 $pid 2>/dev/null || break; sleep 1; done
      kill -KILL -- -$pid 2>/dev/null
      break
    fi
    sleep 1
  done
  wait $pid; local rc=$?
  echo "== $name: rc=$rc wall=$((SECONDS - t0))s t=$(t)s$cut" | tee -a "$summary"
}

: > "$summary"
say "# issue 22 on $(hostname): $(date -u +%FT%TZ), budget ${budget}s, parts: $parts"
say ""
"$py" -c "import torch, sys; print('python', sys.version.split()[0], 'torch', torch.__version__, 'cuda', torch.cuda.is_available(), torch.cuda.get_device_name(0) if torch.cuda.is_available() else '')" 2>&1 | tee -a "$summary"
"$kcv" --version 2>&1 | head -1 | tee -a "$summary"
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,memory.used,utilization.gpu --format=csv,noheader 2>&1 | tee -a "$summary"
for f in "$kcv" "$X/kcv-worker" "$X/libkcv_core.a" "$KB/src/kernelbench/timing.py" "$KB/KernelBench/level1/1_Square_matrix_multiplication_.py"; do
  [ -e "$f" ] || { say "missing $f: stage .xfer/kb and .xfer/kb22 (see the header)"; exit 2; }
done

# The Python module for this python, in the background (one g++ of src/python/kcv_module.cpp and the
# CLI's environment.cpp): the same recipe as device_pool.sh's, in build_kcv_module.sh.
build_module() {
  bash bench/kernelbench/build_kcv_module.sh "$X" "$py" "$out/module.build.log" &&
    PYTHONPATH=$X/python "$py" -c "import kcv; print('kcv module', kcv.__version__, kcv.__file__)"
}
case " $parts " in *" session "*) build_module > "$out/module.log" 2>&1 & mpid=$! ;; *) mpid="" ;; esac

# Candidates written here, from the staged checkout (never committed): the problem's own Model as
# ModelNew, and two variants.
gen=$X/gen; mkdir -p "$gen"
"$py" - "$KB/KernelBench/level1/1_Square_matrix_multiplication_.py" "$gen" <<'EOF'
import re, sys
src, gen = open(sys.argv[1]).read(), sys.argv[2]
ref = re.sub(r"\bclass Model\(", "class ModelNew(", src).replace("super(Model, self)", "super(ModelNew, self)")
open(f"{gen}/matmul_reference_as_solution.py", "w").write(ref)
open(f"{gen}/matmul_mm.py", "w").write(ref.replace("return torch.matmul(A, B)", "return torch.mm(A, B)"))
open(f"{gen}/matmul_tf32.py", "w").write(ref.replace(
    "return torch.matmul(A, B)", "torch.backends.cuda.matmul.allow_tf32 = True\n        return torch.matmul(A, B)"))
assert "torch.mm(" in open(f"{gen}/matmul_mm.py").read() and "allow_tf32" in open(f"{gen}/matmul_tf32.py").read()
EOF
P1=$KB/KernelBench/level1/1_Square_matrix_multiplication_.py

# ---- 1. KernelBench's adversarial kernels ----
if [[ " $parts " == *" adversarial "* ]]; then
  adv=$out/adversarial; a="bench/kernelbench/kernelbench_adversarial.py --kernelbench $KB --out $adv --kcv $kcv --python $py --backend $backend"
  "$py" $a --phase extract > "$out/adversarial.extract.log" 2>&1 || { say "adversarial: extract failed"; cat "$out/adversarial.extract.log"; }
  # KernelBench's builds (CPU) beside kcv's verifications; nothing is timed beside anything in
  # this phase except `kcv time --gates numerics` of the side-stream kernel (said in the table).
  part adversarial.build 170 "$py" $a --phase build --deadline $((170 - $(t))) & bpid=$!
  part adversarial.kcv 175 "$py" $a --phase kcv --jobs 4 --deadline $((172 - $(t)))
  wait $bpid  # only this part: the module build (session) is waited for where it is needed
  part adversarial.kb 215 "$py" $a --phase kb --trials 100 --deadline $((213 - $(t)))
  "$py" $a --phase table > /dev/null 2>&1
  say ""; say "## KernelBench's adversarial kernels (level1/1_Square_matrix_multiplication_, N = 4096)"; say ""
  cat "$adv/table.md" >> "$summary" 2>/dev/null || say "(no table)"
  cat "$adv/table.md" 2>/dev/null
  say "logs: adversarial/kcv/*.log, adversarial/kb/*.log"
fi

# ---- 2. Session against separate verifications (cuda, real size) ----
if [[ " $parts " == *" session "* ]]; then
  [ -n "$mpid" ] && wait $mpid; cat "$out/module.log" | tee -a "$summary"
  say ""; say "## kcv.Session vs separate kcv verify (cuda, level1/1_Square_matrix_multiplication_, all 12 gates)"; say ""
  # Its deadline: t = 335 s when the timing part follows, else the whole budget.
  send=$((budget - 3)); [[ " $parts " == *" timing "* ]] && send=335
  part session $send "$py" bench/kernelbench/session_speed.py "$P1" "$gen/matmul_reference_as_solution.py" \
    "$gen/matmul_mm.py" "$gen/matmul_tf32.py" --kcv "$kcv" --backend "$backend" --python "$py" ${SESSION_ARGS:---skip-first-separate} \
    --json "$out/session_reports.json"
  cat "$out/session.log" >> "$summary"; cat "$out/session.log"
fi

# ---- 3. kcv time against KernelBench's own timer, ordinary pairs ----
if [[ " $parts " == *" timing "* ]]; then
  say ""; say "## kcv time vs KernelBench's timer (kcv gates: numerics; KB: 100 trials; kcv: 30 reps)"; say ""
  part timing $((budget - 3)) "$py" bench/kernelbench/timing_vs_kernelbench.py --kernelbench "$KB" --kcv "$kcv" \
    --python "$py" --trials 100 --reps 30 --gates numerics \
    "$P1" "$gen/matmul_reference_as_solution.py" \
    controls/torch/timing/problem_cuda.py controls/torch/timing/solution_cuda_side_stream.py
  cat "$out/timing.log" >> "$summary"; cat "$out/timing.log"
fi
say ""; say "total wall $(t)s"
