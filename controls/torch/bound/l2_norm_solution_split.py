# Positive control (issue 27): the sum of squares as a split reduction in fp32 (64 partials,
# pairwise). Must pass every gate.
import os
import sys

import torch
import torch.nn as nn

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import orders  # noqa: E402


class ModelNew(nn.Module):
    def forward(self, x):
        return x / torch.sqrt(orders.split_sum(x * x, 1, 64, keepdim=True))
