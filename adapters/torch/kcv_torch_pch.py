"""Precompiled torch/extension.h for a corpus run's load_inline builds (docs/kernelbench.md,
"A precompiled header for the .cpp half"). Trusted: it loads no problem and no solution.

    python3 kcv_torch_pch.py OUTDIR [--backend cuda|cpu] [--variant JSON-LIST]...

For each variant (a list of extra_cflags; default: none, and -O3), it asks torch for the exact
g++ command line of a load_inline build's main.cpp, without building it, and compiles
torch/extension.h with those flags into OUTDIR/<hash>/torch/extension.h.gch, beside a stub
header OUTDIR/<hash>/torch/extension.h that includes the real one. It prints one JSON manifest:
{"entries": [{"key", "header", "gch", "sha256", "bytes", "seconds"}], "skipped": [...]}.

A worker uses an entry only for a build whose key (pch_key) is the same, and only through a copy
of the gch whose sha256 it checked against the manifest kcv passed in its plan (never against a
file a candidate could have rewritten). g++ checks the rest: a PCH made with other flags is
ignored and the header is compiled as before.
"""
import argparse
import hashlib
import json
import os
import re
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from kcv_torch_common import pch_key, sha256_of  # noqa: E402


class _NinjaFileWritten(Exception):
    pass


def main_cpp_command(ext, probe_dir, name, cflags, with_cuda):
    """torch's own compile line for a load_inline build's main.cpp: (cxx, cflags, post_cflags).
    The ninja run is stopped before it starts: only the build file is wanted."""
    def stop(*_a, **_kw):
        raise _NinjaFileWritten()
    orig = ext._run_ninja_build
    ext._run_ninja_build = stop
    try:
        ext.load_inline(name, cpp_sources="", functions=None, extra_cflags=list(cflags), with_cuda=with_cuda,
                        build_directory=probe_dir, verbose=False)
    except _NinjaFileWritten:
        pass
    finally:
        ext._run_ninja_build = orig
    values = {}
    with open(os.path.join(probe_dir, "build.ninja")) as f:
        for line in f:
            m = re.match(r"^(cxx|cflags|post_cflags) = (.*)$", line.rstrip("\n"))
            if m:
                values[m.group(1)] = m.group(2)
    if "cxx" not in values or "cflags" not in values:
        raise RuntimeError("torch's build.ninja has no cxx or cflags line")
    # NOTES: the extension's name differs per build, and g++ refuses a PCH made under another
    # definition of a macro it saw; the header never uses this one.
    own = re.sub(r"\s-DTORCH_EXTENSION_NAME=\S+", "", " " + values["cflags"])
    return values["cxx"], own, values.get("post_cflags", "")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("out")
    ap.add_argument("--backend", choices=["cuda", "cpu"], default="cuda")
    ap.add_argument("--variant", action="append", default=None,
                    help='a JSON list of extra_cflags (default: [] and ["-O3"])')
    args = ap.parse_args()
    variants = [json.loads(v) for v in args.variant] if args.variant else [[], ["-O3"]]
    for v in variants:
        if not isinstance(v, list) or not all(isinstance(f, str) for f in v):
            sys.exit(f"kcv_torch_pch: --variant must be a JSON list of strings, got {v!r}")
    import torch.utils.cpp_extension as ext

    out = os.path.abspath(args.out)
    os.makedirs(out, exist_ok=True)
    with_cuda = args.backend == "cuda"
    jobs = []
    for i, cflags in enumerate(variants):
        key = pch_key(cflags, None, with_cuda)
        digest = hashlib.sha256(key.encode()).hexdigest()[:16]
        where = os.path.join(out, digest, "torch")
        probe = os.path.join(out, digest, "probe")
        os.makedirs(where, exist_ok=True)
        os.makedirs(probe, exist_ok=True)
        cxx, cf, post = main_cpp_command(ext, probe, f"kcv_pch_probe_{i}", cflags, with_cuda)
        header = os.path.join(where, "extension.h")
        with open(header, "w") as f:
            f.write("#include <torch/extension.h>\n")
        gch = header + ".gch"
        cmd = f"{cxx} {cf} -x c++-header {header} -o {gch}.part {post}"
        jobs.append((key, header, gch, subprocess.Popen(["/bin/sh", "-c", cmd], stdout=subprocess.DEVNULL,
                                                        stderr=subprocess.PIPE, text=True), time.time()))
    entries, skipped = [], []
    for key, header, gch, proc, t0 in jobs:
        _, err = proc.communicate()
        if proc.returncode != 0:
            skipped.append({"key": key, "why": (err.strip().splitlines() or ["g++ failed"])[-1][:400]})
            continue
        os.replace(gch + ".part", gch)
        entries.append({"key": key, "header": header, "gch": gch, "sha256": sha256_of(gch),
                        "bytes": os.path.getsize(gch), "seconds": round(time.time() - t0, 1)})
    print(json.dumps({"entries": entries, "skipped": skipped}))
    return 0 if entries else 1


if __name__ == "__main__":
    sys.exit(main())
