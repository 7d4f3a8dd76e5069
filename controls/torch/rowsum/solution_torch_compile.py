# Positive control (cuda, torch >= 2; compile grace, issue 21 item 2): the problem's own
# computation under torch.compile. Inductor generates and compiles Triton kernels at the first
# call at each new shape and layout (seconds each), past the per-call timeout the test gives
# (--timeout 5); the compile grace covers those calls. Not run on the cpu tests: Debian's torch
# 1.13 has no torch.compile.
import torch
import torch.nn as nn


def _rowsum(x):
    return torch.relu(x) * 2.0 + x.sum(dim=1, keepdim=True)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self.f = torch.compile(_rowsum, dynamic=False)

    def forward(self, x):
        return self.f(x)
