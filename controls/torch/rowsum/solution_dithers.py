# Negative control (determinism; coverage must pass it, issue 27): writes every element, each moved
# by -1, 0 or +1 ulp from a fresh random stream per call, as a kernel with stochastic rounding or
# arrival-order atomics would. Every result is within the error model (numerics passes) and no
# two runs have the same bits: coverage's two runs under the same poison differ, so its evidence
# says nondeterministic, not unwritten; determinism fails.
import os

import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def forward(self, x):
        y = torch.relu(x) * 2.0 + x.sum(dim=1, keepdim=True)
        g = torch.Generator().manual_seed(int.from_bytes(os.urandom(4), "little"))
        step = torch.randint(0, 3, y.shape, generator=g)
        y = torch.where(step == 1, torch.nextafter(y, torch.full_like(y, float("inf"))), y)
        return torch.where(step == 2, torch.nextafter(y, torch.full_like(y, float("-inf"))), y)
