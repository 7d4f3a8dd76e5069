# Negative control (numerics): A and B rounded to TF32 (10 mantissa bits, ties to even) before an
# fp32 matmul, as a TF32 tensor core reads them; emulated with integer ops, so it is TF32 on any
# backend. The bound calibrated on fp32 eager's own error rejects it at K = 16384 (so does
# KernelBench's allclose, 1e-2, at this depth: errors ~0.04 on values ~100).
import torch
import torch.nn as nn


def tf32(x):
    i = x.contiguous().view(torch.int32)
    i = (i + 0xFFF + ((i >> 13) & 1)) & -8192
    return i.view(torch.float32)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, A, B):
        return torch.matmul(tf32(A), tf32(B))
