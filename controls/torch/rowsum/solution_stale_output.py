# Negative control (coverage): allocates its output with torch.empty_like and never writes the
# last column, as if the allocator's memory held the answer (or zeros).
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def forward(self, x):
        y = torch.relu(x) * 2.0 + x.sum(dim=1, keepdim=True)
        out = torch.empty_like(x)
        out[:, :-1] = y[:, :-1]
        return out
