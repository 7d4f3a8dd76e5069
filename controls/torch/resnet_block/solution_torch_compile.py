# Positive control (cuda, torch >= 2; issue 27): the problem's own network under torch.compile:
# Inductor's Triton kernels (split reductions, parallel scans, other fusions) are legitimate fp32
# orders and must pass every gate but sanitizer (Triton under compute-sanitizer is a run of its own)
# on the derived bound. Skipped, saying so, where torch has no torch.compile (Debian's 1.13).
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self, channels):
        super().__init__()
        # The problem's own layers, declared in the same order (so the same weights), compiled.
        self.conv1 = nn.Conv2d(channels, channels, 3, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(channels)
        self.conv2 = nn.Conv2d(channels, channels, 3, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(channels)
        self.f = torch.compile(self._forward, dynamic=False)

    def _forward(self, x):
        y = torch.relu(self.bn1(self.conv1(x)))
        return torch.relu(self.bn2(self.conv2(y)) + x)

    def forward(self, x):
        return self.f(x)
