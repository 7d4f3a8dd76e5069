#!/usr/bin/env python3
"""include/glr/cuda/built.hpp: a translation unit that names its element type (GLR_ONLY_<T>) and
direction (GLR_FORWARD_ONLY) compiles only those kernels, and glr's cuda controls name what their
contracts need.
- Every glr cuda control (glr/controls/cuda/controls.cmake, read as scripts/verify_controls.py reads
  it) names one GLR_ONLY_<T> in its source, the dtype of its contract (f32 without a suffix), and
  GLR_FORWARD_ONLY exactly when its contract is a forward: a mismatch would refuse every call.
- With nvcc (and its headers): two GLR_ONLY_<T> in one translation unit do not compile (the header's
  #error), one sets the GLR_BUILDS_* it names; the PTX of a forward-only f32 control has f32 forward
  kernels and no others (no bf16, f16 or f64 kernel, no backward kernel); the same source with
  GLR_ONLY_F64 instead has f64 ones. Without nvcc only the declarations are checked, and it prints
  "SKIP: <why>" (ctest then reports the test skipped)."""
import re, shutil, subprocess, sys, tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from script_check import finish  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "scripts"))
import verify_controls  # noqa: E402

DTYPES = {"bf16": "BF16", "f16": "F16"}


def macros(source):
    return set(re.findall(r"^#define (GLR_ONLY_\w+|GLR_FORWARD_ONLY)\b", Path(source).read_text(), re.M))


def check_declarations(fails):
    glr = [c for c in verify_controls.parse_controls("cuda") if c["OP"].startswith("glr_")]
    if len(glr) < 30:
        fails.append(f"only {len(glr)} glr cuda controls read from the declarations")
    for c in glr:
        op = c["OP"]
        want_t = next((t for s, t in DTYPES.items() if op.endswith("_" + s)), "F32")
        want = {f"GLR_ONLY_{want_t}"} | ({"GLR_FORWARD_ONLY"} if op.startswith("glr_fwd") else set())
        got = macros(c["CANDIDATE"])
        if got != want:
            fails.append(f"{c['NAME']} (contract {op}): {Path(c['CANDIDATE']).name} defines {sorted(got)}, "
                         f"expected {sorted(want)}")


def host_compile(tu):
    """The host compiler through nvcc (-x c++), so it finds the CUDA headers wherever this toolkit keeps
    them (a guessed <nvcc>/../include is not where every install has cuda_bf16.h)."""
    return ["nvcc", "-std=c++17", "-x", "c++", "-c", f"-I{ROOT / 'include'}", "-o", str(Path(tu).with_suffix(".o")), str(tu)]


def check_two_types(fails, tmp):
    tu = Path(tmp) / "two.cpp"
    tu.write_text("#define GLR_ONLY_BF16\n#define GLR_ONLY_F16\n#include \"glr/cuda/built.hpp\"\n")
    r = subprocess.run(host_compile(tu), capture_output=True, text=True)
    if r.returncode == 0 or "at most one of GLR_ONLY" not in r.stderr:
        fails.append(f"two GLR_ONLY_<T> compiled (rc {r.returncode}): {r.stderr[-300:]}")
    tu.write_text("#define GLR_ONLY_BF16\n#include \"glr/cuda/built.hpp\"\n"
                  "static_assert(GLR_BUILDS_BF16 && !GLR_BUILDS_F32 && !GLR_BUILDS_F16 && !GLR_BUILDS_F64);\n"
                  "static_assert(GLR_BUILDS_BACKWARD);\n")
    r = subprocess.run(host_compile(tu), capture_output=True, text=True)
    if r.returncode != 0:
        fails.append(f"GLR_ONLY_BF16 alone: {r.stderr[-300:]}")


def entries(source, tmp, extra=()):
    ptx = Path(tmp) / (Path(source).stem + "".join(extra).replace("-", "_") + ".ptx")
    r = subprocess.run(["nvcc", "-std=c++17", "-O3", "-ptx", "-gencode", "arch=compute_90a,code=compute_90a",
                        f"-I{ROOT / 'include'}", *extra, "-o", str(ptx), str(source)], capture_output=True, text=True)
    if r.returncode != 0:
        raise RuntimeError(f"nvcc on {source}: {r.stderr[-600:]}")
    names = re.findall(r"^\.(?:visible|weak)? ?\.entry (\S+)\(", ptx.read_text(), re.M)
    demangled = subprocess.run(["c++filt"], input="\n".join(names), capture_output=True, text=True).stdout.split("\n")
    return [d for d in demangled if d]


def check_ptx(fails, tmp):
    src = ROOT / "glr/controls/cuda/glr_fwd.cu"
    got = entries(src, tmp)
    kernels = [e for e in got if "::cand::" not in e]  # the candidate front's strided copies are untyped
    if not kernels or not any("sm90_glr_fwd<float" in e for e in kernels):
        fails.append(f"glr_fwd.cu (f32, forward only): no f32 forward kernel among {got}")
    bad = [e for e in kernels if re.search(r"bfloat16|__half|double|bwd", e)]
    if bad:
        fails.append(f"glr_fwd.cu (f32, forward only) builds kernels it never runs: {bad[:6]}")
    f64 = Path(tmp) / "fwd_f64.cu"
    f64.write_text(src.read_text().replace("#define GLR_ONLY_F32", "#define GLR_ONLY_F64"))
    got = [e for e in entries(f64, tmp) if "::cand::" not in e]
    if not any("sm90_glr_fwd<double" in e for e in got) or any("float," in e.split("<", 1)[-1][:6] for e in got):
        fails.append(f"the same source with GLR_ONLY_F64: {got}")


def main():
    fails = []
    check_declarations(fails)
    with tempfile.TemporaryDirectory() as tmp:
        if shutil.which("nvcc"):  # built.hpp includes the CUDA headers; the PTX needs nvcc
            check_two_types(fails, tmp)
            check_ptx(fails, tmp)
        else:
            print("SKIP: nvcc not found: only the declarations were checked, not the header or the PTX")
    return finish("glr.controls_build_their_kernels", fails)


if __name__ == "__main__":
    sys.exit(main())
