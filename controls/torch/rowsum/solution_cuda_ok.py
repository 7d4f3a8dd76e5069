# Positive control (cuda): a CUDA kernel built with load_inline that launches on torch's current
# stream, makes strided inputs contiguous, propagates NaN and handles empty tensors.
# The kernel is in cuda_rowsum.py beside this file.
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import cuda_rowsum  # noqa: E402

ModelNew = cuda_rowsum.model_new("ok")
