# Positive timing control: an ordinary correct kernel (the same matmul through torch.mm). It passes
# its gates and is timed: sane numbers, a speedup near 1 (docs/timing.md).
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def forward(self, a, b):
        return torch.mm(a, b)
