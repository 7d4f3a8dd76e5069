# Negative control (inputs_intact): applies relu to its input in place. The output is right.
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def forward(self, x):
        s = x.sum(dim=1, keepdim=True)
        x.relu_()
        return x * 2.0 + s
