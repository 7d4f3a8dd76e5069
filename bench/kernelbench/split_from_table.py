#!/usr/bin/env python3
"""The headline split (issue 21 item 4; docs/kernelbench.md "The headline split") of a corpus run
whose per-pair JSON reports were not kept, from a results file's per-pair table of failing gates.

Usage: split_from_table.py RESULTS.md "HEADING" [--library-gates layout,concurrency]
                           [--combine level2,level3]

It reads the markdown table that follows the line HEADING in RESULTS.md (columns: pair, status,
strict, baseline, ..., and a last column "gates not passed / reason" as a comma-separated list)
and prints the split as markdown: of the verified pairs that fail, those that fail some gate
outside --library-gates (in the problem's own calling convention), those that fail only gates in
it (library op only), and per gate the pairs that fail it alone.

NOTES: this is only right for runs whose library gates ran *only* library-convention cases, so
that any failure of theirs was a library op's: kcv builds before the null-stream rounds of issue
26 (88c1a30), where `concurrency` wrote the inputs on a side stream in every case and `layout`
passed only strided or offset views. A run with a kcv that writes "convention" per gate needs no
such reasoning: `kcv report OUT` computes the split from its journal (summary.md, summary.json).
A table lists gates, not verdicts, so a pair that crashed in every gate cannot be told apart: the
script says how many pairs list all 12 gates.
"""
import argparse
import collections
import sys


def table_after(path, heading):
    lines = open(path, encoding="utf-8").read().splitlines()
    try:
        start = next(i for i, l in enumerate(lines) if l.strip() == heading.strip())
    except StopIteration:
        sys.exit(f"split_from_table: no line {heading!r} in {path}")
    rows = []
    for line in lines[start + 1:]:
        if not line.startswith("|"):
            if rows:
                break
            continue
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if cells[0] in ("pair",) or set(cells[0]) <= set("-: "):
            continue
        rows.append(cells)
    if not rows:
        sys.exit(f"split_from_table: no table after {heading!r} in {path}")
    return rows


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("results")
    ap.add_argument("heading")
    ap.add_argument("--library-gates", default="layout,concurrency")
    ap.add_argument("--combine", default="level2,level3", help="levels also counted together in one row")
    a = ap.parse_args()
    library = set(g for g in a.library_gates.split(",") if g)
    gate_ids = ["numerics", "shapes", "values", "nonfinite", "bounds", "inputs_intact", "coverage",
                "determinism", "layout", "stateless", "concurrency", "sanitizer"]
    by_level = collections.defaultdict(lambda: collections.Counter())
    only = collections.Counter()
    fails = collections.Counter()
    all_twelve = 0
    for cells in table_after(a.results, a.heading):
        pair, status, strict, baseline = cells[0], cells[1], cells[2], cells[3]
        if status != "verified":
            continue
        level = pair.split("/")[0]
        combined = "+".join(x for x in a.combine.split(",") if x) if level in a.combine.split(",") else None
        gates = [g.strip() for g in cells[-1].split(",") if g.strip() and g.strip() != "—"]
        unknown = [g for g in gates if g not in gate_ids]
        if unknown:
            sys.exit(f"split_from_table: {pair}: not a gate id: {unknown}")
        for key in [k for k in (level, combined, "all") if k]:
            c = by_level[key]
            c["verified"] += 1
            c["accepted"] += baseline == "pass"
            if strict == "PASS" or not gates:
                continue
            where = "own" if any(g not in library for g in gates) else "library"
            c["fail"] += 1
            c[where] += 1
            if baseline == "pass":
                c["accepted_fail"] += 1
                c["accepted_" + where] += 1
        if strict != "PASS" and gates:
            for g in gates:
                fails[g] += 1
            if len(gates) == 1:
                only[gates[0]] += 1
            all_twelve += len(set(gates)) == 12

    def share(n, d):
        return f"{n} of {d} ({100.0 * n / d:.1f}%)" if d else "n/a"

    print("| pairs | verified | fail | of the baseline-accepted: fail any gate | in their own calling convention "
          "| only as a library op |")
    print("|---|---|---|---|---|---|")
    for key in sorted(k for k in by_level if k != "all" and "+" not in k) + sorted(k for k in by_level if "+" in k) + ["all"]:
        c = by_level[key]
        print(f"| {key} | {c['verified']} | {c['fail']} | {share(c['accepted_fail'], c['accepted'])} | "
              f"{share(c['accepted_own'], c['accepted'])} | {share(c['accepted_library'], c['accepted'])} |")
    print()
    print("| gate | pairs failing it | pairs failing it alone |")
    print("|---|---|---|")
    for g in gate_ids:
        if fails[g]:
            print(f"| {g} | {fails[g]} | {only[g]} |")
    print()
    print(f"Library gates: {', '.join(sorted(library))}. Pairs listing all 12 gates (could be a crash in "
          f"every gate): {all_twelve}.")


if __name__ == "__main__":
    main()
