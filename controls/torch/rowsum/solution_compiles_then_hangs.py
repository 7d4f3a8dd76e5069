# Negative control (compile grace, issue 21 item 2): compiles like solution_compiles_per_shape.py
# (6 s on its first call at each new shape), then never returns from its third call in a process,
# a shape it has already compiled. The grace is for a first call at a shape only: that call must
# be TIMEOUT after the per-call timeout.
import time

import torch
import torch.nn as nn

_compiled = set()
_calls = [0]


class ModelNew(nn.Module):
    def forward(self, x):
        _calls[0] += 1
        key = (tuple(x.shape), tuple(x.stride()), x.dtype)
        if key not in _compiled:
            time.sleep(6)
            _compiled.add(key)
        elif _calls[0] >= 3:
            while True:
                time.sleep(1)
        return torch.relu(x) * 2.0 + x.sum(dim=1, keepdim=True)
