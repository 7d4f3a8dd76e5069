# Negative control (nonfinite): relu by select on x > 0, so relu(NaN) becomes 0 and a NaN in x
# vanishes from its own element (the row sum still carries it elsewhere).
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def forward(self, x):
        s = torch.nan_to_num(x).sum(dim=1, keepdim=True)
        return torch.where(x > 0, x, torch.zeros_like(x)) * 2.0 + s
