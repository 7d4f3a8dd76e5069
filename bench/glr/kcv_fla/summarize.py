"""The side-by-side table of device_gates.sh: one column per verification (kcv.report/1 JSON files
in REPORTS; NAME.part*.json merged), one row per gate: verdict, seconds, worst error/bound; then the evidence of every gate
that did not pass, and what each verification's log ends with when it left no report.

    python3 summarize.py REPORTS_DIR LOGS_DIR NAME... > summary.md
"""
import json
import os
import sys

GATES = ["numerics", "shapes", "values", "nonfinite", "bounds", "inputs_intact", "coverage", "determinism",
         "layout", "stateless", "concurrency", "sanitizer"]


def read(path):
    try:
        with open(path) as f:
            r = json.load(f)
    except (OSError, ValueError):
        return None
    for g in r.get("gates", []):
        g["_file"] = os.path.basename(path)
    return r


def load(reports, name):
    """NAME.json, or NAME.part*.json merged: a verification split into gate groups run side by
    side, each gate taken from the part that ran it."""
    r = read(os.path.join(reports, name + ".json"))
    if r is not None:
        return r
    parts = [read(os.path.join(reports, f)) for f in sorted(os.listdir(reports))
             if f.startswith(name + ".part") and f.endswith(".json")] if os.path.isdir(reports) else []
    parts = [p for p in parts if p]
    if not parts:
        return None
    gates = []
    for gid in GATES:
        got = [g for p in parts for g in p["gates"] if g["id"] == gid]
        ran = [g for g in got if g["verdict"] != "SKIPPED"]
        if ran or got:
            gates.append((ran or got)[0])
    bad = any(g["verdict"] not in ("PASS", "SKIPPED") for g in gates)
    return {"verdict": "FAIL" if bad else "PASS", "gates": gates, "kernelbench": parts[0].get("kernelbench", {}),
            "seed": " / ".join(str(p.get("seed")) for p in parts)}


def cell(g):
    if g is None:
        return "-"
    s = f"{g['verdict']} {g.get('seconds', 0):.0f}s"
    w = g.get("worst")
    if w and w.get("bound"):
        s += f" ({w['error'] / w['bound']:.2g}·bound)"
    return s


def tail(path, n=6):
    try:
        with open(path, errors="replace") as f:
            return "".join(f.readlines()[-n:]).rstrip()
    except OSError:
        return "(no log)"


def main():
    reports, logs, names = sys.argv[1], sys.argv[2], sys.argv[3:]
    reps = {n: load(reports, n) for n in names}
    out = ["| gate | " + " | ".join(names) + " |", "|---|" + "---|" * len(names)]
    for gid in GATES:
        row = []
        for n in names:
            r = reps[n]
            row.append(cell(next((g for g in r["gates"] if g["id"] == gid), None)) if r else "no report")
        out.append(f"| {gid} | " + " | ".join(row) + " |")
    def kb(r, *path):
        v = r.get("kernelbench", {}) if r else {}
        for p in path:
            v = v.get(p, {}) if isinstance(v, dict) else {}
        return v if v != {} else "-"
    out.append("| **verdict** | " + " | ".join((reps[n] or {}).get("verdict", "no report") for n in names) + " |")
    out.append("| KernelBench allclose | " + " | ".join(str(kb(reps[n], "baseline", "verdict")) for n in names) + " |")
    out.append("| seed | " + " | ".join(str((reps[n] or {}).get("seed", "-")) for n in names) + " |")
    out.append("")
    for n in names:
        r = reps[n]
        if r is None:
            found = sorted(f for f in (os.listdir(logs) if os.path.isdir(logs) else [])
                           if f.startswith(n + ".") and f.endswith(".txt")) or [n + ".txt"]
            out.append(f"### {n}: no report\n" + "\n".join(
                f"{f}:\n```\n{tail(os.path.join(logs, f))}\n```" for f in found))
            continue
        bad = [g for g in r["gates"] if g["verdict"] not in ("PASS", "SKIPPED")]
        skipped = [g for g in r["gates"] if g["verdict"] == "SKIPPED"]
        if not bad and not skipped:
            continue
        out.append(f"### {n}")
        for g in bad + skipped:
            ev = " ".join(str(g.get("evidence", "")).split())
            out.append(f"- **{g['id']}** {g['verdict']} (case {g.get('failing_case', -1)}, "
                       f"replay: `kcv replay {g.get('_file', n + '.json')} --gate {g['id']} --case {g.get('failing_case', -1)}`): "
                       f"{ev[:600]}{' ...' if len(ev) > 600 else ''}")
    print("\n".join(out))


if __name__ == "__main__":
    main()
