# KernelBench-format problem written for kcv's tests (issue 27, an op the first controls did not
# name): the mean over the batch of 1 - cos(p, t), as KernelBench's 97_CosineSimilarityLoss. Each
# cosine is a dot product and two norms over 4096 terms; the loss a mean of 128 of them.
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, predictions, targets):
        cos = torch.nn.functional.cosine_similarity(predictions, targets, dim=1)
        return torch.mean(1 - cos)


def get_inputs():
    return [torch.randn(batch_size, length), torch.randn(batch_size, length)]


batch_size = 128
length = 4096


def get_init_inputs():
    return []
