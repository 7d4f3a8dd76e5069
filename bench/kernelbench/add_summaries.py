#!/usr/bin/env python3
"""The headline split (issue 21 item 4) of one corpus run over several calls whose journals were not
all kept, from each call's summary.json (kcv.corpus-summary/1).

Usage: add_summaries.py SUMMARY.json [SUMMARY.json ...]

A corpus run cut by the device's limits and resumed from its journal gets one summary for the whole
run from `kcv report`. Where a journal was lost (the machine that held it was reset) and the pairs
it did not reach were run as a second corpus, only the summaries remain. Their counts are over
disjoint pairs, so they add: verified, setup errors, the accepted pairs and their split (own calling
convention, library op only, crash in every gate), and per gate its failures, own-convention and
library-only failures, and the pairs that fail it alone. This prints the sums as markdown. It
refuses summaries of another schema, and says which kcv builds wrote them: pairs judged by
different builds are added only as honestly as those builds agree.
"""
import json
import sys

COUNTS = ("results", "verified", "setup_error", "timeout", "verifier_crash", "accepted",
          "accepted_fail_any", "accepted_fail_tolerance_independent", "baseline_pass")
SPLIT = ("own_convention", "library_only", "crash", "unknown")
GATE = ("failures", "own_convention", "library_only", "only_this_gate", "crash", "timeout")


def load(path):
    with open(path, encoding="utf-8") as f:
        d = json.load(f)
    if d.get("schema") != "kcv.corpus-summary/1":
        sys.exit(f"add_summaries: {path}: not a kcv.corpus-summary/1 document (schema {d.get('schema')!r})")
    return d


def pct(n, d):
    return f"{100.0 * n / d:.1f}%" if d else "n/a"


def main(paths):
    if not paths:
        sys.exit("usage: add_summaries.py SUMMARY.json [SUMMARY.json ...]")
    docs = [load(p) for p in paths]
    total = {k: sum(int(d.get(k, 0)) for d in docs) for k in COUNTS}
    split = {k: sum(int(d.get("accepted_split", {}).get(k, 0)) for d in docs) for k in SPLIT}
    gates = {}
    order = []
    for d in docs:
        for g in d.get("gates", []):
            if g["id"] not in gates:
                order.append(g["id"])
                gates[g["id"]] = dict.fromkeys(GATE, 0)
            for k in GATE:
                gates[g["id"]][k] += int(g.get(k, 0))
    builds = sorted({b for d in docs for b in d.get("kcv_builds", [])})
    acc = total["accepted"]
    print(f"Summaries added: {len(docs)} ({', '.join(paths)}); kcv builds: {', '.join(builds)}\n")
    print(f"- pairs {total['results']}: verified {total['verified']}, setup errors {total['setup_error']}, "
          f"timeouts {total['timeout']}, verifier crashes {total['verifier_crash']}")
    print(f"- of {acc} pairs the baseline accepts: fail any gate {total['accepted_fail_any']} "
          f"({pct(total['accepted_fail_any'], acc)}), a tolerance-independent gate "
          f"{total['accepted_fail_tolerance_independent']} ({pct(total['accepted_fail_tolerance_independent'], acc)}), "
          f"in their own calling convention {split['own_convention']} ({pct(split['own_convention'], acc)}), "
          f"only as a library op {split['library_only']} ({pct(split['library_only'], acc)}), "
          f"crash in every gate {split['crash']} ({pct(split['crash'], acc)})\n")
    print("| gate | failures | own convention | library op only | only this gate |")
    print("|---|---|---|---|---|")
    for gid in order:
        g = gates[gid]
        print(f"| {gid} | {g['failures']} | {g['own_convention']} | {g['library_only']} | {g['only_this_gate']} |")


if __name__ == "__main__":
    main(sys.argv[1:])
