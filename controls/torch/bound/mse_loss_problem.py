# KernelBench-format problem written for kcv's tests (issue 27): the mean squared error over 2^19
# terms, as KernelBench's 94_MSELoss. On "all equal" inputs fp32 eager is nearly exact, and the bound
# calibrated on it rejected torch.compile's split reduction at 3.97x (the issue); the derived bound
# does not depend on eager's luck.
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, predictions, targets):
        return torch.mean((predictions - targets) ** 2)


def get_inputs():
    return [torch.randn(batch_size, length), torch.randn(batch_size, length)]


batch_size = 128
length = 4096


def get_init_inputs():
    return []
