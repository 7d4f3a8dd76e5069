# KernelBench-format problem written for kcv's tests (issue 27): a sum over dim 1, kept, as
# KernelBench's 47_Sum_reduction_over_a_dimension.
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.dim = dim

    def forward(self, x):
        return torch.sum(x, dim=self.dim, keepdim=True)


batch_size = 16
length = 4096
dim = 1


def get_inputs():
    return [torch.randn(batch_size, length)]


def get_init_inputs():
    return [dim]
