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
        terms = torch.xlogy(t, t) - t * torch.log(p)  # as torch's kl_div: 0 where t == 0, NaN kept
        return orders.split_sum(terms.reshape(-1), 0, 32, torch.bfloat16) / p.shape[0]
