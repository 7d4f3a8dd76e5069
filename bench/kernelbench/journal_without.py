#!/usr/bin/env python3
"""Take result records out of a corpus journal, so that a resumed `kcv corpus run` verifies those
pairs again. The journal is append-only for kcv; this is the operator's tool for a rerun.

Usage: journal_without.py JOURNAL [--status S[,S...]] [--key-regex RE] [--refused-at-most N]
                                   [--pending-retries]

A result record goes when it matches any of the given selectors:
  --status           its status (verified, setup_error, timeout, verifier_crash)
  --key-regex        its key (re.search)
  --refused-at-most  a cap refusal of a problem that moves at most N elements per call (the
                     refusals a raised cap now admits)
A dropped result's "retry" records go with it. --pending-retries drops the "retry" records of the
pairs that have no result yet: a resume then starts them as first runs, beside as many others as
--jobs and the run's admission limit allow, instead of beside at most the halved count each retry
record carries (for a journal queued on a smaller GPU and resumed on a larger one). The old journal
is kept beside it as JOURNAL.<UTC time>.bak; the kept lines are written unchanged.
"""
import argparse
import datetime
import fcntl
import json
import os
import re
import shutil
import sys


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("journal")
    ap.add_argument("--status", default="")
    ap.add_argument("--key-regex", default=None)
    ap.add_argument("--refused-at-most", type=int, default=None,
                    help="cap refusals of problems moving at most this many elements per call")
    ap.add_argument("--pending-retries", action="store_true",
                    help="the retry records of pairs with no result yet (they rerun as first runs)")
    a = ap.parse_args()
    statuses = {s for s in a.status.split(",") if s}
    if not statuses and a.key_regex is None and a.refused_at_most is None and not a.pending_retries:
        sys.exit("journal_without.py: give --status, --key-regex, --refused-at-most or --pending-retries")
    key_re = re.compile(a.key_regex) if a.key_regex is not None else None

    def goes(r):
        if r.get("kind") != "result":
            return False
        if r.get("status") in statuses or (key_re and key_re.search(r.get("key", ""))):
            return True
        if a.refused_at_most is not None and r.get("status") == "setup_error":
            m = re.search(r"moves (\d+) elements per call", r.get("error") or "")
            return bool(m) and int(m.group(1)) <= a.refused_at_most
        return False

    lock = open(a.journal, "rb")
    try:
        fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)  # as kcv's Journal: not while a run holds it
    except OSError:
        sys.exit(f"journal_without.py: {a.journal} is in use by a kcv corpus run; not changed")
    lines = lock.read().split(b"\n")
    # A last line without its newline is a write cut short (kill -9): kcv drops it, and so does this.
    partial = lines.pop()
    if partial.strip():
        print("dropped a last line cut short")
    kept, dropped = [], []
    for raw in lines:
        if not raw.strip():
            continue
        try:
            r = json.loads(raw)
        except json.JSONDecodeError:
            sys.exit(f"journal_without.py: {a.journal}: a line is not JSON; not changed")
        (dropped if goes(r) else kept).append((raw, r))
    # A "retry" record (the pair ran out of GPU memory beside others) goes with its key's result:
    # the rerun is a fresh one, not a retry alone.
    gone = {r.get("key") for _, r in dropped}
    if a.pending_retries:  # the retries of keys with no result left: every pair still queued
        judged = {r.get("key") for _, r in kept if r.get("kind") == "result"}
        gone |= {r.get("key") for _, r in kept if r.get("kind") == "retry" and r.get("key") not in judged}
    dropped += [(raw, r) for raw, r in kept if r.get("kind") == "retry" and r.get("key") in gone]
    kept = [(raw, r) for raw, r in kept if not (r.get("kind") == "retry" and r.get("key") in gone)]
    backup = f"{a.journal}.{datetime.datetime.now(datetime.timezone.utc):%Y%m%dT%H%M%SZ}.bak"
    shutil.copy2(a.journal, backup)
    tmp = a.journal + ".tmp"
    with open(tmp, "wb") as f:
        for raw, _ in kept:
            f.write(raw + b"\n")
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, a.journal)
    for _, r in dropped:
        print(f"dropped {r.get('key')} ({r.get('status') or r.get('kind')})")
    print(f"{len(dropped)} records dropped, {len(kept)} kept; the old journal is {backup}")


if __name__ == "__main__":
    main()
