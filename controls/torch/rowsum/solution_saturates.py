# Negative control (values): clamps its inputs to [-1000, 1000] "for stability". Right for
# N(0,1) inputs; wrong once inputs are scaled by 1e4.
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def forward(self, x):
        x = x.clamp(-1000.0, 1000.0)
        return torch.relu(x) * 2.0 + x.sum(dim=1, keepdim=True)
