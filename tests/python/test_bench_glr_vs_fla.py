#!/usr/bin/env python3
"""bench/glr/bench_glr_vs_fla.py in --dry-run (CPU stand-ins, fake timings), no GPU needed.

    python3 tests/python/test_bench_glr_vs_fla.py          (ctest: bench.glr_vs_fla_dry_run)

For each --dtype (bf16, f32), one small shape (--shapes 2 --quick) into a temporary directory:
exit 0; the dtype's own files (glr-vs-fla.json/.md, glr-vs-fla-f32.json/.md) and not the other's;
the JSON parses and holds issue 19's keys (deliverable 2) and "dtype" at the top and in every
shape; both implementations verified and timed; the floors counted with the dtype's element size
and the compute peak of the dtype; the markdown names the dtype and, for f32, states each
implementation's worst error. Then --dry-run-inject glr-wrong: glr must fail its verification and
not be timed while FLA is (a check that can fail). First, without torch's help: --warm-fla's split of
each autotuned kernel's configurations over its processes (share_configs, against a stand-in tuner).

Where torch cannot be imported it prints "SKIP: <reason>" and exits 0 (ctest reports it skipped).
"""

import json
import os
import subprocess
import sys
import tempfile

REPO = os.path.abspath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
BENCH = os.path.join(REPO, "bench", "glr", "bench_glr_vs_fla.py")

try:
    import torch  # noqa: F401 - the benchmark's children need it
except Exception as e:  # noqa: BLE001 - any broken torch is a reason to skip, said out loud
    print(f"SKIP: torch cannot be imported by {sys.executable}: {type(e).__name__}: {e}")
    sys.exit(0)

TOP_KEYS = ["gpu", "torch", "fla_commit", "shapes", "dtype"]
SHAPE_KEYS = ["B", "T", "H", "D", "varlen", "fla_fwd_ms", "glr_fwd_ms", "fla_fwdbwd_ms", "glr_fwdbwd_ms",
              "fwd_speedup", "fwdbwd_speedup", "glr_peak_mem_bytes", "fla_peak_mem_bytes", "hbm_fraction",
              "tc_fraction", "dtype"]
STEM = {"bf16": "glr-vs-fla", "f32": "glr-vs-fla-f32"}
ELEMENT_BYTES = {"bf16": 2, "f32": 4}
PEAK = {"bf16": 989e12, "f32": 67e12}

failures = []


def check(ok, what):
    print(f"  {'ok  ' if ok else 'FAIL'} {what}")
    if not ok:
        failures.append(what)
    return ok


def run(out, dtype, inject="", defines=""):
    cmd = [sys.executable, BENCH, "--dry-run", "--out", out, "--shapes", "2", "--quick", "--dtype", dtype,
           "--seed", "12345"]
    if inject:
        cmd += ["--dry-run-inject", inject]
    env = dict(os.environ)
    env.pop("GLR_BENCH_REF_BUDGET", None)
    env["GLR_DEFINES"] = defines  # recorded as the kernel switches glr_torch would be built with
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=240, env=env)
    print(f"$ {' '.join(cmd[1:])}: exit {p.returncode}")
    if not check(p.returncode == 0, f"{dtype}{' ' + inject if inject else ''}: exit 0"):
        print((p.stdout + p.stderr)[-3000:])
    return p


def load(out, dtype):
    path = os.path.join(out, STEM[dtype] + ".json")
    try:
        with open(path) as f:
            doc = json.load(f)
    except (OSError, ValueError) as e:
        check(False, f"{dtype}: {path} parses ({type(e).__name__}: {e})")
        return None, ""
    check(True, f"{dtype}: {os.path.basename(path)} parses")
    try:
        with open(os.path.join(out, STEM[dtype] + ".md")) as f:
            md = f.read()
    except OSError as e:
        check(False, f"{dtype}: {STEM[dtype]}.md readable ({e})")
        md = ""
    return doc, md


def check_run(tmp, dtype):
    out = os.path.join(tmp, dtype)
    defines = "GLR_NEXT" if dtype == "bf16" else ""
    run(out, dtype, defines=defines)
    other = STEM["f32" if dtype == "bf16" else "bf16"]
    check(not os.path.exists(os.path.join(out, other + ".json")), f"{dtype}: no {other}.json written")
    doc, md = load(out, dtype)
    if doc is None:
        return None
    missing = [k for k in TOP_KEYS if k not in doc]
    check(not missing, f"{dtype}: top-level keys {TOP_KEYS} (missing {missing})")
    want = [defines] if defines else []
    check(doc.get("glr_defines") == want and (f"built with {defines}" in md) == bool(defines),
          f"{dtype}: glr's kernel switches {want} recorded (JSON {doc.get('glr_defines')!r}, markdown header)")
    ident = subprocess.run([os.path.join(REPO, "bench/glr/headers_id.sh"), os.path.join(REPO, "include")],
                           capture_output=True, text=True).stdout.strip()
    check(doc.get("glr_headers") == ident and f"(headers {ident})" in md,
          f"{dtype}: glr's headers by content recorded, as headers_id.sh gives them "
          f"(JSON {doc.get('glr_headers')!r}, script {ident!r})")
    check(doc.get("dtype") == dtype, f"{dtype}: top-level dtype is {doc.get('dtype')!r}")
    check(doc.get("dry_run") is True and "DRY RUN" in str(doc.get("gpu")), f"{dtype}: marked a dry run")
    shapes = doc.get("shapes") or []
    if not check(len(shapes) == 1, f"{dtype}: one shape record (got {len(shapes)})"):
        return None
    r = shapes[0]
    missing = [k for k in SHAPE_KEYS if k not in r]
    check(not missing, f"{dtype}: shape keys of issue 19 + dtype (missing {missing})")
    check(list(r)[:len(SHAPE_KEYS) - 1] == SHAPE_KEYS[:-1], f"{dtype}: the issue's keys first, in its order")
    check(r.get("dtype") == dtype, f"{dtype}: shape dtype is {r.get('dtype')!r}")
    check(r.get("glr_status") == "ok" and r.get("fla_status") == "ok",
          f"{dtype}: both verified (glr {r.get('glr_status')!r}, fla {r.get('fla_status')!r})")
    timed = [k for k in ("fla_fwd_ms", "glr_fwd_ms", "fla_fwdbwd_ms", "glr_fwdbwd_ms", "fwd_speedup",
                         "fwdbwd_speedup", "hbm_fraction", "tc_fraction") if not isinstance(r.get(k), (int, float))]
    check(not timed, f"{dtype}: timed, speedups and fractions are numbers (not: {timed})")
    # the floors: vector gate, no states -> forward = q,k,v,o in the dtype + g fp32 [N,K]
    B, T, H, D = r["dry_run_dims"]
    N, E = B * T * H, ELEMENT_BYTES[dtype]
    want = 4 * N * D * E + N * D * 4
    check(r.get("bytes_fwd") == want, f"{dtype}: bytes_fwd {r.get('bytes_fwd')} = 4*N*D*{E} + N*D*4 = {want}")
    m = doc.get("method") or {}
    check(m.get("tc_flops_per_s") == PEAK[dtype] and m.get("element_bytes") == E,
          f"{dtype}: method peak {m.get('tc_flops_per_s')} and element bytes {m.get('element_bytes')}")
    ms = r["glr_fwdbwd_ms"]
    check(abs(r["tc_fraction"] - r["flops_fwdbwd"] / (ms * 1e-3) / PEAK[dtype]) <= 1e-9 * r["tc_fraction"],
          f"{dtype}: tc_fraction = flops_fwdbwd / time / {PEAK[dtype]:g}")
    check(f"{dtype} q,k,v,do" in md, f"{dtype}: the markdown header names '{dtype} q,k,v,do'")
    check(f"E = {E} bytes per element" in md, f"{dtype}: the markdown floors say E = {E}")
    check("glr err (max/rms)" in md and "FLA err (max/rms)" in md, f"{dtype}: the table's error columns")
    if dtype == "f32":
        w = doc.get("worst_errors") or {}
        glr, fla = w.get("glr") or {}, w.get("fla") or {}
        ok = isinstance(glr.get("rms"), float) and isinstance(fla.get("rms"), float)
        if check(ok, "f32: worst_errors of glr and fla in the JSON"):
            # the stand-ins: glr in fp32, 'fla' with TF32-rounded operands
            check(glr["rms"] < 1e-5 and 1e-5 < fla["rms"] < 1e-2,
                  f"f32: worst rms glr {glr['rms']:.1e} (fp32) and fla {fla['rms']:.1e} (TF32 stand-in)")
            check("## Accuracy (f32 inputs)" in md and f"worst rms {glr['rms']:.1e}" in md
                  and f"worst rms {fla['rms']:.1e}" in md, "f32: the accuracy paragraph states both worst errors")
            check("67e12 FLOP/s" in md, "f32: the floors name the FP32 peak 67e12")
    else:
        check("## Accuracy" not in md and "989e12 FLOP/s" in md, "bf16: no f32 paragraph; the bf16 peak 989e12")
    return r


def check_wrong(tmp, dtype):
    out = os.path.join(tmp, dtype + "-glr-wrong")
    run(out, dtype, "glr-wrong")
    doc, md = load(out, dtype)
    if doc is None or not doc.get("shapes"):
        check(False, f"{dtype} glr-wrong: a shape record")
        return
    r = doc["shapes"][0]
    check(str(r.get("glr_status", "")).startswith("FAIL verification"),
          f"{dtype} glr-wrong: glr fails its verification ({r.get('glr_status')!r})")
    check(r.get("glr_fwd_ms") is None and r.get("glr_fwdbwd_ms") is None and r.get("fwd_speedup") is None,
          f"{dtype} glr-wrong: glr not timed, no speedup")
    check(r.get("fla_status") == "ok" and isinstance(r.get("fla_fwd_ms"), (int, float)),
          f"{dtype} glr-wrong: FLA still verified and timed")
    check("glr: FAIL verification" in md, f"{dtype} glr-wrong: the markdown lists glr's failure")


def check_share_configs():
    """--warm-fla's split of an autotuned kernel's configurations over N processes (share_configs):
    every configuration in exactly one share; a share its kernel's prune empties at some shape gets the
    first configuration the whole list keeps there (Triton raises on an empty prune: the share would
    compile nothing past that kernel), and a share the prune leaves something keeps only that."""
    sys.path.insert(0, os.path.dirname(BENCH))
    import bench_glr_vs_fla as bench

    class Tuner:  # the two attributes of triton.runtime.autotuner.Autotuner that share_configs uses
        def __init__(self, configs, prune=None):
            self.configs, self.early_config_prune = list(configs), prune

    n = 4
    shares = []
    for i in range(n):
        t = Tuner(range(10))
        bench.share_configs(t, i, n)
        shares.append(t.configs)
    check(sorted(c for s in shares for c in s) == list(range(10)), f"share_configs: the shares {shares} cover 0..9 once")
    one = Tuner([7])
    bench.share_configs(one, 3, n)
    check(one.configs == [7], f"share_configs: a lone configuration kept by every share ({one.configs})")

    def prune(configs, named_args, **kwargs):  # keeps the configurations a shape allows: c < D / 8
        return [c for c in configs if c < named_args["D"] // 8]

    for i in range(n):
        t = Tuner(range(10), prune)
        bench.share_configs(t, i, n)
        kept = t.early_config_prune(t.configs, {"D": 16}, extra=1)  # only 0 and 1 allowed
        want = [c for c in shares[i] if c < 2] or [0]
        check(kept == want, f"share_configs: share {i} at D = 16 keeps {want} (kept {kept})")
    t = Tuner(range(10), lambda configs, named_args: [])
    bench.share_configs(t, 1, n)
    check(t.early_config_prune(t.configs, {}) == [], "share_configs: a prune that empties the whole list "
          "stays empty (Triton's own error then names the kernel)")
    print("share_configs: ok" if not failures else "share_configs: see failures")


def main():
    check_share_configs()
    with tempfile.TemporaryDirectory(prefix="glr-bench-test.") as tmp:
        for dtype in ("bf16", "f32"):
            print(f"== --dtype {dtype}")
            check_run(tmp, dtype)
            check_wrong(tmp, dtype)
    if failures:
        print(f"FAILED: {len(failures)} check(s): " + "; ".join(failures))
        return 1
    print("PASSED: bench_glr_vs_fla.py --dry-run, bf16 and f32")
    return 0


if __name__ == "__main__":
    sys.exit(main())
