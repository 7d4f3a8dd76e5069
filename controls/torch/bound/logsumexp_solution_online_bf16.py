# Negative control (numerics): the online logsumexp with each lane's running sum kept in bf16. The
# derived bound must reject it.
import os
import sys

import torch
import torch.nn as nn

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import orders  # noqa: E402


class ModelNew(nn.Module):
    def forward(self, x):
        return orders.online_logsumexp(x, 1, torch.bfloat16)
