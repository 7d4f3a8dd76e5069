#!/usr/bin/env python3
"""Where a corpus run's verification time went, per pair (issue 22: one candidate's time split into
build, reference, calls and judging; issue 24: kcv's own share), from the run's journal.

Usage: parts_from_journal.py OUT/journal.jsonl

Each verified pair's report has `seconds_by_part` (kcv 3690a22 and later): build (the KernelBench
solution's compile), make (cases drawn and staged), calls (in workers, transfers included),
reference (the reference's answers: server, disk cache, decoding) and judging, wall seconds of the
verifier's gate thread. Prints their mean, median and share per pair, beside the pair's wall and CPU
seconds; pairs from an older kcv (no seconds_by_part) are counted and left out.
"""
import json
import statistics
import sys

PARTS = ("build", "make", "calls", "reference", "judging")


def main(path):
    rows, older = [], 0
    for line in open(path, encoding="utf-8"):
        r = json.loads(line)
        if r.get("kind") != "result" or not isinstance(r.get("report"), dict):
            continue
        parts = r["report"].get("seconds_by_part")
        if not isinstance(parts, dict):
            older += 1
            continue
        rows.append((r, parts))
    if not rows:
        sys.exit(f"{path}: no verified pair with seconds_by_part ({older} from an older kcv)")
    print(f"{len(rows)} pairs with seconds_by_part ({older} without)\n")
    print("| per pair | mean s | median s | share of the parts |")
    print("|---|---|---|---|")
    total = sum(sum(p.get(k, 0.0) for k in PARTS) for _, p in rows)
    for k in PARTS:
        xs = [p.get(k, 0.0) for _, p in rows]
        print(f"| {k} | {statistics.mean(xs):.1f} | {statistics.median(xs):.1f} | {100 * sum(xs) / total:.1f}% |")
    walls = [r.get("wall_seconds", 0.0) for r, _ in rows]
    cpus = [r.get("cpu_seconds", 0.0) for r, _ in rows]
    print(f"| wall (pair) | {statistics.mean(walls):.1f} | {statistics.median(walls):.1f} | |")
    print(f"| CPU (pair and its processes) | {statistics.mean(cpus):.1f} | {statistics.median(cpus):.1f} | |")


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    main(sys.argv[1])
