#!/usr/bin/env python3
"""KernelBench's own adversarial kernels against kcv (issue 22 item 2, "Controls: KernelBench's
three adversarial kernels (fetched, not committed)"), on a GPU machine.

    python3 bench/kernelbench/kernelbench_adversarial.py --kernelbench KB_CHECKOUT --out DIR
        [--kcv build/kcv] [--python PY] [--backend cuda] [--jobs 4] [--trials 100] [--reps 30]
        [--phase all|extract|build|kcv|kb|table] [--deadline SECONDS]

KB_CHECKOUT is a clone (or `git archive`) of ScalingIntelligence/KernelBench. Nothing of it is
committed here: `extract` reads its adversarial test (src/kernelbench/unit_tests/
test_eval_adversarial.py, or src/unit_tests/ in older layouts) with `ast`, takes each
run_test_kernel(problem_name=..., kernel_filename=...) call, and copies that kernel and its problem
into DIR/pairs/<kernel>/ (DIR belongs outside git, or under the ignored .xfer/).

Phases (`all` runs them in this order; each writes JSON under DIR, `table` reads them):
- build: each kernel's `load_inline` built once for KernelBench's side (TORCH_EXTENSIONS_DIR=
  DIR/kb-ext/<kernel>), all at once: CPU only, so `kb` later times without building.
- kcv: per kernel, in parallel (--jobs), `kcv verify --kernelbench P S --timing` with all 12 gates
  (the verdict, and the counted speedup: only a kernel passing every gate is timed); for a kernel
  whose KernelBench test is about timing (it passes timing_method, the side-stream one), also
  `kcv time P S --gates numerics`: what kcv's timer alone says of it once a correctness check as
  weak as KernelBench's lets it through.
- kb: per kernel, one after the other (the GPU otherwise idle), KernelBench's verdict and speedup:
  its own kernelbench.eval.eval_kernel_against_ref (5 correctness trials, `--trials` perf trials,
  timing_method cuda_event, its excessive-speedup check at 10x) where the checkout's package
  imports; else (its __init__ imports openai, litellm, dotenv, tqdm; eval.py pydantic and requests,
  which a GPU box need not have) a replica of run_and_check_correctness (the same seeds, allclose
  at get_tolerance_for_precision(fp32) = 1e-4) timed by the checkout's own
  time_execution_with_cuda_event, loaded from its timing.py file. The table says which ran.
- table: one markdown row per kernel.

Expected: KernelBench rejects the result-reuse and input-zeroing kernels and gives the side-stream
kernel a large speedup; kcv fails all three (zero_out: inputs_intact; result_reuse: coverage,
numerics...; side stream: concurrency), so none is timed under its 12 gates, and its timer gives
the side-stream kernel about 1x where KernelBench's gives many.
"""
import argparse
import ast
import json
import os
import shutil
import statistics
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor

TEST_FILES = ("src/kernelbench/unit_tests/test_eval_adversarial.py", "src/unit_tests/test_eval_adversarial.py")


# ---------------------------------------------------------------------------------------- extract
def adversarial_calls(test_path):
    """(test function, problem_name, kernel_filename, timing_method or None) of every
    run_test_kernel(...) call with literal keyword arguments in KernelBench's adversarial test."""
    tree = ast.parse(open(test_path).read(), test_path)
    out = []
    for fn in tree.body:
        if not isinstance(fn, ast.FunctionDef):
            continue
        for node in ast.walk(fn):
            if not (isinstance(node, ast.Call) and getattr(node.func, "id", "") == "run_test_kernel"):
                continue
            kw = {k.arg: k.value for k in node.keywords}
            lit = {k: v.value for k, v in kw.items() if isinstance(v, ast.Constant)}
            if "problem_name" in lit and "kernel_filename" in lit:
                out.append((fn.name, lit["problem_name"], lit["kernel_filename"],
                            "timing_method" in kw))
    return out


def extract(kb, out):
    test = next((os.path.join(kb, t) for t in TEST_FILES if os.path.exists(os.path.join(kb, t))), None)
    if test is None:
        sys.exit(f"kernelbench_adversarial: no {' or '.join(TEST_FILES)} in {kb}")
    pairs = []
    for test_fn, problem, kernel, about_timing in adversarial_calls(test):
        src_kernel = os.path.join(os.path.dirname(test), "test_kernels", kernel)
        src_problem = next((p for p in (os.path.join(kb, "KernelBench", problem), os.path.join(kb, problem))
                            if os.path.exists(p)), None)
        if not os.path.exists(src_kernel) or src_problem is None:
            sys.exit(f"kernelbench_adversarial: {test_fn}: {kernel} or {problem} not in {kb}")
        name = os.path.splitext(kernel)[0]
        d = os.path.join(out, "pairs", name)
        os.makedirs(d, exist_ok=True)
        shutil.copyfile(src_problem, os.path.join(d, "problem.py"))
        shutil.copyfile(src_kernel, os.path.join(d, "solution.py"))
        pairs.append({"name": name, "test": test_fn, "problem_name": problem, "kernel": kernel,
                      "about_timing": about_timing, "problem": os.path.join(d, "problem.py"),
                      "solution": os.path.join(d, "solution.py")})
    if not pairs:
        sys.exit(f"kernelbench_adversarial: no run_test_kernel(problem_name=..., kernel_filename=...) in {test}")
    json.dump({"test": os.path.relpath(test, kb), "pairs": pairs}, open(os.path.join(out, "pairs.json"), "w"), indent=1)
    print(f"extract: {len(pairs)} adversarial kernels from {os.path.relpath(test, kb)}: "
          + ", ".join(f"{p['name']} ({p['problem_name']})" for p in pairs), flush=True)
    return pairs


def load_pairs(out):
    return json.load(open(os.path.join(out, "pairs.json")))["pairs"]


# ------------------------------------------------------------------------------------------ build
def kb_env(out, name):
    env = dict(os.environ, TORCH_EXTENSIONS_DIR=os.path.abspath(os.path.join(out, "kb-ext", name)),
               TORCH_USE_CUDA_DSA="1")  # eval_kernel_against_ref sets it before it loads a kernel
    os.makedirs(env["TORCH_EXTENSIONS_DIR"], exist_ok=True)
    return env


def run_logged(cmd, log, env=None, timeout=None):
    """cmd in a process group of its own, output to log; at the timeout SIGTERM to the group (kcv
    stops its workers and exits), SIGKILL 10 s later."""
    import signal
    t = time.monotonic()
    with open(log, "w") as f:
        p = subprocess.Popen(cmd, stdout=f, stderr=subprocess.STDOUT, env=env, start_new_session=True)
        try:
            rc = p.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            rc = "timeout"
            for sig, wait in ((signal.SIGTERM, 10), (signal.SIGKILL, None)):
                try:
                    os.killpg(p.pid, sig)
                    p.wait(timeout=wait)
                    break
                except (ProcessLookupError, subprocess.TimeoutExpired):
                    continue
    return rc, time.monotonic() - t


def build(a, pairs):
    """KernelBench's side builds each kernel's extension once here, all at once (CPU only)."""
    def one(p):
        code = ("import sys, torch\nsrc = open(sys.argv[1]).read()\nexec(compile(src, 'solution.py', 'exec'), {})\n"
                "print('built')\n")
        rc, s = run_logged([a.python, "-c", code, p["solution"]], os.path.join(a.out, f"kb-build.{p['name']}.log"),
                           env=kb_env(a.out, p["name"]), timeout=a.remaining())
        print(f"build {p['name']}: rc {rc}, {s:.1f} s", flush=True)
        return rc
    with ThreadPoolExecutor(len(pairs)) as pool:
        list(pool.map(one, pairs))


# -------------------------------------------------------------------------------------------- kcv
def kcv_runs(a, pairs):
    jobs = []
    for p in pairs:
        base = [p["problem"], p["solution"], "--backend", a.backend, "--python", a.python, "--quiet"]
        if a.remaining() is not None:  # kcv's own overall limit, under the run's
            base += ["--max-time", f"{max(10.0, a.remaining() - 15):.0f}"]
        jobs.append((p["name"], "verify", [a.kcv, "verify", "--kernelbench"] + base + ["--timing", "--reps", str(a.reps)]))
        if p["about_timing"]:
            jobs.append((p["name"], "time_numerics", [a.kcv, "time"] + base + ["--gates", "numerics", "--reps", str(a.reps)]))

    def one(job):
        name, what, cmd = job
        rep = os.path.abspath(os.path.join(a.out, "kcv", f"{name}.{what}.json"))
        rc, s = run_logged(cmd + ["--json", rep], os.path.join(a.out, "kcv", f"{name}.{what}.log"), timeout=a.remaining())
        json.dump({"rc": rc, "wall_s": s, "cmd": cmd, "beside": len(jobs) > 1 and a.jobs > 1},
                  open(os.path.join(a.out, "kcv", f"{name}.{what}.run.json"), "w"))
        print(f"kcv {what} {name}: rc {rc}, {s:.1f} s", flush=True)
    os.makedirs(os.path.join(a.out, "kcv"), exist_ok=True)
    with ThreadPoolExecutor(max(1, a.jobs)) as pool:
        list(pool.map(one, jobs))


# --------------------------------------------------------------------------------------------- kb
def kb_runs(a, pairs):
    os.makedirs(os.path.join(a.out, "kb"), exist_ok=True)
    for p in pairs:
        res = os.path.abspath(os.path.join(a.out, "kb", f"{p['name']}.json"))
        cmd = [a.python, os.path.abspath(__file__), "--phase", "kb-one", "--kernelbench", os.path.abspath(a.kernelbench),
               "--trials", str(a.trials), "--out", res, p["problem"], p["solution"]]
        rc, s = run_logged(cmd, os.path.join(a.out, "kb", f"{p['name']}.log"), env=kb_env(a.out, p["name"]),
                           timeout=a.remaining())
        if not os.path.exists(res):
            json.dump({"error": f"rc {rc} (see kb/{p['name']}.log)"}, open(res, "w"))
        print(f"kb {p['name']}: rc {rc}, {s:.1f} s", flush=True)


def kb_one(kb, problem, solution, trials, out):
    """In the torch interpreter, one kernel: KernelBench's verdict and speedup (see the docstring)."""
    import torch
    ref_src, cust_src = open(problem).read(), open(solution).read()
    res = {"how": None}
    sys.path.insert(0, os.path.join(kb, "src"))
    try:
        from kernelbench.eval import eval_kernel_against_ref  # noqa: the checkout's own
    except Exception as e:  # noqa: BLE001 - its dependencies are not here
        res["import_error"] = f"{type(e).__name__}: {e}"
        eval_kernel_against_ref = None
    if eval_kernel_against_ref is not None:
        r = eval_kernel_against_ref(original_model_src=ref_src, custom_model_src=cust_src, num_correct_trials=5,
                                    num_perf_trials=trials, measure_performance=True, timing_method="cuda_event",
                                    check_for_excessive_speedup=True, excessive_speedup_threshold=10)
        res["how"] = "kernelbench.eval.eval_kernel_against_ref (cuda_event)"
        if r is None:
            res["error"] = "eval_kernel_against_ref returned None (lock file error)"
        else:
            res.update(compiled=r.compiled, correct=r.correctness, runtime_ms=r.runtime, ref_runtime_ms=r.ref_runtime,
                       excessive_speedup=bool(r.metadata.get("excessive_speedup")),
                       metadata={k: str(v)[:300] for k, v in r.metadata.items()})
            if r.runtime > 0 and r.ref_runtime > 0:
                res["speedup"] = r.ref_runtime / r.runtime
        json.dump(res, open(out, "w"), indent=1)
        return
    # The replica: KernelBench's procedure, its timer loaded from its timing.py file.
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    from timing_vs_kernelbench import kernelbench_timer  # the checkout's timing.py, loaded as a file
    timer, where = kernelbench_timer(kb)
    res["how"] = (f"replica of eval_kernel_against_ref (its package does not import here: {res['import_error']}); "
                  f"timer: time_execution_with_cuda_event from {where}")
    dev = torch.device("cuda:0")

    def seed(s):
        torch.manual_seed(s)
        torch.cuda.manual_seed(s)

    def to_dev(xs):
        return [x.to(dtype=torch.float32).to(dev) if isinstance(x, torch.Tensor) else x for x in xs]
    ctx_ref, ctx_new = {}, {}
    exec(compile(ref_src, "problem.py", "exec"), ctx_ref)
    seed(42)
    init = to_dev(ctx_ref["get_init_inputs"]())
    with torch.no_grad():
        seed(42)
        model = ctx_ref["Model"](*init)
    os.environ["TORCH_USE_CUDA_DSA"] = "1"
    try:
        exec(compile(cust_src, "solution.py", "exec"), ctx_new)
        torch.cuda.synchronize(dev)
    except Exception as e:  # noqa: BLE001 - KernelBench: a compilation failure
        res.update(compiled=False, correct=False, error=f"{type(e).__name__}: {e}"[:300])
        json.dump(res, open(out, "w"), indent=1)
        return
    res["compiled"] = True
    with torch.no_grad():
        seed(42)
        new = ctx_new["ModelNew"](*init)
        model, new = model.to(device=dev, dtype=torch.float32), new.to(device=dev, dtype=torch.float32)
    torch.manual_seed(42)
    trial_seeds = [torch.randint(0, 2**32 - 1, (1,)).item() for _ in range(5)]
    passed, why = 0, ""
    with torch.no_grad():
        for s in trial_seeds:
            seed(s)
            inputs = to_dev(ctx_ref["get_inputs"]())
            o = model(*inputs)
            torch.cuda.synchronize(dev)
            try:
                o2 = new(*inputs)
                torch.cuda.synchronize(dev)
            except Exception as e:  # noqa: BLE001
                why = f"runtime error: {type(e).__name__}: {e}"[:300]
                break
            if o.shape != o2.shape:
                why = f"shape {tuple(o2.shape)} != {tuple(o.shape)}"
                break
            if torch.allclose(o, o2, atol=1e-4, rtol=1e-4):
                passed += 1
            else:
                why = f"output mismatch (max diff {torch.max(torch.abs(o - o2)).item():.4g})"
    res.update(correct=passed == 5, correctness_trials=f"({passed} / 5)", correctness_issue=why)
    if passed == 5:
        seed(42)
        inputs = to_dev(ctx_ref["get_inputs"]())
        with torch.no_grad():
            t_new = timer(new, inputs, num_trials=trials, verbose=False, device=dev)
            seed(42)
            inputs = to_dev(ctx_ref["get_inputs"]())
            t_ref = timer(model, inputs, num_trials=trials, verbose=False, device=dev)
        t_new, t_ref = (t[0] if isinstance(t, tuple) else t for t in (t_new, t_ref))
        res.update(runtime_ms=statistics.mean(t_new), ref_runtime_ms=statistics.mean(t_ref),
                   runtime_median_ms=statistics.median(t_new), ref_runtime_median_ms=statistics.median(t_ref))
        res["speedup"] = res["ref_runtime_ms"] / res["runtime_ms"]
        res["excessive_speedup"] = res["speedup"] > 10
    json.dump(res, open(out, "w"), indent=1)


# ------------------------------------------------------------------------------------------ table
def failing(rep):
    return [g["id"] for g in rep.get("gates", []) if g.get("verdict") not in ("PASS", "SKIPPED")]


def kcv_cells(out, name, what):
    try:
        rep = json.load(open(os.path.join(out, "kcv", f"{name}.{what}.json")))
    except (OSError, ValueError):
        run = {}
        try:
            run = json.load(open(os.path.join(out, "kcv", f"{name}.{what}.run.json")))
        except (OSError, ValueError):
            pass
        return "not run" if not run else f"no report (rc {run.get('rc')})", ""
    t = rep.get("timing") or {}
    verdict = rep.get("verdict", "?") + (f" ({', '.join(failing(rep))})" if failing(rep) else "")
    if t.get("timed"):
        speed = f"{t['speedup']:.2f}x (returned {t['returned_speedup']:.2f}x)"
    else:
        speed = "not timed" + (": " + t["reason"].split(";")[-1].strip() if t.get("reason") else "")
    return verdict, speed


def table(out, pairs):
    lines = ["| KernelBench kernel (problem) | KB test | KB verdict | KB speedup (cuda_event, mean) "
             "| kcv verdict, 12 gates | kcv counted speedup | kcv time --gates numerics |",
             "|---|---|---|---|---|---|---|"]
    hows = set()
    for p in pairs:
        try:
            kb = json.load(open(os.path.join(out, "kb", f"{p['name']}.json")))
        except (OSError, ValueError):
            kb = {"error": "not run"}
        if kb.get("how"):
            hows.add(kb["how"])
        if "error" in kb and "correct" not in kb:
            kbv, kbs = kb["error"], ""
        else:
            kbv = ("correct" if kb.get("correct") else "incorrect" if kb.get("compiled") else "did not compile")
            kbv += f" {kb.get('correctness_trials', '')}".rstrip()
            kbs = f"{kb['speedup']:.2f}x" + (" (flagged > 10x)" if kb.get("excessive_speedup") else "") \
                if kb.get("speedup") else "not timed"
        v, s = kcv_cells(out, p["name"], "verify")
        _, tn = kcv_cells(out, p["name"], "time_numerics") if p["about_timing"] else ("", "—")
        lines.append(f"| {p['name']} ({os.path.basename(p['problem_name'])}) | {p['test']} | {kbv} | {kbs} "
                     f"| {v} | {s} | {tn} |")
    lines.append("")
    lines += [f"KernelBench side: {h}" for h in sorted(hows)]
    return "\n".join(lines)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("pair", nargs="*", help="(kb-one only) PROBLEM SOLUTION")
    ap.add_argument("--kernelbench", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--kcv", default=os.path.join("build", "kcv"))
    ap.add_argument("--python", default=os.environ.get("KCV_PYTHON") or sys.executable)
    ap.add_argument("--backend", default="cuda")
    ap.add_argument("--jobs", type=int, default=4)
    ap.add_argument("--trials", type=int, default=100)
    ap.add_argument("--reps", type=int, default=30)
    ap.add_argument("--deadline", type=float, default=0, help="seconds for the whole run (0: none)")
    ap.add_argument("--phase", default="all", choices=["all", "extract", "build", "kcv", "kb", "table", "kb-one"])
    a = ap.parse_args()
    if a.phase == "kb-one":
        kb_one(a.kernelbench, a.pair[0], a.pair[1], a.trials, a.out)
        return 0
    t_end = time.monotonic() + a.deadline if a.deadline > 0 else None
    a.remaining = lambda: None if t_end is None else max(1.0, t_end - time.monotonic())
    a.kcv = os.path.abspath(a.kcv)
    os.makedirs(a.out, exist_ok=True)
    pairs = extract(a.kernelbench, a.out) if a.phase in ("all", "extract") else load_pairs(a.out)
    if a.phase in ("all", "build"):
        build(a, pairs)
    if a.phase in ("all", "kcv"):
        kcv_runs(a, pairs)
    if a.phase in ("all", "kb"):
        kb_runs(a, pairs)
    if a.phase in ("all", "table"):
        t = table(a.out, pairs)
        open(os.path.join(a.out, "table.md"), "w").write(t + "\n")
        print(t)
    return 0


if __name__ == "__main__":
    sys.exit(main())
