# Positive control: the same nn.Linear parameters (so the same weights), the product written out
# as a broadcast multiply and a sum (another legitimate fp32 order), gelu from its erf form.
import math

import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self, in_features, out_features):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)

    def forward(self, x):
        w, b = self.linear.weight, self.linear.bias
        z = (x.unsqueeze(1) * w.unsqueeze(0)).sum(dim=2) + b
        return 0.5 * z * (1.0 + torch.erf(z / math.sqrt(2.0)))
