# Positive control: log-softmax by hand (max-shifted), then the mean of the picked entries.
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def forward(self, predictions, targets):
        m = predictions.max(dim=1, keepdim=True).values
        z = predictions - m
        logp = z - torch.log(torch.exp(z).sum(dim=1, keepdim=True))
        return -logp.gather(1, targets.long().unsqueeze(1)).mean()
