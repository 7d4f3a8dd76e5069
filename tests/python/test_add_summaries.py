#!/usr/bin/env python3
"""bench/kernelbench/add_summaries.py adds the summaries of corpus runs over disjoint pairs (issue 21:
session 26's journal was lost, its summary kept): the headline split and the per-gate counts are
sums, the kcv builds are named, and a file of another schema is refused with exit 1."""
import json, subprocess, sys, tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(Path(__file__).resolve().parent))
from script_check import finish  # noqa: E402
SCRIPT = ROOT / "bench/kernelbench/add_summaries.py"


def summary(build, verified, setup, own, library, concurrency_only):
    gate = lambda gid, f, o, l, only: {"id": gid, "failures": f, "own_convention": o, "library_only": l,
                                        "only_this_gate": only, "crash": 0, "timeout": 0}
    return {"schema": "kcv.corpus-summary/1", "kcv_builds": [build], "results": verified + setup,
            "verified": verified, "setup_error": setup, "timeout": 0, "verifier_crash": 0,
            "accepted": verified, "accepted_fail_any": verified, "accepted_fail_tolerance_independent": verified,
            "baseline_pass": verified,
            "accepted_split": {"own_convention": own, "library_only": library, "crash": 0, "unknown": 0},
            "gates": [gate("nonfinite", own, own, 0, 0), gate("concurrency", verified, 0, verified, concurrency_only)]}


def run(*paths):
    return subprocess.run([sys.executable, str(SCRIPT), *map(str, paths)], capture_output=True, text=True)


def main():
    failures = []
    with tempfile.TemporaryDirectory() as d:
        a, b, bad = Path(d) / "a.json", Path(d) / "b.json", Path(d) / "bad.json"
        a.write_text(json.dumps(summary("0.1.0 aaaa", 65, 0, 13, 52, 8)))
        b.write_text(json.dumps(summary("0.1.0 bbbb", 34, 1, 7, 27, 4)))
        bad.write_text(json.dumps({"schema": "kcv.report/1"}))
        r = run(a, b)
        if r.returncode != 0:
            failures.append(f"two summaries: exit {r.returncode}: {r.stderr}")
        for want in ["kcv builds: 0.1.0 aaaa, 0.1.0 bbbb", "pairs 100: verified 99, setup errors 1",
                     "in their own calling convention 20 (20.2%)", "only as a library op 79 (79.8%)",
                     "| nonfinite | 20 | 20 | 0 | 0 |", "| concurrency | 99 | 0 | 99 | 12 |"]:
            if want not in r.stdout:
                failures.append(f"missing {want!r} in:\n{r.stdout}")
        r = run(a, bad)
        if r.returncode != 1 or "not a kcv.corpus-summary/1 document" not in r.stderr:
            failures.append(f"another schema: exit {r.returncode}, stderr {r.stderr!r}")
        r = run()
        if r.returncode != 1 or "usage:" not in r.stderr:
            failures.append(f"no argument: exit {r.returncode}, stderr {r.stderr!r}")
    return finish("add_summaries", failures)


if __name__ == "__main__":
    sys.exit(main())
