# Positive control (cuda, torch >= 2; issue 27): the problem's own loss under torch.compile:
# Inductor's Triton kernels (split reductions, parallel scans, other fusions) are legitimate fp32
# orders and must pass every gate but sanitizer (Triton under compute-sanitizer is a run of its own)
# on the derived bound. Skipped, saying so, where torch has no torch.compile (Debian's 1.13).
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self, margin):
        super().__init__()
        self.loss_fn = torch.compile(nn.TripletMarginLoss(margin=margin), dynamic=False)

    def forward(self, a, p, n):
        return self.loss_fn(a, p, n)
