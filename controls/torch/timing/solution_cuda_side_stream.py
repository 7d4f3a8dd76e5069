# Timing control, cuda (docs/timing.md): KernelBench's adversarial side-stream kernel. The matmul
# runs on a stream of its own that the caller's stream never waits for, so CUDA events on the
# caller's stream (KernelBench's timer) close before the work is done: a large "speedup". It passes
# numerics (kcv's worker synchronizes the whole device before reading outputs; the concurrency gate
# would fail it) and is timed with torch.cuda.synchronize(): its speedup is about 1.
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self.stream = None

    def forward(self, a, b):
        if self.stream is None:
            self.stream = torch.cuda.Stream()
        self.stream.wait_stream(torch.cuda.current_stream())  # its inputs are ready there
        with torch.cuda.stream(self.stream):
            out = torch.matmul(a, b)
        return out
