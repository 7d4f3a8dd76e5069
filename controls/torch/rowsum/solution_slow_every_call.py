# Negative control (compile grace, issue 21 item 2): right, but every call takes 4 s, not only a
# first call at a shape. The tests run it with --timeout 2: the first call at a shape is within
# its compile grace, the next one at that shape is not, and must be TIMEOUT.
import time

import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def forward(self, x):
        time.sleep(4)
        return torch.relu(x) * 2.0 + x.sum(dim=1, keepdim=True)
