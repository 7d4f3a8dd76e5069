#!/usr/bin/env python3
"""bench/glr/headers_id.sh and bench_glr_vs_fla.headers_id: the content identity of a header tree that
the device scripts and the benchmark record instead of the device copy's git metadata. The shell and
Python forms agree (on include/ and on a made tree), a copy has the same id, one changed byte, a renamed
file or an added file changes it, and a directory that is not there is refused (exit 2)."""
import shutil, subprocess, sys, tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from script_check import finish  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "bench/glr"))
from bench_glr_vs_fla import headers_id  # noqa: E402  (imports no torch at module level)

SCRIPT = ROOT / "bench/glr/headers_id.sh"


def shell_id(d):
    r = subprocess.run([str(SCRIPT), str(d)], capture_output=True, text=True)
    return r.stdout.strip() if r.returncode == 0 else f"rc {r.returncode}: {r.stderr.strip()}"


def main():
    fails = []
    a, b = shell_id(ROOT / "include"), headers_id(str(ROOT / "include"))
    if a != b or len(a) != 16:
        fails.append(f"include/: shell {a!r}, python {b!r}")
    with tempfile.TemporaryDirectory() as tmp:
        t = Path(tmp) / "inc"
        (t / "glr/cuda").mkdir(parents=True)
        (t / "glr/cuda/a.cuh").write_text("int a;\n")
        (t / "glr/b.hpp").write_text("int b;\n")
        (t / "Z.h").write_text("z\n")
        base = shell_id(t)
        if base != headers_id(str(t)):
            fails.append(f"a made tree: shell {base!r}, python {headers_id(str(t))!r}")
        copy = Path(tmp) / "copy"
        shutil.copytree(t, copy)
        if shell_id(copy) != base:
            fails.append("a copy of the tree has another id")
        for what, change in (("one byte changed", lambda d: (d / "glr/b.hpp").write_text("int c;\n")),
                             ("a file renamed", lambda d: (d / "Z.h").rename(d / "Y.h")),
                             ("a file added", lambda d: (d / "glr/cuda/new.cuh").write_text(""))):
            d = Path(tmp) / what.replace(" ", "_")
            shutil.copytree(t, d)
            change(d)
            if shell_id(d) == base or headers_id(str(d)) == base:
                fails.append(f"{what}: the id did not change")
            elif shell_id(d) != headers_id(str(d)):
                fails.append(f"{what}: shell and python differ")
        r = subprocess.run([str(SCRIPT), str(Path(tmp) / "nowhere")], capture_output=True, text=True)
        if r.returncode != 2 or "not a directory" not in r.stderr:
            fails.append(f"a missing directory: rc {r.returncode}")
    return finish("scripts.headers_id", fails)


if __name__ == "__main__":
    sys.exit(main())
