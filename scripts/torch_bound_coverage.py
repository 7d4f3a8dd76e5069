#!/usr/bin/env python3
"""Which ops of a set of KernelBench problems the derived bound has rules for, and whether fp32
eager stays within it (docs/kernelbench.md, "The error bound, derived").

    $KCV_PYTHON scripts/torch_bound_coverage.py DIR [--device cpu|cuda] [--cap N] [--json OUT]

For every problem file under DIR (recursively), its module-level sizes are clipped to at most
--cap (default 32; the problem's own sizes with --cap 0; a problem the Model rejects at the
clipped sizes is tried at twice the cap, then at its own sizes; inputs over --max-elements are
not run), its Model is built under seed 42,
run in float64 under the bound's dispatch mode and in fp32 eager, on get_inputs() under seed 0.
Per problem: the ops without a rule, how many output elements are derived / calibrated / free,
and fp32 eager's worst err/bound over the derived elements (> 1: a rule undercounts, or eager
is not an fp32 evaluation of the Model). The summary counts problems per unruled op.
"""
import argparse
import collections
import json
import os
import signal
import sys
import time

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "adapters", "torch"))
import kcv_torch_bound as kb  # noqa: E402
import kcv_torch_common as common  # noqa: E402
import kcv_torch_reference as ref  # noqa: E402


class Timeout(Exception):
    pass


def at_sizes(mod, nominal, cap):
    common.set_sizes(mod, nominal, {k: max(1, min(v, cap)) for k, v in nominal.items()} if cap else {})


def one(path, device, cap, limit_s, max_elements):
    mod = common.load_module(path, "kcv_cov_" + str(abs(hash(path))))
    nominal = common.module_sizes(mod)
    last = None
    for c in ([cap, 2 * cap, 0] if cap else [0]):
        try:
            at_sizes(mod, nominal, c)
            torch.manual_seed(0)
            args = list(mod.get_inputs())
            elements = sum(a.numel() for a in args if isinstance(a, torch.Tensor))
            if elements > max_elements:
                last = f"{elements} input elements at these sizes, over --max-elements {max_elements}"
                continue
            init = list(mod.get_init_inputs())
            m32 = common.build_model(mod.Model, init, 42, device)
            m64 = ref.double_everything(common.build_model(mod.Model, init, 42, device))
            a32 = [a.to(device) if isinstance(a, torch.Tensor) else a for a in args]
            a64 = [a.double() if isinstance(a, torch.Tensor) and a.is_floating_point() else a for a in a32]
            signal.alarm(limit_s)
            t0 = time.time()
            with torch.no_grad():
                o32 = common.as_tuple(m32(*a32))
                outs, tracks, unruled = kb.run(m64, a64)
            signal.alarm(0)
            break
        except Timeout:
            return {"problem": path, "error": f"over {limit_s} s"}
        except Exception as e:  # noqa: BLE001 - the Model rejects these sizes: the next ones
            signal.alarm(0)
            last = f"{type(e).__name__}: {str(e).splitlines()[0][:200] if str(e) else ''}"
    else:
        return {"problem": path, "error": last}
    counts = [0, 0, 0]
    worst = 0.0
    for o, t, e in zip(outs, tracks, o32):
        if t is None:
            continue
        for k in range(3):
            counts[k] += int((t.S == k).sum())
        r = o.double()
        d = (t.S == 0) & torch.isfinite(r) & torch.isfinite(e.double()) & (r.abs() <= kb.F32_MAX)
        if bool(d.any()):
            ratio = (e.double() - r).abs()[d] / (kb.U * t.E[d] + kb.U * r.abs()[d] + 2.0 ** -149)
            worst = max(worst, float(ratio.max()))
    return {"problem": path, "cap": c, "seconds": round(time.time() - t0, 2), "unruled": sorted(unruled),
            "derived": counts[0], "calibrated": counts[1], "free": counts[2], "eager_worst_ratio": worst}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("dir")
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--cap", type=int, default=32)
    ap.add_argument("--limit", type=int, default=120, help="seconds per problem")
    ap.add_argument("--max-elements", type=int, default=1 << 22, help="inputs larger than this are not run")
    ap.add_argument("--json")
    a = ap.parse_args()
    common.library_settings()

    def alarm(*_):
        raise Timeout()
    signal.signal(signal.SIGALRM, alarm)
    files = sorted(os.path.join(d, f) for d, _, fs in os.walk(a.dir) for f in fs if f.endswith(".py"))
    rows, per_op = [], collections.Counter()
    for f in files:
        r = one(f, a.device, a.cap, a.limit, a.max_elements)
        rows.append(r)
        for op in r.get("unruled", []):
            per_op[op.split(" (")[0]] += 1
        name = os.path.relpath(f, a.dir)
        if "error" in r:
            print(f"{name}: not run: {r['error']}", flush=True)
        else:
            print(f"{name}: derived {r['derived']} calibrated {r['calibrated']} free {r['free']} eager worst "
                  f"err/bound {r['eager_worst_ratio']:.3g} ({r['seconds']} s){' unruled: ' + ', '.join(r['unruled']) if r['unruled'] else ''}", flush=True)
    ran = [r for r in rows if "error" not in r]
    print(f"\n{len(ran)} of {len(rows)} problems ran; {sum(1 for r in ran if not r['unruled'])} with every op ruled; "
          f"{sum(1 for r in ran if r['eager_worst_ratio'] > 1)} where fp32 eager exceeds the derived bound")
    for op, n in per_op.most_common():
        print(f"  unruled in {n:3d} problems: {op}")
    if a.json:
        with open(a.json, "w") as fh:
            json.dump({"rows": rows, "unruled": dict(per_op)}, fh, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
