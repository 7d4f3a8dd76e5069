# KernelBench-format problem written for kcv's tests (issue 27): triplet margin loss (p = 2, eps =
# 1e-6 inside the distance), as KernelBench's 99_TripletMarginLoss (the "all equal"
# failure, 1.53x the calibrated bound under torch.compile).
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, margin):
        super().__init__()
        self.loss_fn = nn.TripletMarginLoss(margin=margin)

    def forward(self, anchor, positive, negative):
        return self.loss_fn(anchor, positive, negative)


batch_size = 64
length = 2048


def get_inputs():
    return [torch.randn(batch_size, length), torch.randn(batch_size, length), torch.randn(batch_size, length)]


def get_init_inputs():
    return [1.0]
