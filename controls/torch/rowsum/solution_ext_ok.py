# Positive control: a C++ extension built by torch.utils.cpp_extension.load_inline, as most
# KernelBench solutions are. Sequential row sums (another legitimate fp32 order); strided
# inputs are made contiguous first; NaN passes through relu as torch's does.
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

source = r"""
#include <torch/extension.h>
torch::Tensor relu2_plus_rowsum(torch::Tensor x) {
  TORCH_CHECK(x.dim() == 2 && x.scalar_type() == torch::kFloat32, "kcv: refuse: expects a 2-D float32 tensor");
  auto xc = x.contiguous();
  auto out = torch::empty_like(xc);
  const int64_t rows = xc.size(0), cols = xc.size(1);
  const float* in = xc.data_ptr<float>();
  float* o = out.data_ptr<float>();
  for (int64_t i = 0; i < rows; ++i) {
    float s = 0.f;
    for (int64_t j = 0; j < cols; ++j) s += in[i * cols + j];
    for (int64_t j = 0; j < cols; ++j) {
      const float v = in[i * cols + j];
      const float r = v > 0.f ? v : (v != v ? v : 0.f);
      o[i * cols + j] = r * 2.f + s;
    }
  }
  return out;
}
"""

ext = load_inline("kcv_control_rowsum_ok", cpp_sources=source, functions=["relu2_plus_rowsum"], verbose=False)


class ModelNew(nn.Module):
    def forward(self, x):
        return ext.relu2_plus_rowsum(x)
