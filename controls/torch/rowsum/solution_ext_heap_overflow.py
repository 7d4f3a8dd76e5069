# Negative control (sanitizer): the same C++ extension as solution_ext_ok.py, but each row is
# copied into a scratch vector that is then read one element past its end. The value is never
# used, so every output is right; only a sanitizer sees the heap-buffer-overflow.
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

source = r"""
#include <torch/extension.h>
#include <vector>
torch::Tensor relu2_plus_rowsum(torch::Tensor x) {
  TORCH_CHECK(x.dim() == 2 && x.scalar_type() == torch::kFloat32, "kcv: refuse: expects a 2-D float32 tensor");
  auto xc = x.contiguous();
  auto out = torch::empty_like(xc);
  const int64_t rows = xc.size(0), cols = xc.size(1);
  const float* in = xc.data_ptr<float>();
  float* o = out.data_ptr<float>();
  for (int64_t i = 0; i < rows; ++i) {
    std::vector<float> row(in + i * cols, in + (i + 1) * cols);
    volatile float past_the_end = row.data()[cols];  // the bug
    (void)past_the_end;
    float s = 0.f;
    for (int64_t j = 0; j < cols; ++j) s += row[j];
    for (int64_t j = 0; j < cols; ++j) {
      const float v = row[j];
      const float r = v > 0.f ? v : (v != v ? v : 0.f);
      o[i * cols + j] = r * 2.f + s;
    }
  }
  return out;
}
"""

ext = load_inline("kcv_control_rowsum_heap_overflow", cpp_sources=source, functions=["relu2_plus_rowsum"],
                  verbose=False)


class ModelNew(nn.Module):
    def forward(self, x):
        return ext.relu2_plus_rowsum(x)
