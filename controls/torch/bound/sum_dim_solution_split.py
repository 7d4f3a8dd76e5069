# Positive control (issue 27): a split reduction in fp32, 64 partial sums then their pairwise sum
# (Inductor's order for long rows). Must pass every gate.
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
        return orders.split_sum(x, self.dim, 64, keepdim=True)
