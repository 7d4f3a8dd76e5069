"""Compiles and autotunes FLA's chunk_gla (Triton) at the sizes kcv's gates will call it with, into
the Triton cache that solution_fla.py points kcv's workers at, so that no gate's call spends minutes
in Triton's compiler and autotuner (kcv's per-call --timeout; every worker has a fresh HOME).
glr's extension is built before the gates too (device_gates.sh): both start the gates compiled.

    python3 warm_fla.py I N      # this process takes every N-th point from the I-th

The points follow kcv's KernelBench sweep of problem.py (docs/kernelbench.md): each symbol through
1, 3, 13, 127 and nominal±1 (within [1, nominal+1]) with the others nominal, all symbols at 1 and
at 3, and the sanitizer's clipped sizes (2, 32, 2, 32); f32 and bf16. One call per distinct
(head size, chunk size from T, H, B): Triton does not specialize on T itself.
"""
import importlib.util
import os
import sys
import time

import torch

HERE = os.path.dirname(os.path.abspath(__file__))


def points():
    B, T, H, D = 2, 256, 2, 64
    pts = set()
    for d in (1, 3, 13, 63, 64, 65):
        pts.add((B, T, H, d))
    for t in (1, 3, 13, 127, 255, 257):
        pts.add((B, t, H, D))
    for h in (1, 3):
        pts.add((B, T, h, D))
    for b in (1, 3):
        pts.add((b, T, H, D))
    pts.update({(1, 1, 1, 1), (3, 3, 3, 3), (2, 32, 2, 32)})
    # what Triton specializes or autotunes on: the head size, the chunk size FLA picks from T, H,
    # and B (chunk_local_cumsum's autotuning key)
    by_key = {}
    for (b, t, h, d) in sorted(pts):
        bt = min(64, max(16, 1 << max(0, (t - 1).bit_length())))
        by_key.setdefault((d, bt, h, b), (b, t, h, d))
    return sorted(by_key.values())


def main():
    i, n = int(sys.argv[1]), int(sys.argv[2])
    spec = importlib.util.spec_from_file_location("warm_solution_fla", os.path.join(HERE, "solution_fla.py"))
    sol = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(sol)
    model = sol.ModelNew().cuda()
    todo = [(p, dt) for p in points() for dt in (torch.float32, torch.bfloat16)][i::n]
    for (b, t, h, d), dt in todo:
        t0 = time.time()
        q, k, v = (torch.randn(b, t, h, d, device="cuda").to(dt) for _ in range(3))
        gk = torch.randn(b, t, h, d, device="cuda")
        h0 = torch.randn(b, h, d, d, device="cuda")
        model(q, k, v, gk, h0)
        torch.cuda.synchronize()
        print(f"warm_fla {i}/{n}: B={b} T={t} H={h} D={d} {dt}: {time.time() - t0:.1f} s "
              f"(TRITON_CACHE_DIR={os.environ.get('TRITON_CACHE_DIR')})", flush=True)


if __name__ == "__main__":
    main()
