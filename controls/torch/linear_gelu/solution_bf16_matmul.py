# Negative control (numerics): the matmul in bfloat16 (fp32 out). KernelBench's allclose
# (atol=rtol=1e-2) accepts it at the nominal shape; the fp64 reference does not.
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self, in_features, out_features):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)

    def forward(self, x):
        w, b = self.linear.weight, self.linear.bias
        z = (x.bfloat16() @ w.bfloat16().t()).float() + b
        return torch.nn.functional.gelu(z)
