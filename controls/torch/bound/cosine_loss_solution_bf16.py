# Negative control (numerics): the sequential kernel's three running sums kept in bf16. The derived
# bound must reject it.
import os
import sys

import torch
import torch.nn as nn

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import orders  # noqa: E402


class ModelNew(nn.Module):
    def forward(self, p, t):
        dot = orders.running_sum(p * t, 1, torch.bfloat16)
        pp = orders.running_sum(p * p, 1, torch.bfloat16)
        tt = orders.running_sum(t * t, 1, torch.bfloat16)
        cos = dot / torch.sqrt(torch.clamp(pp * tt, min=1e-16))
        return torch.mean(1 - cos)
