# The model of solution_split.py (a solution split across modules): the row sum taken in reverse
# order, as solution_ok.py.
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def forward(self, x):
        return torch.clamp(x, min=0.0) * 2.0 + x.flip(1).sum(dim=1, keepdim=True)
