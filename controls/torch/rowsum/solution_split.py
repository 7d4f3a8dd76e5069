# Positive control (cpu): a solution split across modules. ModelNew lives in rowsum_parts.py beside
# this file, imported through this file's own directory, as cuda_ok imports cuda_rowsum.py; it is
# judged against problem_waits.py, which imports gpu_waits.py beside it (its penalty is 0 on cpu).
# kcv's private copies of both directories must carry them (docs/security.md; on the H200 in
# 2026-12 the copy was the file alone: "No module named 'cuda_rowsum'").
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import rowsum_parts  # noqa: E402

ModelNew = rowsum_parts.ModelNew
