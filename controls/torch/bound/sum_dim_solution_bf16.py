# Negative control (numerics): the split reduction with its 64 partials as running sums in bf16 and
# their sums in bf16. The derived bound must reject it.
import os
import sys

import torch
import torch.nn as nn

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import orders  # noqa: E402


class ModelNew(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.dim = dim

    def forward(self, x):
        return orders.split_sum(x, self.dim, 64, torch.bfloat16, keepdim=True)
