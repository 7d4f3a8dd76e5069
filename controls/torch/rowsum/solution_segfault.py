# Hostile control: dereferences a null pointer (through ctypes) in the middle of a call. The gate
# reports CRASH with the signal; the verifier carries on.
import ctypes

import torch.nn as nn


class ModelNew(nn.Module):
    def forward(self, x):
        return ctypes.c_int.from_address(8).value
