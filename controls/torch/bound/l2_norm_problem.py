# KernelBench-format problem written for kcv's tests (issue 27): rows divided by their L2 norm, as
# KernelBench's 39_L2Norm_.
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return x / torch.norm(x, p=2, dim=1, keepdim=True)


batch_size = 16
length = 4096


def get_inputs():
    return [torch.randn(batch_size, length)]


def get_init_inputs():
    return []
