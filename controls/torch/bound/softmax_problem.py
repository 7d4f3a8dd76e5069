# KernelBench-format problem written for kcv's tests (issue 27): softmax over dim 1, as KernelBench's
# 23_Softmax, at a size a cpu run judges in seconds.
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return torch.softmax(x, dim=1)


batch_size = 16
length = 4096


def get_inputs():
    return [torch.randn(batch_size, length)]


def get_init_inputs():
    return []
