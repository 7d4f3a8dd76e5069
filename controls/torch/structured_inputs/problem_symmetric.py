# KernelBench-format problem written for kcv's tests, shaped like KernelBench's level1/13 (matmul
# for symmetric matrices): get_inputs() makes A symmetric, so a kernel may read one triangle of it.
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, A, B):
        return torch.matmul(A, B)


N = 48


def get_inputs():
    A = torch.randn(N, N)
    return [(A + A.T) / 2, torch.randn(N, N)]


def get_init_inputs():
    return []
