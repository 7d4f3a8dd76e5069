# Negative control (numerics): the row sum accumulates in bfloat16. KernelBench's allclose
# (atol=rtol=1e-2) accepts it at the nominal shape; the fp64 reference does not.
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def forward(self, x):
        s = x.bfloat16().sum(dim=1, keepdim=True).float()
        return torch.relu(x) * 2.0 + s
