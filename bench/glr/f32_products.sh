#!/usr/bin/env bash
# One device command (H200, repo root; nothing to carry): glr's chunk products at f32, FFMA against
# split-operand tensor cores (3xTF32) with plain TF32 beside them, verified against fp64 on the
# device and timed by bench/glr/f32_products.cu (issue 18 §0: "measure which is faster").
#
#   bench/glr/f32_products.sh [OUTDIR] [--bin PATH] [BENCH ARGS...]      (OUTDIR default: $OUT)
#     e.g. bench/glr/f32_products.sh                        compile, then the default run
#          bench/glr/f32_products.sh --bin build/f32_products/f32_products   a prebuilt binary
#          bench/glr/f32_products.sh --shapes kv --reps 1,4,16              benchmark arguments
#
# Compiles with nvcc -O3 -std=c++20 -gencode arch=compute_90a,code=sm_90a into build/f32_products/
# (git-ignored; keyed by the source's hash, so a warm machine compiles only what changed), unless
# --bin or F32_PRODUCTS_BIN names a binary. Then runs it once: about 20 s of compile on the H200's
# host and well under a minute of benchmark (3 shapes x 21 configurations x reps 1 and 8, each
# verified, then 3 warm-up and 25 timed launches). F32_SANITIZE=1 adds a compute-sanitizer
# memcheck and racecheck pass at batch 16 before the benchmark (off by default: minutes).
#
# Writes (at most 8 files, what the device tool brings back):
#   OUTDIR/f32_products.md          the benchmark's tables (its stdout)
#   OUTDIR/f32_products.json        every configuration: time, TFLOP/s, accuracy, registers, CTAs/SM
#   OUTDIR/f32_products.log         environment, compile, the benchmark's progress (stderr), RESULT
#   OUTDIR/f32_products.ptxas.txt   registers, stack and spills per kernel (nvcc -Xptxas -v)
#   OUTDIR/f32_products.sass.txt    per kernel: instruction count and opcode histogram (cuobjdump)
#   OUTDIR/f32_products.sanitizer.txt   with F32_SANITIZE=1 only
# Exit: the benchmark's (0 all sane and every accuracy class as expected; 1 a non-finite result or
# an error beyond the gross bound; 3 sane but an accuracy class not the expected one; 2 usage or
# CUDA error), 4 when the compile failed, 5 when the sanitizer reported errors.
set -uo pipefail
t_start=$SECONDS
out="${OUT:-}"
if [ $# -gt 0 ] && [ "${1#-}" = "$1" ]; then out=$1; shift; fi
[ -n "$out" ] || { echo "f32_products.sh: pass OUTDIR or set OUT" >&2; exit 2; }
bin="${F32_PRODUCTS_BIN:-}"
args=()
while [ $# -gt 0 ]; do
  if [ "$1" = "--bin" ] && [ $# -ge 2 ]; then bin=$2; shift 2; else args+=("$1"); shift; fi
done
src=bench/glr/f32_products.cu
mkdir -p "$out"
log=$out/f32_products.log
: > "$log"
note() { echo "[$((SECONDS - t_start))s] $*" | tee -a "$log"; }
[ -f "$src" ] || { note "FAIL: run from the repo root ($src not found in $PWD)"; exit 2; }
export PATH=/usr/local/cuda/bin:$PATH
{
  echo "date: $(date -u +%FT%TZ)"; echo "repo: $PWD ($(git rev-parse HEAD 2>/dev/null || echo 'no git'))"
  nvidia-smi -L 2>&1
  nvidia-smi --query-gpu=driver_version,clocks.sm,clocks.max.sm,clocks.mem,power.limit,temperature.gpu --format=csv 2>&1
  nvcc --version 2>&1 | tail -1; echo "nproc: $(nproc)"; echo "bench args: ${args[*]:-(default)}"
} >> "$log"

# ---- the binary: given, or compiled (cached by the source's hash) ----
if [ -n "$bin" ]; then
  [ -x "$bin" ] || { note "FAIL: --bin $bin is not an executable"; exit 2; }
  note "binary: $bin (prebuilt)"
else
  hash=$(sha256sum "$src" | cut -c1-16)
  bin=build/f32_products/f32_products.$hash
  if [ -x "$bin" ]; then
    note "binary: $bin (already compiled from this source)"
    [ -f "build/f32_products/ptxas.$hash.txt" ] && cp "build/f32_products/ptxas.$hash.txt" "$out/f32_products.ptxas.txt"
  else
    mkdir -p build/f32_products
    note "compiling $src (nvcc -O3 -std=c++20 -gencode arch=compute_90a,code=sm_90a)"
    t0=$SECONDS
    if nvcc -O3 -std=c++20 -gencode arch=compute_90a,code=sm_90a -Xptxas -v "$src" -o "$bin.tmp" \
         > "$out/f32_products.ptxas.txt" 2>&1; then
      mv "$bin.tmp" "$bin"
      cp "$out/f32_products.ptxas.txt" "build/f32_products/ptxas.$hash.txt"
      note "compiled in $((SECONDS - t0)) s: $bin"
    else
      note "FAIL: nvcc failed after $((SECONDS - t0)) s:"
      grep -E "error" "$out/f32_products.ptxas.txt" | head -12 | tee -a "$log"
      exit 4
    fi
  fi
  if grep -qE "[1-9][0-9]* bytes spill" "$out/f32_products.ptxas.txt" 2>/dev/null; then
    note "note: some kernels spill (see f32_products.ptxas.txt)"
  fi
fi

# ---- SASS: what each kernel issues (HMMA, FFMA, LDS, the tf32 conversions, local memory) ----
if command -v cuobjdump > /dev/null; then
  cuobjdump -sass "$bin" 2> /dev/null | python3 -c '
import re, subprocess, sys, collections
funcs, cur = [], None
for line in sys.stdin:
    m = re.search(r"Function : (\S+)", line)
    if m:
        cur = [m.group(1), collections.Counter()]; funcs.append(cur); continue
    m = re.match(r"\s+/\*[0-9a-f]{4,}\*/\s+(?:@!?U?P[T0-9]+\s+)?([A-Z][A-Z0-9_.]*)", line)
    if m and cur: cur[1][m.group(1)] += 1
names = [f[0] for f in funcs]
dem = names
for tool in ("cu++filt", "c++filt"):
    try:
        dem = subprocess.run([tool], input="\n".join(names), capture_output=True, text=True, timeout=20).stdout.split("\n")
        break
    except Exception:
        pass
for (name, c), d in zip(funcs, dem + names[len(dem):]):
    d = (d or name).replace("(anonymous namespace)::", "")
    print("%s\n  %d instructions: %s" % (d, sum(c.values()), ", ".join("%s %d" % kv for kv in c.most_common(24))))
' > "$out/f32_products.sass.txt" 2>&1 || note "note: SASS summary failed"
  note "SASS summary: $(grep -c instructions "$out/f32_products.sass.txt" 2>/dev/null) kernels in f32_products.sass.txt"
else
  note "note: no cuobjdump on PATH, no SASS summary"
fi

# ---- optional: compute-sanitizer on a small batch ----
if [ "${F32_SANITIZE:-0}" = 1 ]; then
  if command -v compute-sanitizer > /dev/null; then
    san_rc=0
    : > "$out/f32_products.sanitizer.txt"
    for tool in memcheck racecheck; do
      note "compute-sanitizer --tool $tool (batch 16)"
      timeout 300 compute-sanitizer --tool $tool --error-exitcode 99 "$bin" --batch 16 --iters 20 --warmup 0 --reps 1,2 \
        >> "$out/f32_products.sanitizer.txt" 2>&1
      rc=$?
      note "compute-sanitizer $tool: exit $rc; $(grep -E '(ERROR|RACECHECK|Hazard) SUMMARY' "$out/f32_products.sanitizer.txt" | tail -1)"
      [ $rc = 99 ] && san_rc=5
    done
  else
    note "note: F32_SANITIZE=1 but no compute-sanitizer on PATH"
  fi
fi

# ---- the benchmark: tables to f32_products.md, progress to the log; the console gets the tables
# without the long per-configuration one (it stays in the .md) ----
note "running: $bin $out/f32_products.json ${args[*]}"
timeout --signal=TERM --kill-after=10 300 "$bin" "$out/f32_products.json" "${args[@]}" \
  > "$out/f32_products.md" 2>> "$log"
rc=$?
awk '/^All configurations/{s=1} s && /^(- PROBLEM|RESULT)/{s=0} !s' "$out/f32_products.md"
if [ "$rc" != 0 ] && [ "$rc" != 3 ]; then
  echo "---- last lines of the benchmark's log ----"; tail -15 "$log"
fi
note "benchmark: exit $rc; $(grep '^RESULT' "$out/f32_products.md" || echo 'no RESULT line')"
[ "$rc" = 0 ] && [ "${san_rc:-0}" != 0 ] && rc=$san_rc
note "RESULT: exit $rc in $((SECONDS - t_start)) s; copy $out/f32_products.md and .json to bench/results/ (bench/glr/README.md)"
exit $rc
