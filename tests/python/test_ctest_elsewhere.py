#!/usr/bin/env python3
"""scripts/ctest_elsewhere.py runs a dumped test as ctest would: with its ENVIRONMENT property
(the *_calibrated torch controls set KCV_TORCH_BOUND=calibrated that way: without it they ran under
the default bound on the H200 and passed where they must fail), its paths moved to this tree, and
a verdict from its exit code; a Python test by $KCV_PYTHON (the device's torch interpreter)."""
import json, os, subprocess, sys, tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def run(tests, tmp):
    dump = tmp / "dump.json"
    dump.write_text(json.dumps({"tests": tests}))
    return subprocess.run([sys.executable, str(ROOT / "scripts/ctest_elsewhere.py"), str(dump), "--bin", str(tmp),
                           "--jobs", "2", "--logs", str(tmp / "logs")], capture_output=True, text=True)


def test(name, env, expect_env_value):
    # The dump was made in a tree at /elsewhere/src (build dir /elsewhere/src/build); the command
    # reads the variable and the moved path, and exits 0 only when both are what ctest would give.
    check = f'test "$KCV_X" = "{expect_env_value}" && test -d "$(dirname "$KCV_P")"'
    props = [{"name": "WORKING_DIRECTORY", "value": "/elsewhere/src/build"}]
    if env is not None:
        props.append({"name": "ENVIRONMENT", "value": env})
    return {"name": name, "command": ["/bin/sh", "-c", check], "properties": props}


def main():
    with tempfile.TemporaryDirectory() as d:
        tmp = Path(d)
        (tmp / "kcv").write_text("")  # --bin must hold kcv
        tests = [test("with_env", ["KCV_X=calibrated", "KCV_P=/elsewhere/src/scripts/x"], "calibrated"),
                 test("without_env", None, "calibrated"),
                 # A Python test runs by $KCV_PYTHON (here a shell script that says so), not the dump's interpreter.
                 {"name": "by_kcv_python", "command": ["/nowhere/bin/python3", "-c", "raise SystemExit(3)"],
                  "properties": [{"name": "WORKING_DIRECTORY", "value": "/elsewhere/src/build"}]}]
        fake = tmp / "fake_python"
        fake.write_text('#!/bin/sh\nexit 0\n')
        fake.chmod(0o755)
        os.environ["KCV_PYTHON"] = str(fake)
        p = run(tests, tmp)
        out = p.stdout + p.stderr
        lines = {l.split()[-1]: l.split()[0] for l in p.stdout.splitlines() if l.startswith(("Passed", "Failed"))}
        ok = (lines.get("with_env") == "Passed" and lines.get("without_env") == "Failed"
              and lines.get("by_kcv_python") == "Passed" and p.returncode != 0)
        print(out)
        if not ok:
            print("FAIL: expected with_env Passed (its ENVIRONMENT applied, its path moved), without_env Failed, "
                  "by_kcv_python Passed ($KCV_PYTHON ran it), exit != 0")
            return 1
        print("ok: the ENVIRONMENT property applied and moved; a test without it sees no variable")
        return 0


if __name__ == "__main__":
    sys.exit(main())
