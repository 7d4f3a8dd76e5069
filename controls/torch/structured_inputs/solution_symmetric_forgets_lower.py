# Buggy: reads A's upper triangle and forgets the mirrored lower one. Wrong on the problem's own
# inputs.
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, A, B):
        return torch.matmul(torch.triu(A), B)
