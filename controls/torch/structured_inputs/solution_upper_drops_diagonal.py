# Buggy: its k loop starts one past the row, so A's diagonal never enters the sum. Wrong on the
# problem's own inputs.
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, A, B):
        return torch.triu(torch.matmul(torch.triu(A, 1), torch.triu(B)))
