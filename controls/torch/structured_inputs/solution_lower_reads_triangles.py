# Legitimate: reads only the lower triangles of A and B, as the problem promises them.
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, A, B):
        return torch.tril(torch.matmul(torch.tril(A), torch.tril(B)))
