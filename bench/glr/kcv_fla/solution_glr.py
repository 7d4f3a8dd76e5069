# KernelBench-format solution for problem.py / problem_bf16.py: glr's CUDA kernels through the
# PyTorch op glr_torch.chunk_glr (glr/python/glr_torch), with FLA chunk_gla's arguments. The gate is
# the problem's own expression, in torch, as in solution_fla.py.
# glr_torch is imported from PYTHONPATH (bench/glr/device_gates.sh puts its prebuilt extension
# there), else from this checkout (built on first use).
import os
import sys

import torch
import torch.nn as nn
import torch.nn.functional as F

try:
    import glr_torch
except ImportError:
    repo = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..")
    sys.path.insert(0, os.path.join(repo, "glr", "python", "glr_torch"))
    import glr_torch

glr_torch.extension()  # build or load now, not inside the first timed call


def gate(gk):
    return torch.clamp_min(F.logsigmoid(gk) / 16, -1.0)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, q, k, v, gk, h0):
        o, ht = glr_torch.chunk_glr(q, k, v, gate(gk.float()), initial_state=h0.float(), output_final_state=True)
        return o, ht.to(q.dtype)
