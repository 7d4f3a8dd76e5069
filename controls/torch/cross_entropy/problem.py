# KernelBench-format problem written for kcv's tests: mean cross-entropy of logits [batch, classes]
# against integer targets (a structural input the value kinds never touch); a 0-d output.
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, predictions, targets):
        return torch.nn.functional.cross_entropy(predictions, targets)


batch_size = 16
num_classes = 10


def get_inputs():
    return [torch.randn(batch_size, num_classes), torch.randint(0, num_classes, (batch_size,))]


def get_init_inputs():
    return []
