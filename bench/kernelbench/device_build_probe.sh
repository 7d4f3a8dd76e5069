#!/usr/bin/env bash
# One device command: where a load_inline build's time goes. Builds a trivial cuda extension the
# way KernelBench solutions do, keeps ninja's build file, then replays its two compile commands
# (main.cpp by g++, cuda.cu by nvcc) with `time`, and main.cpp again against a precompiled
# torch/extension.h made with the same flags, to measure what a shared PCH would save.
# Usage (repo root, GPU machine): bench/kernelbench/device_build_probe.sh OUTDIR
set -uo pipefail
out="${1:?OUTDIR}"; mkdir -p "$out"
export PATH=/usr/local/cuda/bin:$PATH TORCH_EXTENSIONS_DIR=$(mktemp -d)
py="${KCV_PYTHON:-$(command -v python3)}"
/usr/bin/time -f "load_inline wall=%e user=%U sys=%S" "$py" - <<'PY'
import torch
from torch.utils.cpp_extension import load_inline
cu = r'''
__global__ void k(const float* x, float* y, int n) { int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) y[i] = 2 * x[i]; }
torch::Tensor twice(torch::Tensor x) { auto y = torch::empty_like(x); int n = x.numel(); k<<<(n + 255) / 256, 256>>>(x.data_ptr<float>(), y.data_ptr<float>(), n); return y; }
'''
m = load_inline(name="probe", cpp_sources="torch::Tensor twice(torch::Tensor x);", cuda_sources=cu,
                functions=["twice"], extra_cflags=["-O3"], verbose=False)
print("ok", m.twice(torch.ones(3, device="cuda")).tolist())
PY
bd=$TORCH_EXTENSIONS_DIR/probe
cp $bd/build.ninja "$out/build.ninja"
cd $bd
cflags=$(sed -n 's/^cflags = //p' build.ninja); post=$(sed -n 's/^post_cflags = //p' build.ninja)
cuflags=$(sed -n 's/^cuda_cflags = //p' build.ninja); cupost=$(sed -n 's/^cuda_post_cflags = //p' build.ninja)
cxx=$(sed -n 's/^cxx = //p' build.ninja); nvcc=$(sed -n 's/^nvcc = //p' build.ninja)
t() { local what=$1; shift; /usr/bin/time -f "$what wall=%e user=%U sys=%S" "$@" 2>&1 | grep -E "wall=|invalid|error" | head -5; }
t "g++ main.cpp" $cxx -MMD -MF m.d $cflags -c main.cpp -o m.o $post
t "nvcc cuda.cu" $nvcc --generate-dependencies-with-compile --dependency-output c.d $cuflags -c cuda.cu -o c.o $cupost
inc=$("$py" -c "import torch, os; print(os.path.join(os.path.dirname(torch.__file__), 'include'))")
mkdir -p pch/torch
t "g++ pch build" $cxx $cflags -x c++-header $inc/torch/extension.h -o pch/torch/extension.h.gch $post
t "g++ main.cpp with pch" $cxx -Winvalid-pch -H -Ipch $cflags -c main.cpp -o m2.o $post
$cxx -Winvalid-pch -H -Ipch $cflags -c main.cpp -o m3.o $post 2>&1 | head -3
t "g++ main.cpp with pch, -O0" $cxx -Winvalid-pch -Ipch $cflags -O0 -c main.cpp -o m4.o $post
t "g++ main.cpp with pch, -DFOO" $cxx -Winvalid-pch -Ipch $cflags -DFOO=1 -c main.cpp -o m5.o $post
ls -la pch/torch
nproc; grep -m1 "model name" /proc/cpuinfo
