# Negative control (stateless): remembers its last result by input address and returns it when
# the address comes back, whatever the contents.
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self.cache = {}

    def forward(self, x):
        key = (x.data_ptr(), tuple(x.shape))
        if key not in self.cache:
            self.cache[key] = torch.relu(x) * 2.0 + x.sum(dim=1, keepdim=True)
        return self.cache[key].clone()
