# Negative control (values): log-softmax without the max shift. Right for N(0,1) logits;
# exp overflows once the logits are scaled by 1e4.
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def forward(self, predictions, targets):
        logp = predictions - torch.log(torch.exp(predictions).sum(dim=1, keepdim=True))
        return -logp.gather(1, targets.long().unsqueeze(1)).mean()
