#!/usr/bin/env python3
"""The derived bound's run against the plain float64 forward of one KernelBench problem, on the CPU
(kcv's reference server's own code, adapters/torch): CPU and wall seconds of each, then a cProfile of
a second bound run. Usage: bound_run_time.py PROBLEM.py [symbol=value ...] (e.g. batch_size=2)."""
import cProfile
import os
import pstats
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "adapters", "torch"))
import torch  # noqa: E402
import kcv_torch_bound  # noqa: E402
import kcv_torch_reference  # noqa: E402


def timed(what, f):
    cpu, wall = time.process_time(), time.time()
    out = f()
    print(f"{what}: cpu {time.process_time() - cpu:.2f} s, wall {time.time() - wall:.2f} s", flush=True)
    return out


def main():
    torch.set_num_threads(int(os.environ.get("THREADS", "2")))
    server = kcv_torch_reference.Server(sys.argv[1], "cpu", 1)
    sizes = {k: int(v) for k, v in (a.split("=") for a in sys.argv[2:])}
    server.describe(sizes)
    args32 = server.args_from(sizes, server.inputs(sizes, 5))
    args64 = [x.double() if x.is_floating_point() else x for x in args32]
    m32, m64 = server.models_at(sizes)
    with torch.no_grad():
        timed("plain float64 forward", lambda: m64(*args64))
        timed("plain float32 forward", lambda: m32(*args32))
    _, _, unruled = timed("the bound's run (first)", lambda: kcv_torch_bound.run(m64, args64))
    print(f"ops without a rule: {dict(unruled) or 'none'}")
    prof = cProfile.Profile()
    prof.enable()
    timed("the bound's run (second)", lambda: kcv_torch_bound.run(m64, args64))
    prof.disable()
    pstats.Stats(prof).sort_stats("tottime").print_stats(8)


if __name__ == "__main__":
    main()
