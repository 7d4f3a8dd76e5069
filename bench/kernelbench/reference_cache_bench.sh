#!/usr/bin/env bash
# What the reference cache (issue 24 item 1, docs/kernelbench.md "Reference cache") saves on a small
# CPU corpus made from the torch controls: the same corpus run three times, one pair at a time,
# under one --seed, each under bench/kernelbench/cpu_by_process.py:
#   off     --reference-cache off: every verifier computes every reference answer itself
#   cold    a fresh cache: a problem's first pair computes, the others read
#   warm    a fresh OUT reading the cold run's cache (a resumed or sharded run's case)
# Prints a table (wall, CPU of the verifiers and what they waited for, the reference servers' CPU,
# answers read / computed) and leaves the sampler's tables in WORK/cpu-*.md.
# Usage: bench/kernelbench/reference_cache_bench.sh BUILD_DIR WORK_DIR   (run as root: the cache
#        is used only then)
set -euo pipefail
build="$(cd "$1" && pwd)"
work="$2"
src="$(cd "$(dirname "$0")/../.." && pwd)"
kcv="$build/kcv"
[ "$(id -u)" -eq 0 ] || { echo "reference_cache_bench: run as root (the cache is used only then)" >&2; exit 2; }
rm -rf "$work"
mkdir -p "$work/corpus"
chmod 755 "$work"
c="$work/corpus"
t="$src/controls/torch"
# problem -> solutions (KernelBench layout: DIR/problem.py beside DIR/solution_*.py)
mkdir -p "$c/rowsum" "$c/linear_gelu" "$c/matmul_large_k" "$c/cross_entropy" "$c/softmax" "$c/cumsum"
cp "$t/rowsum/problem.py" "$c/rowsum/"
for s in ok stale_output nan_laundering assumes_contiguous mutates_input; do cp "$t/rowsum/solution_$s.py" "$c/rowsum/"; done
cp "$t/linear_gelu/"{problem,solution_ok,solution_bf16_matmul}.py "$c/linear_gelu/"
cp "$t/matmul_large_k/"{problem,solution_bf16_accumulate,solution_bf16_operands,solution_tf32}.py "$c/matmul_large_k/"
cp "$t/cross_entropy/"{problem,solution_ok,solution_unshifted}.py "$c/cross_entropy/"
for op in softmax cumsum; do
  cp "$t/bound/${op}_problem.py" "$c/$op/problem.py"
  cp "$t/bound/orders.py" "$c/$op/"
  for f in "$t/bound/${op}"_solution_*.py; do
    case "$f" in *torch_compile*) continue ;; esac
    cp "$f" "$c/$op/solution_${f##*_solution_}"
  done
done
pairs=$(find "$c" -name 'solution_*.py' | wc -l)
echo "corpus: $pairs pairs in $(ls "$c" | wc -l) problems under $c"

run() { # name, then extra args
  local name="$1"; shift
  rm -rf "$work/out-$name"
  local t0 t1
  t0=$(date +%s.%N)
  "$kcv" corpus run "$c" --out "$work/out-$name" --backend cpu --baseline kernelbench --python /usr/bin/python3 \
    --jobs 1 --seed 12345 "$@" >"$work/summary-$name.txt" 2>"$work/progress-$name.txt" &
  local pid=$!
  python3 "$src/bench/kernelbench/cpu_by_process.py" "$work/cpu-$name.md" --interval 0.2 --while-pid "$pid" &
  local sampler=$!
  wait "$pid"
  t1=$(date +%s.%N)
  wait "$sampler"
  python3 - "$name" "$work/out-$name/journal.jsonl" "$work/cpu-$name.md" "$t0" "$t1" <<'EOF'
import json, re, sys
name, journal, cpu_md, t0, t1 = sys.argv[1], sys.argv[2], sys.argv[3], float(sys.argv[4]), float(sys.argv[5])
cpu = read = written = 0.0
verdicts = {}
for line in open(journal):
    r = json.loads(line)
    if r.get("kind") != "result":
        continue
    cpu += r.get("cpu_seconds", 0)
    rep = r.get("report") or {}
    verdicts[r["key"]] = (r["status"], rep.get("verdict"))
    rc = (rep.get("kernelbench") or {}).get("reference_cache") or {}
    read += rc.get("read", 0)
    written += rc.get("written", 0)
ref = 0.0
for line in open(cpu_md):
    m = re.match(r"\| reference \| \d+ \| (\d+) \|", line)
    if m:
        ref = float(m.group(1))
print(f"| {name} | {t1 - t0:.0f} | {cpu:.0f} | {ref:.0f} | {read:.0f} | {written:.0f} |")
json.dump(verdicts, open(journal + ".verdicts", "w"), sort_keys=True)
EOF
}

echo "| run | wall s | CPU s (verifiers + children) | reference servers CPU s | answers read | computed and written |"
echo "|---|---|---|---|---|---|"
run off --reference-cache off
run cold --reference-cache "$work/cache"
run warm --reference-cache "$work/cache"
for n in cold warm; do
  cmp -s "$work/out-off/journal.jsonl.verdicts" "$work/out-$n/journal.jsonl.verdicts" ||
    echo "verdicts of $n differ from off: $(diff "$work/out-off/journal.jsonl.verdicts" "$work/out-$n/journal.jsonl.verdicts")"
done
echo "verdicts (off): $(cat "$work/out-off/journal.jsonl.verdicts")"
