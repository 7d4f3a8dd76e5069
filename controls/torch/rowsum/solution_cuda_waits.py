# Positive control (cuda) of kcv's torch worker, not of a candidate: the `ok` CUDA kernel
# (cuda_rowsum.py), plus 1 on every output unless this worker process waits for the GPU by
# blocking (gpu_waits.py). Passes numerics only if kcv's worker set CU_CTX_SCHED_BLOCKING_SYNC.
import os
import sys

import torch.nn as nn

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import cuda_rowsum  # noqa: E402
import gpu_waits  # noqa: E402

Ok = cuda_rowsum.model_new("ok")


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self.ok = Ok()

    def forward(self, x):
        y = self.ok(x)
        return y + gpu_waits.penalty()
