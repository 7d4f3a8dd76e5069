# Negative control (cuda, concurrency): the ok kernel launched on the legacy default stream, as
# the KernelBench leaderboard solutions in bench/results/kernelbench-leaderboard.md do. Inputs written
# on torch's current stream just before the call are not there yet when it reads them.
# The kernel is in cuda_rowsum.py beside this file.
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import cuda_rowsum  # noqa: E402

ModelNew = cuda_rowsum.model_new("default_stream")
