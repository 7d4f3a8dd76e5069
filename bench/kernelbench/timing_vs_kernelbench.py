#!/usr/bin/env python3
"""`kcv time` against KernelBench's own timing (issue 22 target; docs/timing.md), on a GPU machine.

    python3 bench/kernelbench/timing_vs_kernelbench.py --kernelbench KB_CHECKOUT [--kcv build/kcv]
        [--python PY] [--trials 100] [--reps 100] [--gates numerics] PROBLEM.py SOLUTION.py [...]

Pairs are given as PROBLEM SOLUTION, PROBLEM SOLUTION, ... For each pair it times Model and ModelNew
with KernelBench's own timer (the checkout's time_execution_with_cuda_event: CUDA events on the
current stream, the same inputs every trial; recent versions flush L2 (256 MB); imported from
kernelbench/timing.py,
kernelbench/eval.py or src/eval.py, whichever the checkout has) in this process, then runs
`kcv time PROBLEM SOLUTION --backend cuda --json` and prints one markdown row per pair: both medians
(KernelBench's mean too), both speedups and kcv's "returned" speedup. Agreement "within noise" means
kcv's candidate median within [p10, p90] of KernelBench's samples' spread, or within 10%, for
ordinary kernels; a side-stream kernel gets a large KernelBench speedup and about 1 from kcv.
KernelBench is fetched, never committed: KB_CHECKOUT is a clone of ScalingIntelligence/KernelBench.
"""
import argparse
import importlib
import importlib.util
import json
import os
import statistics
import subprocess
import sys
import tempfile
import functools

print = functools.partial(print, flush=True)  # rows as they come: a deadline may cut the run


def kernelbench_timer(checkout):
    sys.path[:0] = [checkout, os.path.join(checkout, "src")]
    errors = []
    for name in ("kernelbench.timing", "kernelbench.eval", "src.eval", "eval"):
        try:
            mod = importlib.import_module(name)
        except Exception as e:  # noqa: BLE001 - another layout of the checkout
            errors.append(f"{name}: {type(e).__name__}: {e}")
            continue
        fn = getattr(mod, "time_execution_with_cuda_event", None)
        if fn is not None:
            return fn, name
    # NOTES: the package's __init__ imports its utils, which import openai, litellm, dotenv and
    # tqdm; a GPU box with torch alone cannot import kernelbench.timing through it. timing.py itself
    # needs torch and numpy only: load the file as it is.
    for rel in ("src/kernelbench/timing.py", "src/timing.py"):
        path = os.path.join(checkout, rel)
        if os.path.exists(path):
            note = ""
            try:
                try:
                    mod = load(path, "kb_timing")
                except ModuleNotFoundError as e:
                    if e.name != "numpy":
                        raise
                    # its timers do not use numpy (get_timing_stats does): an empty module stands in
                    import types
                    sys.modules["numpy"] = types.ModuleType("numpy")
                    mod, note = load(path, "kb_timing"), "; numpy absent here, an empty stand-in"
            except Exception as e:  # noqa: BLE001
                errors.append(f"{rel}: {type(e).__name__}: {e}")
                continue
            if hasattr(mod, "time_execution_with_cuda_event"):
                return mod.time_execution_with_cuda_event, f"{rel} (loaded as a file; the package: {errors[0]}{note})"
    sys.exit(f"no time_execution_with_cuda_event in {checkout}: " + "; ".join(errors))


def load(path, name):
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def kb_times(timer, problem_path, solution_path, trials):
    """KernelBench's way: one set of inputs, Model and ModelNew from the same seed, `trials` timings."""
    import torch
    problem, solution = load(problem_path, "kb_problem"), load(solution_path, "kb_solution")
    dev = torch.device("cuda:0")
    torch.manual_seed(42)
    inputs = [x.to(dev) if isinstance(x, torch.Tensor) else x for x in problem.get_inputs()]
    out = {}
    for label, cls in (("reference", problem.Model), ("candidate", solution.ModelNew)):
        torch.manual_seed(42)
        model = cls(*problem.get_init_inputs()).to(dev)
        # NOTES: two signatures: (kernel_fn, args: list, num_warmup, num_trials, ...) in
        # kernelbench/timing.py, (kernel_fn, *args, num_trials, ...) in the older eval.py.
        import inspect
        params = inspect.signature(timer).parameters
        with torch.no_grad():
            if "args" in params and params["args"].kind != inspect.Parameter.VAR_POSITIONAL:
                t = timer(model, inputs, num_trials=trials, verbose=False, device=dev)
            else:
                t = timer(model, *inputs, num_trials=trials, verbose=False, device=dev)
        out[label] = t[0] if isinstance(t, tuple) else t  # newer versions return (times, profile)
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("pairs", nargs="+")
    ap.add_argument("--kernelbench", required=True)
    ap.add_argument("--kcv", default=os.path.join("build", "kcv"))
    ap.add_argument("--python", default=os.environ.get("KCV_PYTHON") or sys.executable)
    ap.add_argument("--trials", type=int, default=100)
    ap.add_argument("--reps", type=int, default=100)
    ap.add_argument("--gates", default="", help="gates kcv runs first (default: all 12)")
    a = ap.parse_args()
    if len(a.pairs) % 2:
        sys.exit("pairs: PROBLEM SOLUTION [PROBLEM SOLUTION ...]")
    timer, where = kernelbench_timer(a.kernelbench)
    print(f"KernelBench timer: time_execution_with_cuda_event from {where}, {a.trials} trials; kcv time: {a.reps} reps\n")
    print("| pair | KB ref median (mean) ms | KB cand median (mean) ms | KB speedup | kcv ref median ms "
          "| kcv cand median [p10, p90] ms | kcv speedup | kcv returned speedup | within noise |")
    print("|---|---|---|---|---|---|---|---|---|")
    device = {}
    for problem, solution in zip(a.pairs[::2], a.pairs[1::2]):
        kb = kb_times(timer, problem, solution, a.trials)
        kb_ref, kb_cand = statistics.median(kb["reference"]), statistics.median(kb["candidate"])
        with tempfile.TemporaryDirectory() as d:
            rep = os.path.join(d, "r.json")
            cmd = [a.kcv, "time", problem, solution, "--backend", "cuda", "--python", a.python, "--reps", str(a.reps),
                   "--json", rep, "--quiet"] + (["--gates", a.gates] if a.gates else [])
            p = subprocess.run(cmd, capture_output=True, text=True)
            t = json.load(open(rep)).get("timing", {}) if os.path.exists(rep) else {}
        name = f"{os.path.basename(os.path.dirname(os.path.abspath(problem)))}/{os.path.basename(solution)}"
        if not t.get("timed"):
            print(f"| {name} | {kb_ref:.4f} | {kb_cand:.4f} | {kb_ref / kb_cand:.2f} | not timed: "
                  f"{t.get('reason', p.stderr.strip()[-200:])} |||||")
            continue
        c = t["candidate"]
        lo, hi = sorted(kb["candidate"])[len(kb["candidate"]) // 10], sorted(kb["candidate"])[9 * len(kb["candidate"]) // 10]
        agree = lo <= c["median_ms"] <= hi or abs(c["median_ms"] / kb_cand - 1) <= 0.10
        print(f"| {name} | {kb_ref:.4f} ({statistics.mean(kb['reference']):.4f}) | {kb_cand:.4f} "
              f"({statistics.mean(kb['candidate']):.4f}) | {kb_ref / kb_cand:.2f} | {t['reference_eager']['median_ms']:.4f} "
              f"| {c['median_ms']:.4f} [{c['p10_ms']:.4f}, {c['p90_ms']:.4f}] | {t['speedup']:.2f} "
              f"| {t['returned_speedup']:.2f} | {'yes' if agree else 'NO'} |")
        device = t.get("device", device)
    print(f"\nkcv's device and clock: {device}")


if __name__ == "__main__":
    main()
