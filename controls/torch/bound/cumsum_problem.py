# KernelBench-format problem written for kcv's tests (issue 27): an inclusive scan along dim 1, as
# KernelBench's 89_cumsum, at a size a cpu run judges in seconds.
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.dim = dim

    def forward(self, x):
        return torch.cumsum(x, dim=self.dim)


batch_size = 8
length = 2048
dim = 1


def get_inputs():
    return [torch.randn(batch_size, length)]


def get_init_inputs():
    return [dim]
