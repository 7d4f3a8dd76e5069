# Negative control (coverage): computes the whole answer, keeps all but its last column, frees it
# and allocates its output with torch.empty_like, which glibc's malloc tends to hand back the block
# just freed: the last column is never written, yet holds the right values in most runs.
# kcv's allocation fill (kcv_torch_worker.py) puts the call's poison in every fresh block, so the
# unwritten column shows in every run.
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def forward(self, x):
        full = torch.relu(x) * 2.0 + x.sum(dim=1, keepdim=True)
        kept = full[:, :-1].clone()
        del full
        out = torch.empty_like(x)
        out[:, :-1] = kept
        return out
