# Negative control (numerics; issue 27): fp32 products, the K = 16384 reduction split into 64
# slices whose partial sums are kept in bf16 and added in bf16 (a bf16 split-K workspace). The
# derived bound must reject it.
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, A, B):
        k = A.shape[1]
        parts = 64
        per = -(-k // parts)
        acc = None
        for s in range(0, k, per):
            p = torch.matmul(A[:, s:s + per], B[s:s + per]).bfloat16()
            acc = p if acc is None else acc + p
        return acc.float()
