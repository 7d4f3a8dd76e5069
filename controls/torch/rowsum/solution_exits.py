# Hostile control: ends its own process (os._exit(0), skipping every handler) in the middle of a
# call. The gate reports CRASH; the verifier carries on.
import os

import torch.nn as nn


class ModelNew(nn.Module):
    def forward(self, x):
        os._exit(0)
