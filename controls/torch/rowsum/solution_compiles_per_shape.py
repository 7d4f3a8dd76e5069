# Positive control (compile grace, issue 21 item 2): right, but its first call at each new input
# shape, strides and dtype in a process takes 6 s, as a torch.compile'd Model's does while
# Inductor compiles (a stand-in: torch 1.13 has no torch.compile). The tests run it with
# --timeout 2: every such call outlasts the per-call timeout and must be given the compile grace,
# and the evidence says which call needed it. Any later call is quick.
import time

import torch
import torch.nn as nn

_compiled = set()  # per process, as a JIT's cache is


class ModelNew(nn.Module):
    def forward(self, x):
        key = (tuple(x.shape), tuple(x.stride()), x.dtype)
        if key not in _compiled:
            time.sleep(6)
            _compiled.add(key)
        return torch.relu(x) * 2.0 + x.sum(dim=1, keepdim=True)
