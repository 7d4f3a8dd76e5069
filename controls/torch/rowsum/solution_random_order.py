# Negative control (determinism): sums each row in a random column order. Every order is a
# legitimate fp32 evaluation (numerics passes); the bits differ from run to run.
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def forward(self, x):
        perm = torch.randperm(x.shape[1], generator=torch.Generator().manual_seed(int.from_bytes(__import__("os").urandom(4), "little")))
        return torch.relu(x) * 2.0 + x[:, perm].sum(dim=1, keepdim=True)
