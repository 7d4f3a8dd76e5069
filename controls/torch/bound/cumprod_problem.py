# KernelBench-format problem written for kcv's tests (issue 27): an inclusive product scan along dim 1,
# as KernelBench's 90_cumprod. On the values gate's wide-range inputs a parallel fp32 scan meets an
# overflowed partial product and an underflowed one (Inf * 0 = NaN) where float64 is finite: the
# derived bound marks such elements free in class (docs/kernelbench.md).
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.dim = dim

    def forward(self, x):
        return torch.cumprod(x, dim=self.dim)


batch_size = 8
length = 1024
dim = 1


def get_inputs():
    return [torch.randn(batch_size, length)]


def get_init_inputs():
    return [dim]
