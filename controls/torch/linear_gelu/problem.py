# KernelBench-format problem written for kcv's tests: y = gelu(x W^T + b), with weights drawn by
# nn.Linear under the init seed (ModelNew must draw the same ones).
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, in_features, out_features):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)

    def forward(self, x):
        return torch.nn.functional.gelu(self.linear(x))


batch_size = 8
in_features = 70
out_features = 24


def get_inputs():
    return [torch.randn(batch_size, in_features)]


def get_init_inputs():
    return [in_features, out_features]
