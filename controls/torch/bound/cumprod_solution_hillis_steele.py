# Positive control (issue 27): the product scan as a parallel (Hillis-Steele) fp32 scan. On wide-
# range values it gives NaN (Inf * 0) where float64 gives 0, an order-dependent class (DESIGN
# section 4 (c)). Must pass every gate.
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
        return orders.hillis_steele(x, self.dim, torch.mul)
