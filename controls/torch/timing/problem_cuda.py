# The timing controls' problem at a size where a cuda matmul costs a fraction of a millisecond (an
# H200 without TF32: about 0.3 ms), far above a launch's few microseconds (docs/timing.md).
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, a, b):
        return torch.matmul(a, b)


M = 2048
K = 2048
N = 2048


def get_inputs():
    return [torch.randn(M, K), torch.randn(K, N)]


def get_init_inputs():
    return []
