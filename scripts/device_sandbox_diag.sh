#!/usr/bin/env bash
# The worker sandbox against compute-sanitizer on a GPU machine (issue 25; docs/security.md):
# the sanitizer gate of the cuda controls add.ok and matmul.ok, many seeds in parallel, under the
# full sandbox, in the setup that failed (H200 run 6) and its neighbours, all gates under the full
# sandbox, then with each protection switched off in turn (KCV_SANDBOX_OFF) while time is left.
# Prints a table of pass/fail per configuration and the worker (compute-sanitizer) logs of the
# failures; writes everything under $OUT. One command, from the repository root, with build/kcv
# and build/kcv-worker present:
#
#   bash scripts/device_sandbox_diag.sh
#
# Knobs (environment): OUT (default ./sandbox-diag), DIAG_SEEDS (seeds per candidate in the main
# configurations, default 10), DIAG_SEEDS_OFF (in the protection-off ones, default 5),
# DIAG_BUDGET_S (no configuration starts past it, default 320), DIAG_CONFIGS (a space-separated
# subset of the names below, in that order).
#
# Configurations, most telling first:
#   full          every protection (network namespace of its own per worker)
#   shared_ports  KCV_SANDBOX_OFF=net and KCV_SANITIZER_PORT_RANGES=0: every compute-sanitizer on
#                 the host's loopback, default ports, each in a PID namespace of its own: the
#                 setup of the failing H200 run 6 (expected to fail if the port hypothesis holds)
#   no_sandbox    --no-sandbox, default ports (run 5's setup), as many runs at once
#   shared_ports_nopid  as shared_ports without the PID namespaces: if this passes and
#                 shared_ports fails, same-pid targets (not too few ports) are the cause
#   net           KCV_SANDBOX_OFF=net: the host's loopback, but a port range per worker
#   all_gates     every gate under the full sandbox (verdicts as before?)
#   pid seccomp nproc uid tmp ipc proc mount no_new_privs pdeathsig rlimits: that one off
set -u
cd "$(dirname "$0")/.." || exit 2
ROOT=$PWD
OUT=${OUT:-$ROOT/sandbox-diag}
SEEDS=${DIAG_SEEDS:-10}
SEEDS_OFF=${DIAG_SEEDS_OFF:-5}
BUDGET=${DIAG_BUDGET_S:-320}
CONFIGS=${DIAG_CONFIGS:-"full shared_ports no_sandbox shared_ports_nopid net all_gates pid seccomp nproc uid tmp ipc proc mount no_new_privs pdeathsig rlimits"}
export KCV_ADAPTERS_DIR=${KCV_ADAPTERS_DIR:-$ROOT/adapters} KCV_INCLUDE_DIR=${KCV_INCLUDE_DIR:-$ROOT/include}
export PATH=/usr/local/cuda/bin:$PATH
KCV=$ROOT/build/kcv
# DIAG_BACKEND=cpu with DIAG_ADD/DIAG_MATMUL: a dry run of this script where there is no GPU.
BACKEND=${DIAG_BACKEND:-cuda}
ADD=${DIAG_ADD:-$ROOT/controls/cuda/add/add_ok.cu}
MATMUL=${DIAG_MATMUL:-$ROOT/controls/cuda/matmul/matmul_ok.cu}
START=$(date +%s)
mkdir -p "$OUT" || exit 2
[ -x "$KCV" ] && [ -x "$ROOT/build/kcv-worker" ] || { echo "build/kcv and build/kcv-worker are needed"; exit 2; }
# Workdirs the workers (uid 65534) can reach: /tmp, world-traversable; logs are copied to $OUT.
SCRATCH=$(mktemp -d /tmp/kcv-diag.XXXXXX) && chmod 755 "$SCRATCH" || exit 2
trap 'rm -rf "$SCRATCH"' EXIT

elapsed() { echo $(( $(date +%s) - START )); }

{
  echo "== machine"
  uname -a
  echo "cores: $(nproc)  pid_max: $(cat /proc/sys/kernel/pid_max 2>/dev/null)  ns_last_pid: $([ -e /proc/sys/kernel/ns_last_pid ] && echo yes || echo no)"
  echo "ulimit -u (kcv): $(ulimit -u)   uid: $(id -u)"
  compute-sanitizer --version 2>&1 | tail -1
  nvidia-smi --query-gpu=name,driver_version,memory.used,memory.total --format=csv,noheader 2>&1 | head -2
} | tee "$OUT/machine.txt"

# Tasks (threads included) of uid 65534, sampled while a configuration runs: RLIMIT_NPROC (8192)
# counts all of them together, across every concurrent kcv.
sample_tasks() {
  local max=0 n
  while [ -e "$1.running" ]; do
    n=$(awk '$1=="Uid:" && $2==65534 {c++} END {print c+0}' /proc/[0-9]*/task/[0-9]*/status 2>/dev/null)
    [ "${n:-0}" -gt "$max" ] && max=$n
    sleep 0.5
  done
  echo "$max" > "$1.tasks"
}

# run_config NAME GATES SEEDS [ENV...] [-- KCV-ARGS...]: every seed of both candidates at once.
run_config() {
  local name=$1 gates=$2 seeds=$3
  shift 3
  local envs=() extra=()
  while [ $# -gt 0 ] && [ "$1" != "--" ]; do envs+=("$1"); shift; done
  [ "${1:-}" = "--" ] && shift
  extra=("$@")
  local dir=$OUT/$name left=$(( BUDGET - $(elapsed) ))
  mkdir -p "$dir"
  if [ "$left" -lt 40 ]; then echo "SKIPPED (time budget)" > "$dir/skipped"; return; fi
  local maxt=$(( left < 200 ? left : 200 ))
  touch "$dir/.running"
  sample_tasks "$dir/" &
  local sampler=$! t0 pids=()
  t0=$(date +%s)
  for cand in add matmul; do
    local op=$cand src=$ADD
    [ "$cand" = matmul ] && src=$MATMUL
    for s in $(seq 1 "$seeds"); do
      local id=$cand-$s work=$SCRATCH/$name-$cand-$s
      ( env ${envs[@]+"${envs[@]}"} timeout -k 5 $((maxt + 20)) "$KCV" verify --backend "$BACKEND" --op "$op" --candidate "$src" \
          --gates "$gates" --seed "$s" --max-time "$maxt" --json "$dir/$id.json" --keep-workdir "$work" \
          ${extra[@]+"${extra[@]}"} > "$dir/$id.out" 2>&1
        echo $? > "$dir/$id.rc"
        # Worker logs (compute-sanitizer's output included) of a run that did not pass.
        if [ "$(cat "$dir/$id.rc")" != 0 ] && [ -d "$work" ]; then
          mkdir -p "$dir/$id.logs" && cp "$work"/*.log "$dir/$id.logs/" 2>/dev/null
        fi
        rm -rf "$work" ) &
      pids+=($!)
    done
    # All gates: one candidate at a time (the shapes gate's large tier needs device memory).
    if [ "$gates" != sanitizer ]; then wait ${pids[@]+"${pids[@]}"}; pids=(); fi
  done
  wait ${pids[@]+"${pids[@]}"}
  rm -f "$dir/.running"
  wait "$sampler"
  echo $(( $(date +%s) - t0 )) > "$dir/seconds"
}

for c in $CONFIGS; do
  case $c in
    full) run_config full sanitizer "$SEEDS" ;;
    shared_ports) run_config shared_ports sanitizer "$SEEDS" KCV_SANDBOX_OFF=net KCV_SANITIZER_PORT_RANGES=0 ;;
    net) run_config net sanitizer "$SEEDS" KCV_SANDBOX_OFF=net ;;
    all_gates) run_config all_gates numerics,shapes,values,nonfinite,bounds,inputs_intact,coverage,determinism,layout,stateless,concurrency,sanitizer "$SEEDS" ;;
    no_sandbox) run_config no_sandbox sanitizer "$SEEDS" KCV_SANITIZER_PORT_RANGES=0 -- --no-sandbox ;;
    shared_ports_nopid) run_config shared_ports_nopid sanitizer "$SEEDS" KCV_SANDBOX_OFF=net,pid KCV_SANITIZER_PORT_RANGES=0 ;;
    *) run_config "$c" sanitizer "$SEEDS_OFF" KCV_SANDBOX_OFF="$c" ;;
  esac
  echo "[$(elapsed) s] $c done" >&2
done

# The table and the failures' evidence.
python3 - "$OUT" $CONFIGS <<'PY' | tee "$OUT/summary.txt"
import glob, json, os, sys
out, configs = sys.argv[1], sys.argv[2:]
print(f"\n{'config':<18} {'add.ok':>9} {'matmul.ok':>10} {'secs':>5} {'tasks65534':>10}  in force")
failures = []
for c in configs:
    d = os.path.join(out, c)
    if os.path.exists(os.path.join(d, "skipped")) or not os.path.isdir(d):
        print(f"{c:<18} {'SKIPPED (time budget)':>26}")
        continue
    cells, summary = {}, ""
    for cand in ("add", "matmul"):
        ok = n = 0
        for rc in sorted(glob.glob(os.path.join(d, f"{cand}-*.rc"))):
            run = rc[:-3]
            n += 1
            verdicts, why = {}, ""
            try:
                r = json.load(open(run + ".json"))
                summary = summary or r.get("sandbox", {}).get("summary", "")
                verdicts = {g["id"]: g["verdict"] for g in r["gates"] if g["verdict"] != "SKIPPED"}
                bad = [g for g in r["gates"] if g["verdict"] not in ("PASS", "SKIPPED")]
                why = "; ".join(f"{g['id']} {g['verdict']}: {g.get('evidence', '')[:300]}" for g in bad)
            except Exception as e:  # noqa: BLE001
                why = f"no report ({e}); kcv said: " + open(run + ".out", errors="replace").read()[-400:]
            # A gate verdict, not kcv's exit code: a protection switched off withholds PASS (exit 1).
            if verdicts and all(v == "PASS" for v in verdicts.values()):
                ok += 1
            else:
                failures.append((c, os.path.basename(run), why, run + ".logs"))
        cells[cand] = f"{ok}/{n} pass"
    secs = open(os.path.join(d, "seconds")).read().strip() if os.path.exists(os.path.join(d, "seconds")) else "?"
    tasks = open(os.path.join(d, ".tasks")).read().strip() if os.path.exists(os.path.join(d, ".tasks")) else "?"
    print(f"{c:<18} {cells['add']:>9} {cells['matmul']:>10} {secs:>5} {tasks:>10}  {summary[9:] if summary.startswith('sandbox: ') else summary}")
print(f"\n{len(failures)} runs did not pass every gate they ran.")
for c, run, why, logs in failures[:24]:
    print(f"\n--- {c} / {run}: {why}")
    for log in sorted(glob.glob(os.path.join(logs, "*.log")))[:6]:
        text = open(log, errors="replace").read().splitlines()
        keep = [l for l in text if l.startswith("=========") or "rror" in l][-12:] or text[-8:]
        if keep:
            print(f"  {os.path.basename(log)}:")
            for l in keep:
                print("    " + l[:240])
if len(failures) > 24:
    print(f"\n... and {len(failures) - 24} more (under {out})")
PY
echo "total: $(elapsed) s; everything under $OUT"
