# Negative control (cuda, sanitizer): the ok kernel without its `i < rows` guard, so the last
# block's spare threads write past the end of the output. The rows that exist are right; the
# writes land in the caching allocator's next block, which only compute-sanitizer memcheck (run
# with that allocator off) reports. The kernel is in cuda_rowsum.py beside this file.
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import cuda_rowsum  # noqa: E402

ModelNew = cuda_rowsum.model_new("tail_overrun")
