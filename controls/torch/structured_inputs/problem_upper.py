# KernelBench-format problem written for kcv's tests, shaped like KernelBench's level1/14
# (matmul for upper triangular matrices): get_inputs() makes A and B upper triangular, so a kernel
# may read only their upper triangles (docs/kernelbench.md, "Inputs keep their structure").
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, A, B):
        return torch.triu(torch.matmul(A, B))


N = 48


def get_inputs():
    return [torch.triu(torch.randn(N, N)), torch.triu(torch.randn(N, N))]


def get_init_inputs():
    return []
