#!/usr/bin/env bash
# One device command: the precompiled torch/extension.h of a corpus run (adapters/torch/
# kcv_torch_pch.py) on this machine's torch and g++. Builds the manifest as `kcv corpus run`
# does, then a small load_inline CUDA extension through the torch worker's checked copy, and
# replays torch's own main.cpp command with -H: its first line must be "! ...gch" (g++ took it).
# Usage (repo root, GPU machine): bench/kernelbench/device_pch_probe.sh OUTDIR
set -uo pipefail
out="${1:?OUTDIR}"; mkdir -p "$out"
export PATH=/usr/local/cuda/bin:$PATH
py="${KCV_PYTHON:-$(command -v python3)}"
export PATH=$(dirname "$py"):$PATH
/usr/bin/time -f "pch helper wall=%e user=%U sys=%S" "$py" adapters/torch/kcv_torch_pch.py "$out/pch" --backend cuda \
  > "$out/manifest.json" 2> "$out/helper.stderr"
tail -2 "$out/helper.stderr"; head -c 600 "$out/manifest.json"; echo
for use in no yes; do
  TORCH_EXTENSIONS_DIR="$out/ext-$use/torch-extensions" USE_PCH=$use MANIFEST="$out/manifest.json" \
  /usr/bin/time -f "load_inline (pch $use) wall=%e user=%U sys=%S" "$py" - <<'PY'
import json, os, sys, time
sys.path.insert(0, "adapters/torch")
import kcv_torch_common as common
import torch
if os.environ["USE_PCH"] == "yes":
    entries = json.load(open(os.environ["MANIFEST"]))["entries"]
    common.use_precompiled_torch_header(entries, os.path.join(os.path.dirname(os.environ["TORCH_EXTENSIONS_DIR"]), "torch-pch"))
from torch.utils.cpp_extension import load_inline
cu = r'''
#include <torch/extension.h>
__global__ void k(const float* x, float* y, int n) { int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) y[i] = 2 * x[i]; }
torch::Tensor twice(torch::Tensor x) { auto y = torch::empty_like(x); int n = x.numel(); k<<<(n + 255) / 256, 256>>>(x.data_ptr<float>(), y.data_ptr<float>(), n); return y; }
'''
t = time.time()
m = load_inline(name="pchprobe", cpp_sources="torch::Tensor twice(torch::Tensor x);", cuda_sources=cu,
                functions=["twice"], extra_cflags=[""], verbose=False)
print("built in", round(time.time() - t, 1), "s:", m.twice(torch.ones(3, device="cuda")).tolist())
PY
done
bd=$(dirname "$(find "$out/ext-yes" -name build.ninja | head -1)")
grep -o -- "-include [^ ]*" "$bd/build.ninja"
(cd "$bd" && sh -c "$(sed -n 's/^cxx = //p' build.ninja) $(sed -n 's/^cflags = //p' build.ninja) -H -Winvalid-pch -fsyntax-only main.cpp $(sed -n 's/^post_cflags = //p' build.ninja)" 2>&1 | head -2)
rm -rf "$out/pch" "$out"/ext-*/torch-pch   # the gch files are large; the manifest and logs stay
