# Legitimate: reads only A's upper triangle and mirrors it, as the problem promises A symmetric.
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, A, B):
        upper = torch.triu(A)
        return torch.matmul(upper + torch.triu(A, 1).transpose(0, 1), B)
