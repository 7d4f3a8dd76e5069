# Negative control (shapes): the row sum reads the first 33 columns, the problem's nominal dim.
# Right at the nominal shape; a dropped tail at any larger dim.
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def forward(self, x):
        return torch.relu(x) * 2.0 + x[:, :33].sum(dim=1, keepdim=True)
