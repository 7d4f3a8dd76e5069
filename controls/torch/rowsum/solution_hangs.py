# Hostile control: never returns, and ignores SIGTERM and SIGINT. The gate reports TIMEOUT after
# the per-call limit; the verifier kills the worker's process group and carries on.
import signal
import time

import torch.nn as nn


class ModelNew(nn.Module):
    def forward(self, x):
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        while True:
            time.sleep(1)
