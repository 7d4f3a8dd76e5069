# Positive control (issue 27): the sum of xlogy(t, t) - t*log p as a split reduction in fp32 (32
# partials, pairwise), divided by the batch. Must pass every gate.
import os
import sys

import torch
import torch.nn as nn

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import orders  # noqa: E402


class ModelNew(nn.Module):
    def forward(self, p, t):
        terms = torch.xlogy(t, t) - t * torch.log(p)  # as torch's kl_div: 0 where t == 0, NaN kept
        return orders.split_sum(terms.reshape(-1), 0, 32) / p.shape[0]
