# Legitimate: reads only the upper triangles of A and B, as the problem promises them (the
# leaderboard's level1/14 kernels loop k from row to column). Wrong on inputs that are not
# triangular, which the problem never gives.
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, A, B):
        return torch.triu(torch.matmul(torch.triu(A), torch.triu(B)))
