# Wrong: reads NaN and ±Inf as finite numbers (torch.nan_to_num) before the product, so a NaN in
# A[i][k] never reaches C[i][j], j >= k, where it must. The nonfinite gate must fail it in the
# problem's own calling convention, beside the kernels that legitimately skip the products with
# promised zeros (solution_upper_skips_zero_products.py).
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, A, B):
        return torch.triu(torch.matmul(torch.nan_to_num(A), torch.nan_to_num(B)))
