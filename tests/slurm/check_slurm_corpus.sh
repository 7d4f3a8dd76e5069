#!/usr/bin/env bash
# ctest slurm.corpus_array: the Slurm array of docs/corpus-cluster.md, end to end on a one-node
# cluster that scripts/slurm_local.sh brings up (and takes down at exit).
#   1. a corpus of 6 stub pairs (tests/unit/corpus/fake_verifier.sh: pass, fail, a SIGSEGV, a
#      library-only fail) and 3 real KernelBench pairs (controls/torch/rowsum: two correct
#      solutions and a stale-output one, verified by the real `kcv verify --kernelbench` on cpu),
#      sharded 3 ways: `sbatch --array=0-2 --requeue`, every shard with the same --seed and one
#      shared --reference-cache (docs/corpus-cluster.md)
#   2. shard 1 is requeued (`scontrol requeue`) while its second pair is running, after its first
#      pair has a result: the task is killed, runs again and resumes its journal (the first pair
#      is not started again, the second is)
#   3. the merge job, `sbatch --dependency=afterok:<array>`, merges the 3 journals
#   4. the merged verdicts (status, report verdict, each gate's verdict) equal, key by key, those of
#      a one-machine `kcv corpus run` of the same corpus (same seed, no reference cache); the real
#      pairs' reports carry the run seed, and where kcv is root the shared cache was read
# Prints "SKIP: <why>" and exits 0 where Slurm cannot start (no packages, not root, no munge...).
# Usage: check_slurm_corpus.sh BUILD_DIR SOURCE_DIR
set -euo pipefail
build="$(cd "$1" && pwd)"
src="$(cd "$2" && pwd)"
kcv="$build/kcv"
[ -x "$kcv" ] || { echo "FAIL: no $kcv"; exit 1; }

skip() { echo "SKIP: $*"; exit 0; }
fail() { echo "FAIL: $*"; exit 1; }

command -v sbatch >/dev/null || skip "no sbatch (./scripts/setup.sh --slurm installs Slurm)"
command -v python3 >/dev/null || skip "no python3 to read the journals"

tmp="$(mktemp -d /tmp/kcv-slurm-test-XXXXXX)"
chmod 755 "$tmp"
export KCV_SLURM_DIR="$tmp/cluster" KCV_SLURM_PORT="${KCV_SLURM_TEST_PORT:-6837}" KCV_SLURM_NO_INSTALL=1
cleanup() {
  local rc=$?
  "$src/scripts/slurm_local.sh" down >/dev/null 2>&1 || true
  if [ "$rc" -ne 0 ] && [ -d "$tmp/out" ]; then
    # Kept for diagnosis: the journals, the tasks' logs and the verifiers' event logs.
    local kept="$build/slurm.corpus_array.failed"
    rm -rf "$kept"
    mkdir -p "$kept"
    cp -r "$tmp/out" "$tmp/logs" "$kept/" 2>/dev/null || true
    cp "$tmp"/events.* "$kept/" 2>/dev/null || true
    echo "kept the journals and logs in $kept"
  fi
  rm -rf "$tmp"
}
trap cleanup EXIT
if ! up_log="$("$src/scripts/slurm_local.sh" up 2>&1)"; then
  skip "scripts/slurm_local.sh up failed: $(echo "$up_log" | tail -n 1)"
fi
export SLURM_CONF="$KCV_SLURM_DIR/slurm.conf"

# ---- the corpus: pN/problem.py + pN/solution.py, the solution's first line tells the stub ----
corpus="$tmp/corpus"
modes=("pass" "pass 1" "fail" "segv" "pass 6" "libfail")   # key order p0..p5; shard I: pI, pI+3
for i in "${!modes[@]}"; do
  mkdir -p "$corpus/p$i"
  echo "class Model: pass" > "$corpus/p$i/problem.py"
  printf '# fake: %s\nclass ModelNew: pass\n' "${modes[$i]}" > "$corpus/p$i/solution.py"
done
mkdir -p "$corpus/rowsum"
cp "$src/controls/torch/rowsum/problem.py" "$corpus/rowsum/"
cp "$src/controls/torch/rowsum/solution_ok.py" "$corpus/rowsum/solution_a_ok.py"
cp "$src/controls/torch/rowsum/solution_stale_output.py" "$corpus/rowsum/solution_b_stale.py"
cp "$src/controls/torch/rowsum/solution_ok.py" "$corpus/rowsum/solution_c_ok.py"
chmod -R a+rX "$corpus"
cp "$src/tests/unit/corpus/fake_verifier.sh" "$tmp/fake_verifier.sh"
# The verifier: the stub for a "# fake:" solution, the real kcv (logging its start as the stub
# does) for the others.
cat > "$tmp/verifier.sh" <<EOF
#!/bin/sh
sol=""; next=0
for a in "\$@"; do
  if [ "\$next" = 2 ]; then sol="\$a"; break; fi
  if [ "\$next" = 1 ]; then next=2; fi
  if [ "\$a" = --kernelbench ]; then next=1; fi
done
if head -n 1 "\$sol" | grep -q '^# fake:'; then exec "$tmp/fake_verifier.sh" "\$@"; fi
if [ -n "\$FAKE_EVENT_LOG" ]; then echo "start \$sol" >> "\$FAKE_EVENT_LOG"; fi
exec "$kcv" "\$@" --python /usr/bin/python3
EOF
chmod 755 "$tmp/fake_verifier.sh" "$tmp/verifier.sh"
export KCV_CORPUS_VERIFIER="$tmp/verifier.sh"
SEED=20261202
N=3
base="$tmp/out"
mkdir -p "$base" "$tmp/logs"

# The two job scripts of docs/corpus-cluster.md, cut down to this cluster (no GPU, 1 CPU each).
cat > "$tmp/kcv-corpus.sbatch" <<EOF
#!/bin/bash
#SBATCH --job-name=kcv-corpus
#SBATCH --array=0-$((N - 1))
#SBATCH --cpus-per-task=1
#SBATCH --requeue
#SBATCH --output=$tmp/logs/%A_%a.log
set -euo pipefail
N=$N
I=\${SLURM_ARRAY_TASK_ID}
OUT=$base/shard-\$I
mkdir -p "\$OUT"
export KCV_CORPUS_VERIFIER=$KCV_CORPUS_VERIFIER FAKE_EVENT_LOG=$tmp/events.\$I
echo "task \$I restart \${SLURM_RESTART_COUNT:-0}"
"$kcv" corpus run "$corpus" --out "\$OUT" --shard "\$I/\$N" --seed $SEED --reference-cache "$base/reference-cache" \\
    --baseline kernelbench --jobs 1 --pair-timeout 300
EOF
cat > "$tmp/kcv-merge.sbatch" <<EOF
#!/bin/bash
#SBATCH --job-name=kcv-merge
#SBATCH --cpus-per-task=1
#SBATCH --output=$tmp/logs/merge-%j.log
set -euo pipefail
outs=(); for ((i = 0; i < $N; i++)); do outs+=("$base/shard-\$i"); done
rm -rf "$base/all"
"$kcv" corpus merge "\${outs[@]}" --out "$base/all"
EOF

jid="$(sbatch --parsable "$tmp/kcv-corpus.sbatch")" || fail "sbatch of the array refused"
mid="$(sbatch --parsable --dependency="afterok:$jid" "$tmp/kcv-merge.sbatch")" || fail "sbatch of the merge refused"
echo "array job $jid, merge job $mid (afterok:$jid)"

results() { # number of result records in a journal
  [ -f "$1" ] || { echo 0; return; }
  grep -c '"kind":"result"' "$1" || true
}

# ---- kill shard 1 mid-run: once p1 has its result and p4 (6 s) has started ----
deadline=$((SECONDS + 120))
until [ "$(results "$base/shard-1/journal.jsonl")" -ge 1 ] && grep -q "start $corpus/p4/solution.py" "$tmp/events.1" 2>/dev/null; do
  ((SECONDS < deadline)) || fail "shard 1 did not reach its second pair in 120 s; $(squeue 2>&1 | tail -n +2)"
  sleep 0.2
done
[ "$(results "$base/shard-1/journal.jsonl")" -eq 1 ] || fail "shard 1 finished before it could be killed"
scontrol requeue "${jid}_1" || fail "scontrol requeue ${jid}_1 failed"
echo "requeued ${jid}_1 with 1 of its 3 pairs in the journal"

# ---- wait for the merge job: it runs only once every task of the array has succeeded ----
deadline=$((SECONDS + 400))
state=""
while :; do
  state="$(scontrol -o show job "$mid" 2>/dev/null | grep -o 'JobState=[A-Z_]*' | cut -d= -f2 || true)"
  case "$state" in COMPLETED | FAILED | CANCELLED | TIMEOUT | NODE_FAIL | OUT_OF_MEMORY) break ;; esac
  ((SECONDS < deadline)) || fail "merge job $mid still '$state' after 400 s; $(squeue 2>&1 | tail -n +2)"
  sleep 1
done
[ "$state" = COMPLETED ] || fail "merge job $mid ended $state: $(cat "$tmp"/logs/merge-*.log 2>/dev/null)"
restarts="$(scontrol -o show job "${jid}_1" | grep -o 'Restarts=[0-9]*' | cut -d= -f2)"
[ "${restarts:-0}" -ge 1 ] || fail "task ${jid}_1 shows Restarts=${restarts:-?}, was it requeued?"
echo "merge job COMPLETED; task ${jid}_1 Restarts=$restarts"

# ---- the one-machine run of the same corpus ----
"$kcv" corpus run "$corpus" --out "$base/one" --seed $SEED --reference-cache off --baseline kernelbench --jobs 1 \
  --pair-timeout 300 >"$tmp/logs/one.log" 2>&1 ||
  fail "one-machine kcv corpus run failed: $(tail -n 3 "$tmp/logs/one.log")"

python3 - "$base" "$tmp" "$corpus" "$N" "$SEED" "$(id -u)" <<'EOF'
import json, sys
base, tmp, corpus, n, seed, uid = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]), sys.argv[5], int(sys.argv[6])

def results(path):
    out = {}
    for line in open(path):
        r = json.loads(line)
        if r.get("kind") != "result":
            continue
        if r["key"] in out:
            sys.exit(f"FAIL: {path}: key {r['key']} has two results")
        rep = r.get("report") or {}
        out[r["key"]] = (r["status"], rep.get("verdict"),
                         tuple((g["id"], g["verdict"]) for g in rep.get("gates", [])))
    return out

merged, one = results(f"{base}/all/journal.jsonl"), results(f"{base}/one/journal.jsonl")
if len(one) != 9:
    sys.exit(f"FAIL: the one-machine run has {len(one)} results, not 9")
real = sorted(k for k in one if k.startswith("rowsum/"))
want_real = {"rowsum/solution_a_ok.py": "PASS", "rowsum/solution_b_stale.py": "FAIL", "rowsum/solution_c_ok.py": "PASS"}
if {k: one[k][1] for k in real} != want_real:
    sys.exit(f"FAIL: the real pairs' verdicts {[(k, one[k][:2]) for k in real]}, want {want_real}")
read = 0
for line in open(f"{base}/all/journal.jsonl"):
    r = json.loads(line)
    if r.get("kind") != "result" or not r["key"].startswith("rowsum/"):
        continue
    if r["report"]["seed"] != seed:
        sys.exit(f"FAIL: {r['key']} was verified under seed {r['report']['seed']}, not the run's {seed}")
    rc = r["report"]["kernelbench"].get("reference_cache")
    if uid == 0:
        if not rc or rc["dir"] != f"{base}/reference-cache" or rc["rejected"] != 0:
            sys.exit(f"FAIL: {r['key']}: reference cache {rc}, want the shared {base}/reference-cache")
        read += rc["read"]
    elif rc is not None:
        sys.exit(f"FAIL: {r['key']}: a reference cache {rc} where kcv is not root")
if uid == 0 and read == 0:
    sys.exit("FAIL: no real pair read an answer from the shared reference cache")
if merged != one:
    for k in sorted(set(merged) | set(one)):
        if merged.get(k) != one.get(k):
            print(f"  {k}: merged {merged.get(k)} vs one machine {one.get(k)}")
    sys.exit("FAIL: merged verdicts differ from the one-machine run")
statuses = sorted({v[0] for v in one.values()}); verdicts = sorted({str(v[1]) for v in one.values()})
if "verifier_crash" not in statuses or "PASS" not in verdicts or "FAIL" not in verdicts:
    sys.exit(f"FAIL: the corpus should give PASS, FAIL and a crash: {statuses} {verdicts}")

# The requeued shard resumed: its first pair started once, its second twice (killed, then rerun).
starts = {}
for line in open(f"{tmp}/events.1"):
    what, sol = line.split(maxsplit=1)
    if what == "start":
        starts[sol.strip()] = starts.get(sol.strip(), 0) + 1
want = {f"{corpus}/p1/solution.py": 1, f"{corpus}/p4/solution.py": 2, f"{corpus}/rowsum/solution_b_stale.py": 1}
if starts != want:
    sys.exit(f"FAIL: shard 1's verifier starts {starts}, want {want} (resume after the requeue)")
for i in (0, 2):
    s = {}
    for line in open(f"{tmp}/events.{i}"):
        if line.startswith("start "):
            s[line[6:].strip()] = s.get(line[6:].strip(), 0) + 1
    if sorted(s.values()) != [1, 1, 1]:
        sys.exit(f"FAIL: shard {i}'s verifier starts {s}, want each of its 3 pairs once")
print(f"PASS: {len(one)} keys, merged == one machine; verdicts {verdicts}, statuses {statuses}; "
      f"shard 1 resumed after its requeue ({starts}); real pairs under seed {seed}, "
      f"{read} reference answers read from the shared cache")
EOF
