#!/usr/bin/env python3
"""Runs every control of a backend through `kcv verify` and writes a markdown table of the verdicts.

The controls and their expectations come from controls/<backend>/**/controls.cmake (the same
kcv_control() declarations ctest uses). Exit 0 when every control was judged as expected.

  scripts/verify_controls.py --backend cuda --kcv build/kcv --out bench/results/cuda-controls.md
"""
import argparse, concurrent.futures, json, os, re, shlex, subprocess, sys, tempfile, time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def parse_controls(backend):
    controls = []
    for lst in sorted((ROOT / "controls" / backend).rglob("controls.cmake")):
        text = re.sub(r"#.*", "", lst.read_text())
        for body in re.findall(r"kcv_control\s*\((.*?)\)", text, re.S):
            words = shlex.split(body.replace("${CONTROL_DIR}", str(lst.parent)))
            c, key = {"FAILS": [], "PASSES": [], "ARGS": [], "BACKEND": "cpu"}, None
            for w in words:
                if w in ("NAME", "OP", "CANDIDATE", "EXPECT", "FAILS", "PASSES", "BACKEND", "ARGS"):
                    key = w
                elif key in ("FAILS", "PASSES", "ARGS"):
                    c[key].append(w)
                elif key:
                    c[key] = w
            if c["BACKEND"] == backend:
                controls.append(c)
    return controls


def run_one(kcv, backend, c, timeout):
    with tempfile.TemporaryDirectory() as d:
        out = Path(d) / "r.json"
        cmd = [kcv, "verify", "--op", c["OP"], "--candidate", c["CANDIDATE"], "--backend", backend,
               "--json", str(out), "--quiet"] + c["ARGS"]
        t0 = time.time()
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
        wall = time.time() - t0
        if not out.exists():
            return dict(c, verdict=f"ERROR (exit {p.returncode})", failing=[], gate_s=0, wall=wall,
                        ok=False, note=(p.stderr or p.stdout).strip().splitlines()[-1:] or [""])
        r = json.loads(out.read_text())
        failing = [g["id"] + ("" if g["verdict"] == "FAIL" else f" ({g['verdict']})")
                   for g in r["gates"] if g["verdict"] != "PASS"]
        by_id = {g["id"]: g["verdict"] for g in r["gates"]}
        ok = (r["verdict"] == c["EXPECT"] and all(by_id.get(g) not in ("PASS", "SKIPPED", None) for g in c["FAILS"])
              and all(by_id.get(g) == "PASS" for g in c["PASSES"]))
        gate_s = sum(g["seconds"] for g in r["gates"])
        return dict(c, verdict=r["verdict"], failing=failing, gate_s=gate_s, wall=wall, ok=ok,
                    note=[f"{g['id']}: {g['evidence'][:160]}" for g in r["gates"] if g["verdict"] != "PASS"][:1])


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--backend", default="cpu")
    ap.add_argument("--kcv", default=str(ROOT / "build" / "kcv"))
    ap.add_argument("--out", required=True)
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--timeout", type=int, default=900)
    a = ap.parse_args()
    controls = parse_controls(a.backend)
    if not controls:
        sys.exit(f"no controls for backend {a.backend}")
    t0 = time.time()
    with concurrent.futures.ThreadPoolExecutor(a.jobs) as ex:
        results = list(ex.map(lambda c: run_one(a.kcv, a.backend, c, a.timeout), controls))
    lines = [f"| control | expected | verdict | failing gates | gate s | wall s | judged |",
             "|---|---|---|---|---|---|---|"]
    for r in results:
        exp = r["EXPECT"] + (f" ({', '.join(r['FAILS'])})" if r["FAILS"] else "")
        exp += f"; passes {', '.join(r['PASSES'])}" if r["PASSES"] else ""
        lines.append(f"| {r['NAME']} | {exp} | {r['verdict']} | {', '.join(r['failing']) or '-'} | "
                     f"{r['gate_s']:.1f} | {r['wall']:.1f} | {'as expected' if r['ok'] else '**unexpected**'} |")
    bad = [r for r in results if not r["ok"]]
    summary = f"{len(results) - len(bad)} passed, {len(bad)} failed"
    text = "\n".join(lines) + f"\n\n{len(results)} controls in {time.time() - t0:.0f} s wall; {summary}\n"
    for r in bad:
        text += f"\n- unexpected: {r['NAME']}: {r['note']}"
    Path(a.out).write_text(text + "\n")
    print(text)
    print(summary)
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
