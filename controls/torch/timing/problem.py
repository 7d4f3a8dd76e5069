# KernelBench-format problem for kcv's timing controls (docs/timing.md): C = A @ B, fp32, large
# enough on a cpu core that a call costs milliseconds (a thread's start costs microseconds).
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, a, b):
        return torch.matmul(a, b)


M = 384
K = 384
N = 384


def get_inputs():
    return [torch.randn(M, K), torch.randn(K, N)]


def get_init_inputs():
    return []
