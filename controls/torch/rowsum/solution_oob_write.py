# Negative control (bounds): writes four elements just past the end of its input (through a
# strided view over the input's storage). The output is right.
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def forward(self, x):
        y = torch.relu(x) * 2.0 + x.sum(dim=1, keepdim=True)
        if x.is_contiguous():
            past = torch.as_strided(x, (x.numel() + 4,), (1,), x.storage_offset())
            past[x.numel():] = 0.0
        return y
