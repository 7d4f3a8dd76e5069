# KernelBench-format problem written for kcv's tests, shaped like KernelBench's level1/15
# (matmul for lower triangular matrices): get_inputs() makes A and B lower triangular.
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, A, B):
        return torch.tril(torch.matmul(A, B))


N = 48


def get_inputs():
    return [torch.tril(torch.randn(N, N)), torch.tril(torch.randn(N, N))]


def get_init_inputs():
    return []
