# Negative control (numerics): the split reduction's partials as running sums in bf16 and their sums
# in bf16. The derived bound must reject it.
import os
import sys

import torch
import torch.nn as nn

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import orders  # noqa: E402


class ModelNew(nn.Module):
    def forward(self, p, t):
        d = p - t
        return orders.split_sum((d * d).reshape(-1), 0, 64, torch.bfloat16) / d.numel()
