# The CUDA kernel of the rowsum cuda controls (controls.cmake), built with load_inline as most
# KernelBench solutions are. Each solution_cuda_*.py picks a variant; only the variant's bug differs.
#   ok              one thread per row, a sequential fp32 sum, on torch's current stream
#   default_stream  the same kernel launched on the legacy default stream (<<<grid, block>>>), which
#                   does not wait for work torch queued on its current stream
#   tail_overrun    the same kernel without its `i < rows` guard: the threads of the last block past
#                   the last row write past the end of the output (into the caching allocator's
#                   next block; only memcheck, with that allocator off, sees it)
#   shared_race     the same kernel, but each thread of a 64-thread block reads a __shared__ slot
#                   another warp writes, with no __syncthreads() between; nothing uses the value,
#                   so every output is right
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

CPP = "torch::Tensor relu2_plus_rowsum(torch::Tensor x);"

CUDA = r"""
#include <torch/extension.h>
#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAException.h>

__global__ void relu2_plus_rowsum_kernel(const float* in, float* out, int64_t rows, int64_t cols) {
#if KCV_SHARED_RACE
  volatile __shared__ float scratch[64];
  scratch[threadIdx.x] = static_cast<float>(threadIdx.x + 1);
  const float other = scratch[blockDim.x - 1 - threadIdx.x];  // the bug: no __syncthreads() before it
  (void)other;
#endif
  const int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
#if !KCV_TAIL_OVERRUN
  if (i >= rows) return;
#endif
  const float* row = in + i * cols;
  float s = 0.f;
  for (int64_t j = 0; j < cols; ++j) s += row[j];
  for (int64_t j = 0; j < cols; ++j) {
    const float v = row[j];
    const float r = v > 0.f ? v : (v != v ? v : 0.f);  // NaN passes through, as torch.relu's does
    out[i * cols + j] = r * 2.f + s;
  }
}

torch::Tensor relu2_plus_rowsum(torch::Tensor x) {
  TORCH_CHECK(x.is_cuda() && x.dim() == 2 && x.scalar_type() == torch::kFloat32,
              "kcv: refuse: expects a 2-D float32 CUDA tensor");
  auto xc = x.contiguous();
  auto out = torch::empty_like(xc);
  if (out.numel() == 0) return out;
  const int64_t rows = xc.size(0), cols = xc.size(1);
  constexpr int kThreads = 64;
  const unsigned blocks = static_cast<unsigned>((rows + kThreads - 1) / kThreads);
#if KCV_DEFAULT_STREAM
  relu2_plus_rowsum_kernel<<<blocks, kThreads>>>(xc.data_ptr<float>(), out.data_ptr<float>(), rows, cols);
#else
  relu2_plus_rowsum_kernel<<<blocks, kThreads, 0, at::cuda::getCurrentCUDAStream()>>>(
      xc.data_ptr<float>(), out.data_ptr<float>(), rows, cols);
#endif
  C10_CUDA_KERNEL_LAUNCH_CHECK();
  return out;
}
"""

BUGS = {"ok": [], "default_stream": ["-DKCV_DEFAULT_STREAM=1"], "shared_race": ["-DKCV_SHARED_RACE=1"],
        "tail_overrun": ["-DKCV_TAIL_OVERRUN=1"]}


def model_new(variant):
    """ModelNew for one variant: the extension is built (or reused) on first call."""
    ext = load_inline(f"kcv_control_rowsum_cuda_{variant}", cpp_sources=CPP, cuda_sources=CUDA,
                      functions=["relu2_plus_rowsum"], extra_cuda_cflags=BUGS[variant], verbose=False)

    class ModelNew(nn.Module):
        def forward(self, x):
            return ext.relu2_plus_rowsum(x)

    return ModelNew
