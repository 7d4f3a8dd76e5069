# Negative control (numerics; issue 27): A and B rounded to bf16 (8 mantissa bits) before an fp32
# matmul, as a bf16 tensor-core GEMM reads them. The derived bound must reject it at K = 16384.
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, A, B):
        return torch.matmul(A.bfloat16().float(), B.bfloat16().float())
