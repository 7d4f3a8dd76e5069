#!/usr/bin/env python3
"""Runs every control of a backend through `kcv verify` and writes a markdown table of the verdicts.

The controls and their expectations come from controls/<backend>/**/controls.cmake and glr's
glr/controls/<backend>/controls.cmake (the same kcv_control() declarations ctest uses). Exit 0 when
every control was judged as expected.

  scripts/verify_controls.py --backend cuda --kcv build/kcv --out bench/results/cuda-controls.md

--share-builds: controls that name the same CUDA source candidate (each glr source serves the vector
and the scalar contract of its dtype) build it once. The first control of each source runs as usual with --keep-workdir;
the others then run on the shared object it built, copied out of its workdir: a .so candidate, which
the cuda backend verifies as it verifies the .cu (one private copy for every gate; compute-sanitizer
runs that same library, Candidate::sanitized_library). The sanitizer gate's static TMEM check reads
the .cu source, so it runs in the first control of each source only (it is a property of the source,
the same for all). Not C/C++ sources: the cpu backend's sanitizer gate rebuilds those with ASan,
which a .so cannot be (a cpu run of two glr_fwd_chunk128 controls showed it: 4 sanitizer cases on
the source, 2 on the shared library). Where the first control left no library (its build failed),
the others build for themselves.
"""
import argparse, concurrent.futures, json, os, re, shlex, shutil, subprocess, sys, tempfile, time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
# Where control folders live (tests/controls.cmake globs the same): kcv's, then glr's family's.
CONTROL_ROOTS = (ROOT / "controls", ROOT / "glr" / "controls")


def calls(text):
    """(command, argument text) of every set( ... ), kcv_control( ... ), foreach( ... ) and
    endforeach( ... ) call in order, read as CMake reads them: a '#' outside quotes starts a comment
    and a ')' inside quotes (an EVIDENCE regex) does not end the call."""
    bodies, i = [], 0
    while (m := re.compile(r"^[ \t]*(set|kcv_control|foreach|endforeach)\s*\(", re.M).search(text, i)):
        j, quoted, body = m.end(), False, []
        while j < len(text):
            ch = text[j]
            if quoted:
                if ch == "\\" and j + 1 < len(text):
                    body.append(text[j:j + 2])
                    j += 2
                    continue
                quoted = ch != '"'
            elif ch == '"':
                quoted = True
            elif ch == "#":
                j = text.find("\n", j)
                j = len(text) if j < 0 else j
                continue
            elif ch == ")":
                break
            body.append(ch)
            j += 1
        bodies.append((m.group(1), "".join(body)))
        i = j + 1
    return bodies


def expand(body, variables):
    """The words of a call: ${name} alone expands to its list, inside a word to its text."""
    words = []
    for w in shlex.split(body):
        whole = re.fullmatch(r"\$\{(\w+)\}", w)
        words += variables.get(whole.group(1), []) if whole else \
            [re.sub(r"\$\{(\w+)\}", lambda v: ";".join(variables.get(v.group(1), [])), w)]
    return words


def unrolled(call_list, variables):
    """The calls with each foreach(VAR ITEMS...) ... endforeach() loop unrolled (nested ones too):
    its body once per item, VAR set to the item while it runs, as CMake runs it."""
    i = 0
    while i < len(call_list):
        command, body = call_list[i]
        if command != "foreach":
            if command != "endforeach":
                yield command, body
            i += 1
            continue
        depth, j = 1, i + 1
        while j < len(call_list) and depth:
            depth += {"foreach": 1, "endforeach": -1}.get(call_list[j][0], 0)
            j += 1
        words = expand(body, variables)
        for item in words[1:]:
            variables[words[0]] = [item]
            yield from unrolled(call_list[i + 1:j - 1], variables)
        i = j


def parse_controls(backend):
    controls = []
    for lst in [l for r in CONTROL_ROOTS for l in sorted((r / backend).rglob("controls.cmake"))]:
        variables = {"CONTROL_DIR": [str(lst.parent)]}
        for command, body in unrolled(calls(lst.read_text()), variables):
            words = expand(body, variables)
            if command == "set":
                variables[words[0]] = words[1:]
                continue
            # Every keyword of kcv_control (tests/controls.cmake) ends the list before it, those this
            # script does not judge (OWN, LIBRARY: a failing gate's convention) included.
            lists = ("FAILS", "PASSES", "ARGS", "OWN", "LIBRARY", "TIMEOUTS")
            c, key = {k: [] for k in lists}, None
            c["BACKEND"] = "cpu"
            for w in words:
                if w == "PARSE_REPORTS":  # an option: no value
                    key = None
                elif w in ("NAME", "OP", "CANDIDATE", "EXPECT", "BACKEND", "EVIDENCE", "ABSENT") + lists:
                    key = w
                elif key in lists:
                    c[key].append(w)
                elif key:
                    c[key] = w
            if c["BACKEND"] == backend:
                controls.append(c)
    return controls


SHARED_SOURCES = (".cu",)  # sources whose build every gate uses as it is (see --share-builds above)


def run_one(kcv, backend, c, timeout, reports=None, keep=None, candidate=None):
    """keep: a new directory kcv works in and leaves (--keep-workdir); candidate: the file verified
    in place of c's own (a shared build of it)."""
    with tempfile.TemporaryDirectory() as d:
        out = (Path(reports) / f"{c['NAME']}.json") if reports else Path(d) / "r.json"
        cmd = [kcv, "verify", "--op", c["OP"], "--candidate", candidate or c["CANDIDATE"], "--backend", backend,
               "--json", str(out), "--quiet"] + c["ARGS"] + (["--keep-workdir", str(keep)] if keep else [])
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
        convention = {g["id"]: g.get("convention") for g in r["gates"]}
        # EVIDENCE must match the report's text and ABSENT must not (as tests/controls.cmake judges).
        report_text = out.read_text()
        ok = (r["verdict"] == c["EXPECT"]
              and (not c.get("EVIDENCE") or re.search(c["EVIDENCE"], report_text) is not None)
              and (not c.get("ABSENT") or re.search(c["ABSENT"], report_text) is None) and all(by_id.get(g) not in ("PASS", "SKIPPED", None) for g in c["FAILS"])
              and all(by_id.get(g) == "PASS" for g in c["PASSES"])
              and all(convention.get(g) == "own" for g in c["OWN"])
              and all(convention.get(g) == "library" for g in c["LIBRARY"]))
        gate_s = sum(g["seconds"] for g in r["gates"])
        ratios = [g["worst"]["error"] / g["worst"]["bound"] for g in r["gates"]
                  if "worst" in g and g["worst"]["bound"] > 0]
        return dict(c, verdict=r["verdict"], failing=failing, gate_s=gate_s, wall=wall, ok=ok,
                    worst=max(ratios) if ratios else None, shared=bool(candidate),
                    note=[f"{g['id']}: {g['evidence'][:160]}" for g in r["gates"] if g["verdict"] != "PASS"][:1])


def kept_library(workdir, into):
    """The candidate library kcv built in a kept workdir (candidate.so, Candidate::prepare), copied
    to into (made); None when there is none (the build failed, or kcv stopped before it)."""
    lib = Path(workdir) / "candidate.so"
    if not lib.is_file() or lib.is_symlink():
        return None
    Path(into).parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(lib, into)
    return str(into)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--backend", default="cpu")
    ap.add_argument("--kcv", default=str(ROOT / "build" / "kcv"))
    ap.add_argument("--out", required=True)
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--timeout", type=int, default=900)
    ap.add_argument("--only", help="regex: judge only the controls whose name matches")
    ap.add_argument("--reports", help="directory that keeps each control's JSON report (NAME.json)")
    ap.add_argument("--share-builds", action="store_true",
                    help="build each CUDA source candidate once for every control that names it (see above)")
    a = ap.parse_args()
    controls = [c for c in parse_controls(a.backend) if not a.only or re.search(a.only, c["NAME"])]
    if a.reports:
        Path(a.reports).mkdir(parents=True, exist_ok=True)
    if not controls:
        sys.exit(f"no controls for backend {a.backend}")
    t0 = time.time()

    def render(results, final):
        lines = [f"| control | expected | verdict | failing gates | worst err/bound | gate s | wall s | judged |",
                 "|---|---|---|---|---|---|---|---|"]
        for r in results:
            exp = r["EXPECT"] + (f" ({', '.join(r['FAILS'])})" if r["FAILS"] else "")
            exp += f"; passes {', '.join(r['PASSES'])}" if r["PASSES"] else ""
            exp += f"; own: {', '.join(r['OWN'])}" if r["OWN"] else ""
            exp += f"; library: {', '.join(r['LIBRARY'])}" if r["LIBRARY"] else ""
            exp += f"; evidence /{r['EVIDENCE']}/" if r.get("EVIDENCE") else ""
            lines.append(f"| {r['NAME']} | {exp} | {r['verdict']} | {', '.join(r['failing']) or '-'} | "
                         f"{'-' if r.get('worst') is None else format(r['worst'], '.3g')} | {r['gate_s']:.1f} | {r['wall']:.1f} | {'as expected' if r['ok'] else '**unexpected**'} |")
        bad = [r for r in results if not r["ok"]]
        summary = f"{len(results) - len(bad)} passed, {len(bad)} failed"
        head = "" if final else f"(partial: {len(results)} of {len(controls)} controls judged so far)\n\n"
        text = head + "\n".join(lines) + f"\n\n{len(results)} controls in {time.time() - t0:.0f} s wall; {summary}\n"
        shared = [r["NAME"] for r in results if r.get("shared")]
        if shared:
            text += (f"\n{len(shared)} ran on the library an earlier control of the same source built "
                     f"(--share-builds): {', '.join(shared)}\n")
        for r in bad:
            text += f"\n- unexpected: {r['NAME']}: {r['note']}"
        return text, summary, bad

    # NOTES: the table is rewritten as each control ends (in the order they end), so a run cut by
    # a deadline (the device tool's, `timeout`) leaves what it judged; the final table is in the
    # order of the controls.cmake files.
    # --share-builds: the followers of a source wait for its first control (the leader), then run on
    # the library it built; the leaders and every other control start first.
    followers = {}  # index of a leader -> indices of the later controls naming its source
    if a.share_builds:
        first = {}
        for i, c in enumerate(controls):
            if Path(c["CANDIDATE"]).suffix in SHARED_SOURCES:
                if c["CANDIDATE"] in first:
                    followers.setdefault(first[c["CANDIDATE"]], []).append(i)
                else:
                    first[c["CANDIDATE"]] = i
    waiting = {j for js in followers.values() for j in js}
    done = []
    with tempfile.TemporaryDirectory() as scratch, concurrent.futures.ThreadPoolExecutor(a.jobs) as ex:
        def submit(i, candidate=None):
            keep = Path(scratch) / f"work-{i}" if i in followers else None
            return ex.submit(run_one, a.kcv, a.backend, controls[i], a.timeout, a.reports, keep, candidate)
        pending = {submit(i): i for i in range(len(controls)) if i not in waiting}
        while pending:
            finished, _ = concurrent.futures.wait(pending, return_when=concurrent.futures.FIRST_COMPLETED)
            for f in finished:
                i = pending.pop(f)
                try:
                    done.append((i, f.result()))
                except subprocess.TimeoutExpired:  # kcv itself ran past --timeout: judged as not run
                    done.append((i, dict(controls[i], verdict=f"ERROR (kcv ran past {a.timeout} s)", failing=[],
                                         gate_s=0, wall=a.timeout, ok=False, note=["timeout"])))
                if i in followers:
                    name = Path(controls[i]["CANDIDATE"]).with_suffix(".so").name
                    lib = kept_library(Path(scratch) / f"work-{i}", Path(scratch) / f"lib-{i}" / name)
                    for j in followers[i]:
                        pending[submit(j, lib)] = j
                    shutil.rmtree(Path(scratch) / f"work-{i}", ignore_errors=True)
            Path(a.out).write_text(render([r for _, r in done], False)[0] + "\n")
    results = [r for _, r in sorted(done, key=lambda x: x[0])]
    text, summary, bad = render(results, True)
    Path(a.out).write_text(text + "\n")
    print(text)
    print(summary)
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
