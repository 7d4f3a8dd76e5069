# Negative control (layout): reads its input's storage as if it were contiguous row-major (a raw
# pointer kernel in Python). Right for contiguous inputs; wrong for strided ones.
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def forward(self, x):
        flat = torch.as_strided(x, (x.numel(),), (1,), x.storage_offset())
        x = flat.view(x.shape)
        return torch.relu(x) * 2.0 + x.sum(dim=1, keepdim=True)
