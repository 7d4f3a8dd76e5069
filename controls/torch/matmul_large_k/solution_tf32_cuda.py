# Negative control (numerics), cuda only: the matmul on TF32 tensor cores (cuBLAS with
# allow_tf32), the flag restored after the call. On cpu it is a plain fp32 matmul.
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, A, B):
        prev = torch.backends.cuda.matmul.allow_tf32
        torch.backends.cuda.matmul.allow_tf32 = True
        try:
            return torch.matmul(A, B)
        finally:
            torch.backends.cuda.matmul.allow_tf32 = prev
