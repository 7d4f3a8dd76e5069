# KernelBench-format problem written for kcv's tests: C = A @ B with a deep reduction (K = 16384)
# and a small output, N(0,1) inputs. Where TF32 pays and a per-element worst-case bound growing
# like K would stop seeing it (issue 21 item 3; docs/population-test.md, "Limits").
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, A, B):
        return torch.matmul(A, B)


M = 32
N = 32
K = 16384


def get_inputs():
    return [torch.randn(M, K), torch.randn(K, N)]


def get_init_inputs():
    return []
