# Negative control (cuda, sanitizer): the ok kernel plus a read of __shared__ memory that another
# warp writes, with no barrier between. Nothing uses the value, so every output is right; only
# compute-sanitizer racecheck sees it.
# The kernel is in cuda_rowsum.py beside this file.
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import cuda_rowsum  # noqa: E402

ModelNew = cuda_rowsum.model_new("shared_race")
