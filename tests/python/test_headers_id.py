#!/usr/bin/env python3
"""bench/glr/headers_id.sh: the content identity of a header tree that the device scripts and the
benchmark (bench_glr_vs_fla.py's glr_headers, which runs this script) record instead of the device
copy's git metadata. 16 hex digits on include/; a copy of a tree has the same id; one changed byte, a
renamed file or an added file changes it; a directory that is not there is refused (exit 2)."""
import re, shutil, subprocess, sys, tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from script_check import finish  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "bench/glr/headers_id.sh"


def shell_id(d):
    r = subprocess.run([str(SCRIPT), str(d)], capture_output=True, text=True)
    return r.stdout.strip() if r.returncode == 0 else f"rc {r.returncode}: {r.stderr.strip()}"


def main():
    fails = []
    a = shell_id(ROOT / "include")
    if not re.fullmatch(r"[0-9a-f]{16}", a):
        fails.append(f"include/: {a!r} is not 16 hex digits")
    with tempfile.TemporaryDirectory() as tmp:
        t = Path(tmp) / "inc"
        (t / "glr/cuda").mkdir(parents=True)
        (t / "glr/cuda/a.cuh").write_text("int a;\n")
        (t / "glr/b.hpp").write_text("int b;\n")
        (t / "Z.h").write_text("z\n")
        base = shell_id(t)
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
            if shell_id(d) == base:
                fails.append(f"{what}: the id did not change")
        r = subprocess.run([str(SCRIPT), str(Path(tmp) / "nowhere")], capture_output=True, text=True)
        if r.returncode != 2 or "not a directory" not in r.stderr:
            fails.append(f"a missing directory: rc {r.returncode}")
    return finish("scripts.headers_id", fails)


if __name__ == "__main__":
    sys.exit(main())
