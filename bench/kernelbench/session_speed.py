#!/usr/bin/env python3
"""Session against separate verifications (issue 22 target): the 2nd..Nth candidate of one
KernelBench problem through kcv.Session, against the same candidates through separate
`kcv verify --kernelbench` calls, same gates, same seed, same machine; prints the ratio.

    PYTHONPATH=build/python python3 bench/kernelbench/session_speed.py PROBLEM.py [SOLUTION.py ...]
        [--kcv build/kcv] [--backend cpu] [--python /usr/bin/python3] [--copies N] [--gates G,G]
        [--pause S] [--skip-first-separate | --session-only] [--json FILE]

Without solutions the problem itself is the candidate (its own reference control), offered
--copies times (default 4). Per candidate: the wall time, and the reference answers the session
computed versus served from its cache. A markdown table and the ratio
separate / session over candidates 2..N (the first pays the session's start). Then the
session's candidates per minute (over 2..N) and each candidate's time split: build (the report's
kernelbench.compile_seconds: the worker's start, torch's import, the solution's load and its
load_inline build), the gates (the sum of their seconds, split by the report's seconds_by_part into making the cases,
the calls, the reference's answers and judging; the gates that cost most are named),
and the rest (the private copy, the backend probe, the report). --skip-first-separate leaves out
candidate 1's separate run, which the ratio does not use (a device budget). --pause S waits S
seconds before each candidate after the first, untimed, in both loops (a generator loop's LLM
call): the session-wide pool's workers start in it (docs/architecture.md). --session-only runs no
separate verification (the throughput and the split alone, where the device budget has no room for both).
"""
import argparse
import functools
import json
import os
import subprocess
import sys
import time

import kcv

print = functools.partial(print, flush=True)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("problem")
    ap.add_argument("solutions", nargs="*")
    ap.add_argument("--kcv", default=os.path.join("build", "kcv"))
    ap.add_argument("--backend", default="cpu")
    ap.add_argument("--python", default=os.environ.get("KCV_PYTHON") or "/usr/bin/python3")
    ap.add_argument("--copies", type=int, default=4)
    ap.add_argument("--gates", default="")
    ap.add_argument("--seed", type=int, default=12345)
    ap.add_argument("--skip-first-separate", action="store_true")
    ap.add_argument("--session-only", action="store_true",
                    help="no separate kcv verify runs (throughput and the split only; no ratio)")
    ap.add_argument("--pause", type=float, default=0.0, help="untimed seconds before each candidate after the first")
    ap.add_argument("--json", default="", help="write the session's reports here (one JSON list)")
    a = ap.parse_args()
    sols = a.solutions or [a.problem] * a.copies
    if len(sols) < 2:
        sys.exit("session_speed: give at least two candidates (or --copies >= 2)")
    gates = [g for g in a.gates.split(",") if g] or None

    separate = [(float("nan"), "not run")] * (len(sols) if a.session_only else 1 if a.skip_first_separate else 0)
    for sol in sols[len(separate):]:
        if separate and a.pause > 0:
            time.sleep(a.pause)
        cmd = [a.kcv, "verify", "--kernelbench", a.problem, sol, "--backend", a.backend, "--python", a.python,
               "--seed", str(a.seed), "--quiet"] + (["--gates", ",".join(gates)] if gates else [])
        t = time.monotonic()
        rc = subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL).returncode
        separate.append((time.monotonic() - t, {0: "PASS", 1: "FAIL"}.get(rc, f"rc {rc}")))
        print(f"separate {len(separate)}: {os.path.basename(sol)} {separate[-1][1]} {separate[-1][0]:.2f} s")

    session = []
    t0 = time.monotonic()
    with kcv.Session(a.problem, backend=a.backend, python=a.python, seed=a.seed) as s:
        start = time.monotonic() - t0
        for sol in sols:
            if session and a.pause > 0:
                time.sleep(a.pause)
            misses, hits = s.reference_misses, s.reference_hits
            t = time.monotonic()
            r = s.verify(sol, gates=gates)
            session.append((time.monotonic() - t, r.verdict, s.reference_misses - misses, s.reference_hits - hits, r))
            parts = r.report.get("seconds_by_part") or {}
            print(f"session {len(session)}: {os.path.basename(sol)} {r.verdict} {session[-1][0]:.2f} s "
                  f"(session start {start:.2f} s; build {(r.report.get('kernelbench') or {}).get('compile_seconds')} s; "
                  + ", ".join(f"{g.id} {g.seconds:.1f}" for g in r.gates.values()) + "; by part "
                  + ", ".join(f"{k} {v:.1f}" for k, v in parts.items()) + ")", flush=True)

    print(f"problem {a.problem}, backend {a.backend}, gates {','.join(gates) if gates else 'all 12'}, seed {a.seed}, "
          f"pause {a.pause:g} s, KCV_POOL={os.environ.get('KCV_POOL', '1')}; "
          f"session start (reference server, description) {start:.2f} s")
    print("| # | candidate | separate kcv verify s | verdict | session s | verdict | references computed | served from cache |")
    print("|---|---|---|---|---|---|---|---|")
    for i, (sol, (ts, vs), (tn, vn, miss, hit, _)) in enumerate(zip(sols, separate, session), 1):
        print(f"| {i} | {os.path.basename(sol)} | {ts:.2f} | {vs} | {tn:.2f} | {vn} | {miss} | {hit} |")
    sep = sum(t for t, _ in separate[1:])
    ses = sum(t for t, *_ in session[1:])
    if not a.session_only:
        print(f"\ncandidates 2..{len(sols)}: separate {sep:.2f} s, session {ses:.2f} s: ratio {sep / ses:.2f}x "
              "(target >= 3x)")
    print(f"session throughput over candidates 2..{len(sols)}: {60 * (len(sols) - 1) / ses:.2f} candidates per minute "
          f"(one at a time)")
    print("\nper candidate in the session, s: | # | wall | build (compile_seconds) | gates (sum) | of which: make, "
          "calls, reference, judging | rest | costliest gates |\n|---|---|---|---|---|---|---|")
    for i, (tn, _, _, _, r) in enumerate(session, 1):
        build = float((r.report.get("kernelbench") or {}).get("compile_seconds") or 0.0)
        gates = sum(g.seconds for g in r.gates.values())
        parts = r.report.get("seconds_by_part") or {}
        split = ", ".join(f"{parts.get(k, 0.0):.2f}" for k in ("make", "calls", "reference", "judging")) \
            if parts else "(kcv before 3690a22)"
        top = sorted(r.gates.values(), key=lambda g: -g.seconds)[:3]
        print(f"| {i} | {tn:.2f} | {build:.2f} | {gates:.2f} | {split} | {tn - build - gates:.2f} | "
              + ", ".join(f"{g.id} {g.seconds:.2f}" for g in top) + " |")
    if a.json:
        json.dump([r.report for *_, r in session], open(a.json, "w"), indent=1)
    same = all(vs == vn for (_, vs), (_, vn, *_) in zip(separate, session) if vs != "not run")
    print("verdicts agree" if same else "VERDICTS DIFFER")
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main())
