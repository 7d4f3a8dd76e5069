# Legitimate: forms only the products the promised lower triangles leave nonzero, C[i][j] = sum over
# k = j..i of A[i][k]·B[k][j] (the leaderboard's level1/15 kernels); see
# solution_upper_skips_zero_products.py.
import torch
import torch.nn as nn


def skip_zero_products(A, B, keep):
    n = A.shape[-1]
    idx = torch.arange(n, device=A.device)
    i, j = idx.view(n, 1, 1), idx.view(1, 1, n)
    out = torch.zeros(n, n, dtype=A.dtype, device=A.device)
    for k0 in range(0, n, 16):
        k = idx[k0:k0 + 16].view(1, -1, 1)
        prod = A[:, k0:k0 + 16].unsqueeze(2) * B[k0:k0 + 16, :].unsqueeze(0)
        out = out + torch.where(keep(i, k, j), prod, torch.zeros((), dtype=A.dtype, device=A.device)).sum(dim=1)
    return out


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, A, B):
        return skip_zero_products(A, B, lambda i, k, j: (j <= k) & (k <= i))
