# Negative timing control: caches its result by input address and shape and returns it whenever
# they come back, whatever the contents. Timed on repeated inputs it would cost a dictionary lookup.
# It fails the stateless gate, so it never reaches timing (docs/timing.md).
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self.cache = {}

    def forward(self, a, b):
        key = (a.data_ptr(), b.data_ptr(), tuple(a.shape), tuple(b.shape))
        if key not in self.cache:
            self.cache[key] = torch.matmul(a, b)
        return self.cache[key].clone()
