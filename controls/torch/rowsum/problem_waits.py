# KernelBench-format problem written for kcv's tests (cuda "waits" control, controls.cmake): the
# rowsum problem (problem.py), plus 1 on every output unless the process that runs Model, kcv's
# reference server, waits for the GPU by blocking (gpu_waits.py). With a solution that adds
# nothing, numerics passes only if the reference server set CU_CTX_SCHED_BLOCKING_SYNC.
import os
import sys

import torch
import torch.nn as nn

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gpu_waits  # noqa: E402


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        y = torch.relu(x) * 2.0 + x.sum(dim=1, keepdim=True)
        return y + (gpu_waits.penalty() if x.is_cuda else 0.0)


batch_size = 4
dim = 33


def get_inputs():
    return [torch.randn(batch_size, dim)]


def get_init_inputs():
    return []
