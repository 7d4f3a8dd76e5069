#!/usr/bin/env python3
"""Where a KernelBench solution's build spends its CPU: each solution imported (so built by its own
load_inline call) in a fresh TORCH_EXTENSIONS_DIR, its CPU seconds (the build's processes,
through wait4), ninja's time per target (the .cpp half, the .cu half, the link) and nvcc's time
per phase (nvcc --time). With --pch, each is built again with load_inline(use_pch=True), after one
build that makes torch's precompiled torch/extension.h (a one-time cost, reported apart).

Usage (GPU machine, nothing else running): compile_cost.py OUT.md SOLUTION.py... [--pch]
The builds of one variant run side by side, one process each; a build uses 1-2 cores."""

import argparse
import collections
import csv
import os
import subprocess
import sys
import tempfile
import time

# The child: patch load_inline, then import the solution, which builds it.
CHILD = r"""
import importlib.util, sys
import torch.utils.cpp_extension as ext
solution, nvcc_time, pch = sys.argv[1], sys.argv[2], sys.argv[3] == "1"
orig = ext.load_inline
def patched(*a, **kw):
    kw["extra_cuda_cflags"] = list(kw.get("extra_cuda_cflags") or []) + ["--time", nvcc_time]
    if pch:
        kw["use_pch"] = True
    return orig(*a, **kw)
ext.load_inline = patched
spec = importlib.util.spec_from_file_location("solution", solution)
mod = importlib.util.module_from_spec(spec)
spec.loader.exec_module(mod)
"""


def start(solution, workdir, pch):
    os.makedirs(workdir, exist_ok=True)
    env = dict(os.environ, TORCH_EXTENSIONS_DIR=os.path.join(workdir, "ext"))
    log = open(os.path.join(workdir, "build.log"), "w")
    t0 = time.monotonic()
    proc = subprocess.Popen([sys.executable, "-c", CHILD, solution, os.path.join(workdir, "nvcc-time.csv"),
                             "1" if pch else "0"], env=env, stdout=log, stderr=subprocess.STDOUT)
    return proc, t0


def finish(proc, t0, workdir):
    _, status, ru = os.wait4(proc.pid, 0)
    wall = time.monotonic() - t0
    targets = {}
    for root, _, files in os.walk(os.path.join(workdir, "ext")):
        if ".ninja_log" in files:
            for line in open(os.path.join(root, ".ninja_log")):
                if line.startswith("#"):
                    continue
                start_ms, end_ms, _, target = line.split("\t")[:4]
                kind = ("link" if target.endswith(".so") else "cu" if ".cuda." in target or target.endswith(".cu.o")
                        else "cpp")
                targets[kind] = targets.get(kind, 0.0) + (int(end_ms) - int(start_ms)) / 1000
    phases = collections.Counter()
    path = os.path.join(workdir, "nvcc-time.csv")
    if os.path.exists(path):
        with open(path) as f:
            for row in csv.reader(f):
                # source file, phase name, input files, output file, arch, tool, time, unit ("ms")
                if len(row) >= 8 and row[-1].strip() == "ms":
                    phases[row[1].strip()] += float(row[-2]) / 1000
    return {"ok": os.waitstatus_to_exitcode(status) == 0, "wall": wall, "cpu": ru.ru_utime + ru.ru_stime,
            "targets": targets, "phases": phases}


def run_variant(solutions, root, pch):
    started = [(s, *start(s, os.path.join(root, f"{i}-{'pch' if pch else 'plain'}"), pch)) for i, s in enumerate(solutions)]
    return [(s, finish(p, t0, os.path.join(root, f"{i}-{'pch' if pch else 'plain'}"))) for i, (s, p, t0) in enumerate(started)]


def table(title, results):
    phase_names = sorted({k for _, r in results for k in r["phases"]})
    def row(cells):
        return "| " + " | ".join(cells) + " |"
    head = ["solution", "ok", "wall s", "CPU s", "cpp s", "cu s", "link s"] + [f"nvcc {p} s" for p in phase_names]
    lines = [f"## {title}", "", row(head), row(["---"] * len(head))]
    for s, r in results:
        t = r["targets"]
        lines.append(row([os.path.relpath(s), str(r["ok"]), f"{r['wall']:.1f}", f"{r['cpu']:.1f}"] +
                         [f"{t.get(k, 0):.1f}" for k in ("cpp", "cu", "link")] +
                         [f"{r['phases'].get(p, 0):.1f}" for p in phase_names]))
    return lines + [""]


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("out")
    ap.add_argument("solutions", nargs="+")
    ap.add_argument("--pch", action="store_true")
    a = ap.parse_args()
    for s in a.solutions:
        if not os.path.isfile(s):
            sys.exit(f"compile_cost.py: no such solution file: {s}")
    root = tempfile.mkdtemp(prefix="compile-cost-")
    solutions = [os.path.abspath(s) for s in a.solutions]
    lines = ["# Build cost of KernelBench solutions", "",
             f"{os.cpu_count()} cores; each variant's builds ran side by side; build dirs under {root}.", ""]
    lines += table("load_inline as the solution calls it", run_variant(solutions, root, pch=False))
    if a.pch:
        lines += table("one build that also makes torch's precompiled torch/extension.h (one-time)",
                       [(solutions[0], finish(*start(solutions[0], os.path.join(root, "warm-pch"), True),
                                              os.path.join(root, "warm-pch")))])
        lines += table("load_inline(use_pch=True), the precompiled header made", run_variant(solutions, root, pch=True))
    open(a.out, "w").write("\n".join(lines))
    print("\n".join(lines))


if __name__ == "__main__":
    main()
