# Wrong: the triangular product of solution_upper_skips_zero_products.py on inputs whose NaN/Inf
# were replaced by finite numbers first (torch.nan_to_num): a NaN in A[i][k] never reaches C[i][j],
# j >= k, where it must. The nonfinite gate must fail it in the problem's own calling convention.
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, A, B):
        A, B = torch.nan_to_num(A), torch.nan_to_num(B)
        n = A.shape[-1]
        idx = torch.arange(n, device=A.device)
        i, j = idx.view(n, 1, 1), idx.view(1, 1, n)
        out = torch.zeros(n, n, dtype=A.dtype, device=A.device)
        for k0 in range(0, n, 16):
            k = idx[k0:k0 + 16].view(1, -1, 1)
            prod = A[:, k0:k0 + 16].unsqueeze(2) * B[k0:k0 + 16, :].unsqueeze(0)
            keep = (i <= k) & (k <= j)
            out = out + torch.where(keep, prod, torch.zeros((), dtype=A.dtype, device=A.device)).sum(dim=1)
        return out
