# KernelBench-format problem written for kcv's tests (issue 27): KL divergence of two row-softmaxed
# distributions, batchmean, as KernelBench's 98_KLDivLoss (the "all equal" failure, 2.18x
# the calibrated bound under torch.compile).
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, predictions, targets):
        return torch.nn.functional.kl_div(torch.log(predictions), targets, reduction="batchmean")


def get_inputs():
    return [torch.randn(batch_size, length).softmax(dim=-1), torch.randn(batch_size, length).softmax(dim=-1)]


batch_size = 64
length = 4096


def get_init_inputs():
    return []
