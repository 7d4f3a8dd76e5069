#!/usr/bin/env python3
"""Runs ctest-registered tests on a machine that has a copy of the tree at another path and no
configured build directory (the lent GPU machine): the tests come from a JSON dump made where the
tree was configured, their paths are moved to this copy, and each runs with its own timeout and
its ENVIRONMENT property.

  here:   (cd build && ctest --show-only=json-v1 -R 'control\\.torch\\.cuda') > .xfer/tests.json
  there:  scripts/ctest_elsewhere.py .xfer/tests.json --bin DIR_WITH_KCV --jobs 6 --logs $OUT/logs

The dump's source root and build directory are read from the dump itself (the first test's
working directory is the build directory, its parent the source root); `--bin` names where kcv and
kcv-worker are here, `cmake` is taken from PATH, and a test run by a Python interpreter
(python3 tests/python/...) runs by $KCV_PYTHON when that is set (where torch is on this machine).
Prints one line per test and a ctest-style summary; exit 0 when every test passed or skipped (a test skips when its output matches its
SKIP_REGULAR_EXPRESSION).
"""
import argparse, concurrent.futures, json, os, re, shutil, subprocess, sys, time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def prop(test, name, default=None):
    for p in test.get("properties", []):
        if p["name"] == name:
            return p["value"]
    return default


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("dump", help="ctest --show-only=json-v1 output")
    ap.add_argument("--bin", required=True, help="directory holding kcv and kcv-worker on this machine")
    ap.add_argument("--jobs", type=int, default=4)
    ap.add_argument("--logs", help="directory for each test's output (NAME.txt)")
    ap.add_argument("--timeout", type=float, help="per-test limit in seconds (default: the test's own)")
    ap.add_argument("--deadline", type=float,
                    help="seconds after which no test starts (those left print as NotRun); a device "
                         "command's own limit would otherwise kill the run before it prints anything")
    a = ap.parse_args()
    tests = json.loads(Path(a.dump).read_text()).get("tests", [])
    if not tests:
        sys.exit(f"{a.dump}: no tests in the dump")
    build = Path(prop(tests[0], "WORKING_DIRECTORY"))
    src = build.parent
    binary = Path(a.bin).resolve()
    if not (binary / "kcv").exists():
        sys.exit(f"--bin {binary}: no kcv there")
    cmake = shutil.which("cmake")
    if not cmake:
        sys.exit("cmake not on PATH")
    scratch = Path(os.environ.get("TMPDIR", "/tmp")) / "ctest_elsewhere"
    (scratch / "control-reports").mkdir(parents=True, exist_ok=True)
    if a.logs:
        Path(a.logs).mkdir(parents=True, exist_ok=True)

    def move(word):  # through placeholders, so that no replacement rewrites another's result
        for i, old in enumerate((str(build / "kcv"), str(build), str(src))):
            word = word.replace(old, f"\0{i}\0")
        for i, new in enumerate((str(binary / "kcv"), str(scratch), str(ROOT))):
            word = word.replace(f"\0{i}\0", new)
        return word

    start = time.time()

    def run(t):
        cmd = [move(w) for w in t["command"]]
        if cmd[0].endswith("cmake"):
            cmd[0] = cmake
        elif re.fullmatch(r"python3?(\.\d+)?", Path(cmd[0]).name) and os.environ.get("KCV_PYTHON"):
            cmd[0] = os.environ["KCV_PYTHON"]  # the interpreter that holds torch here, not the configure's
        limit = a.timeout or prop(t, "TIMEOUT", 1500)
        env = dict(os.environ)  # the test's ENVIRONMENT property (NAME=VALUE each), as ctest sets it
        for kv in prop(t, "ENVIRONMENT", []) or []:
            name, _, value = kv.partition("=")
            env[name] = move(value)
        if a.deadline and time.time() - start > a.deadline:
            return t["name"], "NotRun", 0.0, ""
        t0 = time.time()
        try:
            p = subprocess.run(cmd, cwd=scratch, env=env, capture_output=True, text=True, timeout=limit)
            out, rc = p.stdout + p.stderr, p.returncode
        except subprocess.TimeoutExpired as e:
            out, rc = (e.stdout or b"").decode(errors="replace") + "\n(timeout)", None
        skip = any(re.search(rx, out) for rx in prop(t, "SKIP_REGULAR_EXPRESSION", []) or [])
        verdict = "Skipped" if skip else "Passed" if rc == 0 else "Timeout" if rc is None else "Failed"
        if a.logs:
            (Path(a.logs) / f"{t['name']}.txt").write_text(" ".join(cmd) + "\n\n" + out)
        return t["name"], verdict, time.time() - t0, out

    results = []
    # Each line as its test ends (flushed), so a run cut short still says what it got.
    with concurrent.futures.ThreadPoolExecutor(a.jobs) as ex:
        for future in concurrent.futures.as_completed([ex.submit(run, t) for t in tests]):
            name, verdict, secs, out = future.result()
            results.append((name, verdict, secs, out))
            print(f"{verdict:8} {secs:7.1f} s  {name}", flush=True)
            if verdict in ("Failed", "Timeout"):
                print("    " + "\n    ".join(out.strip().splitlines()[-6:]), flush=True)
    bad = [r for r in results if r[1] in ("Failed", "Timeout")]
    not_run = sum(r[1] == "NotRun" for r in results)
    n = len(results)
    print(f"\n{100 * (n - len(bad) - not_run) // n}% tests passed, {len(bad)} tests failed out of {n} "
          f"({sum(r[1] == 'Skipped' for r in results)} skipped, {not_run} not run: past --deadline), "
          f"{time.time() - start:.0f} s wall")
    sys.exit(1 if bad or not_run else 0)


if __name__ == "__main__":
    main()
