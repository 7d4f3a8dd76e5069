#!/usr/bin/env python3
"""bench/glr/ptx_same.py on synthetic PTX: the same functions in another order with other label and
local-depot numbers are the same device code; one changed instruction, a missing function or an
extra one is not; a prototype (no body) is not a function; a file with no function is a usage error."""
import subprocess, sys, tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from script_check import finish  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "bench/glr/ptx_same.py"

F = """.visible .entry {name}(
\t.param .u64 {name}_param_0
)
{{
\t.local .align 16 .b8 \t__local_depot{n}[64];
\tld.param.u64 %rd1, [{name}_param_0];
\t@%p1 bra \t$L__BB{n}_2;
\t{op} %r1, %r2, %r3;
$L__BB{n}_2:
\tret;
}}
"""
PROTO = """.extern .func (.param .b32 func_retval0) vprintf
(
\t.param .b64 vprintf_param_0
)
;
.func (.param .b32 r) helper
(
\t.param .b32 x
)
;
"""


def ptx(*fns, proto=False):
    return "//\n.version 8.8\n.target sm_90a\n" + (PROTO if proto else "") + "".join(
        F.format(name=name, n=n, op=op) for name, n, op in fns)


def run(a, b, tmp):
    pa, pb = Path(tmp) / "a.ptx", Path(tmp) / "b.ptx"
    pa.write_text(a)
    pb.write_text(b)
    return subprocess.run([sys.executable, str(SCRIPT), str(pa), str(pb)], capture_output=True, text=True)


def main():
    fails = []
    base = ptx(("_Z1fv", 0, "add.s32"), ("_Z1gv", 1, "mul.lo.s32"), proto=True)
    with tempfile.TemporaryDirectory() as tmp:
        cases = [
            ("reordered, relabelled", ptx(("_Z1gv", 7, "mul.lo.s32"), ("_Z1fv", 3, "add.s32")), 0, "the same device code"),
            ("one instruction changed", ptx(("_Z1fv", 0, "sub.s32"), ("_Z1gv", 1, "mul.lo.s32")), 1, "bodies differ: _Z1fv"),
            ("a function missing", ptx(("_Z1fv", 0, "add.s32")), 1, "only in"),
            ("a function added", ptx(("_Z1fv", 0, "add.s32"), ("_Z1gv", 1, "mul.lo.s32"), ("_Z1hv", 2, "add.s32")),
             1, "_Z1hv"),
        ]
        for what, other, rc, text in cases:
            r = run(base, other, tmp)
            if r.returncode != rc or text not in r.stdout:
                fails.append(f"{what}: rc {r.returncode} (want {rc}), output {r.stdout!r}")
        r = run(base, base, tmp)
        if r.returncode != 0 or "2 functions" not in r.stdout:
            fails.append(f"prototypes counted as functions or swallowed a body: {r.stdout!r}")
        r = run("not ptx\n", base, tmp)
        if r.returncode != 2:
            fails.append(f"a file with no function: rc {r.returncode}, want 2")
    return finish("scripts.ptx_same", fails)


if __name__ == "__main__":
    sys.exit(main())
