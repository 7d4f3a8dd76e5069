# Positive control (issue 27): each row's squared differences summed one term at a time in fp32,
# then the row sums one at a time: a legitimate order whose rounding on "all equal" inputs is far
# from eager's near-exact tree sum. Passes every gate on the derived bound; under
# KCV_TORCH_BOUND=calibrated (32 x eager's own error) it fails values there, at 3 to 16 times the
# bound (the failure of torch.compile's split reduction, reproduced on cpu).
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def forward(self, p, t):
        d = (p - t).reshape(p.shape[0], -1)
        sq = d * d
        rows = torch.zeros(sq.shape[0])
        for k in range(sq.shape[1]):
            rows = rows + sq[:, k]
        total = torch.zeros(())
        for k in range(rows.shape[0]):
            total = total + rows[k]
        return total / d.numel()
