# Negative control (numerics): the same Hillis-Steele scan with every partial sum in bf16. The
# derived bound must reject it.
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
        return orders.hillis_steele(x, self.dim, torch.add, torch.bfloat16)
