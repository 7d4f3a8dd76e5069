# Timing control, cpu (docs/timing.md): the cpu analogue of KernelBench's side-stream kernel. It
# hands the matmul to a thread of its own and returns the output tensor at once, joining the thread
# only at its next call: timed to its return it looks tens of times faster than the reference. kcv's
# timer stops only once every thread the candidate made has ended or parked, so its speedup is
# about 1. (Its output is raced when read right after the return, so it is gated on inputs_intact
# alone here: the control is about the timer.)
import threading

import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self.pending = None

    def forward(self, a, b):
        if self.pending is not None:
            self.pending.join()  # the previous call's work: joined later
        out = torch.empty(a.shape[0], b.shape[1], dtype=a.dtype)
        self.pending = threading.Thread(target=torch.matmul, args=(a, b), kwargs={"out": out})
        self.pending.start()
        return out
