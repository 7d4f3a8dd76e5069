#!/usr/bin/env python3
"""bench/kernelbench/journal_without.py: the operator's tool to rerun pairs of a corpus journal.
A result goes by --status or --key-regex, its retry records with it; --pending-retries drops the
retry records of pairs with no result (they restart as first runs), and keeps a judged pair's; no
selector is refused (non-zero exit, the journal unchanged); the old journal is kept as a .bak."""
import json, subprocess, sys, tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(Path(__file__).resolve().parent))
from script_check import checker, finish  # noqa: E402
SCRIPT = ROOT / "bench/kernelbench/journal_without.py"

RECORDS = [
    {"kind": "run", "started": "2026-12-06T16:29:12Z"},
    {"kind": "result", "key": "a/p.py", "status": "verified"},
    {"kind": "retry", "key": "b/p.py", "beside_at_most": 6},
    {"kind": "result", "key": "b/p.py", "status": "verified", "retried_beside_at_most": 6},
    {"kind": "retry", "key": "c/p.py", "beside_at_most": 6},
    {"kind": "retry", "key": "c/p.py", "beside_at_most": 3},
    {"kind": "result", "key": "d/p.py", "status": "setup_error"},
    {"kind": "retry", "key": "e/p.py", "beside_at_most": 1},
]


def run(journal, *args):
    return subprocess.run([sys.executable, str(SCRIPT), str(journal), *args], capture_output=True, text=True)


def fresh(t, name):
    j = Path(t) / name
    j.write_text("".join(json.dumps(r) + "\n" for r in RECORDS))
    return j


def records(j):
    return [(r["kind"], r.get("key")) for r in map(json.loads, j.read_text().splitlines())]


def main():
    failures, check = checker()
    with tempfile.TemporaryDirectory() as t:
        j = fresh(t, "pending.jsonl")
        r = run(j, "--pending-retries")
        check(r.returncode == 0, f"--pending-retries exit {r.returncode}: {r.stderr}")
        check(records(j) == [("run", None), ("result", "a/p.py"), ("retry", "b/p.py"), ("result", "b/p.py"),
                             ("result", "d/p.py")], f"--pending-retries kept {records(j)}")
        check("3 records dropped" in r.stdout, f"--pending-retries said {r.stdout!r}")
        check(len(list(Path(t).glob("pending.jsonl.*.bak"))) == 1, "no .bak of the old journal")

        j = fresh(t, "status.jsonl")
        r = run(j, "--status", "setup_error", "--key-regex", "^b/")
        check(r.returncode == 0, f"--status/--key-regex exit {r.returncode}: {r.stderr}")
        check(records(j) == [("run", None), ("result", "a/p.py"), ("retry", "c/p.py"), ("retry", "c/p.py"),
                             ("retry", "e/p.py")], f"--status setup_error --key-regex ^b/ kept {records(j)}")

        j = fresh(t, "none.jsonl")
        before = j.read_text()
        r = run(j)
        check(r.returncode != 0 and "--pending-retries" in r.stderr, f"no selector: exit {r.returncode}, {r.stderr!r}")
        check(j.read_text() == before, "no selector changed the journal")
    return finish("scripts.journal_without", failures)


if __name__ == "__main__":
    sys.exit(main())
