#!/usr/bin/env python3
"""scripts/verify_controls.py --share-builds: controls naming the same source candidate build it
once. Run against a stand-in kcv that logs each call and, given --keep-workdir, leaves the library
it "built" there (candidate.so, naming its source), as kcv's Candidate::prepare does:
- with the option, the first control of glr_fwd.cu runs on the source and keeps its workdir, the
  other runs on a copy of that library; a source named once runs as before, nothing kept;
- without it, every control runs on its source;
- when the first control leaves no library (its build failed), the others build for themselves;
- a control whose kcv runs past --timeout is an ERROR row, and the others are still judged;
- C/C++ sources are never shared (the cpu backend's sanitizer gate rebuilds them with ASan).
And the declarations are read as CMake runs them: foreach() loops unrolled, nested ones too (the
cpu controls' chunk-size loops were read as one control named "glr_fwd_chunk" before)."""
import json, os, stat, subprocess, sys, tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(Path(__file__).resolve().parent))
from script_check import finish  # noqa: E402
SCRIPT = ROOT / "scripts/verify_controls.py"
GATES = ["numerics", "shapes", "values", "nonfinite", "bounds", "inputs_intact", "coverage", "determinism",
         "layout", "stateless", "concurrency", "sanitizer"]
ONLY = r"^glr_fwd(_scalar)?$|^glr_bwd_bf16$"  # glr_fwd.cu twice (vector, scalar), glr_bwd_bf16.cu once

FAKE_KCV = r'''#!/usr/bin/env python3
import json, os, sys, time
from pathlib import Path
args = sys.argv[1:]
val = lambda k: args[args.index(k) + 1] if k in args else None
cand, keep, out = val("--candidate"), val("--keep-workdir"), val("--json")
with open(os.environ["FAKE_LOG"], "a") as f:
    f.write(json.dumps({"op": val("--op"), "candidate": cand, "keep": keep,
                        "library_of": Path(cand).read_text().strip() if cand.endswith(".so") else None}) + "\n")
if os.environ.get("FAKE_HANG_OP") == val("--op"):
    time.sleep(30)
if keep:
    Path(keep).mkdir()
    if cand.endswith(".cu") and not os.environ.get("FAKE_NO_LIB"):
        (Path(keep) / "candidate.so").write_text("built from " + Path(cand).name + "\n")
gates = [{"id": g, "verdict": "PASS", "seconds": 0.1, "evidence": ""} for g in GATES]
Path(out).write_text(json.dumps({"verdict": "PASS", "gates": gates}))
'''.replace("GATES", repr(GATES))


def run(d, *extra, env=None):
    log = Path(d) / f"log-{len(list(Path(d).glob('log-*')))}.jsonl"
    log.write_text("")
    r = subprocess.run([sys.executable, str(SCRIPT), "--backend", "cuda", "--kcv", str(Path(d) / "kcv"),
                        "--only", ONLY, "--jobs", "4", "--out", str(Path(d) / "controls.md"), *extra],
                       capture_output=True, text=True, env=dict(os.environ, FAKE_LOG=str(log), **(env or {})))
    calls = [json.loads(line) for line in log.read_text().splitlines()]
    return r, calls, (Path(d) / "controls.md").read_text()


def check_loops(failures):
    sys.path.insert(0, str(ROOT / "scripts"))
    import verify_controls as vc
    text = """
set(KINDS a b)
foreach(k ${KINDS})
  foreach(n 1 2)  # nested
    kcv_control(NAME x_${k}${n} OP op_${k} CANDIDATE ${CONTROL_DIR}/x${n}.c EXPECT PASS)
  endforeach()
endforeach()
kcv_control(NAME after OP op CANDIDATE ${CONTROL_DIR}/y.c EXPECT FAIL FAILS values)
"""
    variables = {"CONTROL_DIR": ["/d"]}
    got = []
    for command, body in vc.unrolled(vc.calls(text), variables):
        words = vc.expand(body, variables)
        if command == "set":
            variables[words[0]] = words[1:]
        else:
            got.append(" ".join(words[:6]))
    want = [f"NAME x_{k}{n} OP op_{k} CANDIDATE /d/x{n}.c" for k in "ab" for n in "12"] + \
        ["NAME after OP op CANDIDATE /d/y.c"]
    if got != want:
        failures.append(f"foreach loops: got {got}, expected {want}")
    names = {c["NAME"]: c["CANDIDATE"] for c in vc.parse_controls("cpu")}
    for chunk in (16, 48, 128, 256):
        if not names.get(f"glr_fwd_chunk{chunk}", "").endswith(f"glr_fwd_chunk{chunk}.cpp"):
            failures.append(f"glr/controls/cpu: glr_fwd_chunk{chunk} not read from its foreach loop")
    if "glr_fwd_chunk" in names:
        failures.append("glr/controls/cpu: a loop's control read with its loop variable empty")


def main():
    failures = []
    check_loops(failures)
    with tempfile.TemporaryDirectory() as d:
        kcv = Path(d) / "kcv"
        kcv.write_text(FAKE_KCV)
        kcv.chmod(kcv.stat().st_mode | stat.S_IXUSR)

        r, calls, table = run(d, "--share-builds")
        fwd = [c for c in calls if c["op"] in ("glr_fwd", "glr_fwd_scalar")]
        bwd = [c for c in calls if c["op"] == "glr_bwd_bf16"]
        if r.returncode != 0:
            failures.append(f"--share-builds: exit {r.returncode}: {r.stderr or r.stdout}")
        if len(calls) != 3:
            failures.append(f"--share-builds: {len(calls)} kcv calls, expected 3: {calls}")
        on_source = [c for c in fwd if c["candidate"].endswith("glr_fwd.cu")]
        on_library = [c for c in fwd if c["candidate"].endswith(".so")]
        if len(on_source) != 1 or not on_source[0]["keep"]:
            failures.append(f"--share-builds: glr_fwd.cu should be built once, its workdir kept: {fwd}")
        if len(on_library) != 1 or any(c["library_of"] != "built from glr_fwd.cu" or c["keep"] for c in on_library):
            failures.append(f"--share-builds: the other glr_fwd.cu control should run on its library: {fwd}")
        if len(bwd) != 1 or not bwd[0]["candidate"].endswith("glr_bwd_bf16.cu") or bwd[0]["keep"]:
            failures.append(f"--share-builds: a source named once runs as before: {bwd}")
        if "1 ran on the library an earlier control of the same source built" not in table:
            failures.append(f"--share-builds: the table does not say which controls shared a build:\n{table}")
        if "3 passed, 0 failed" not in table:
            failures.append(f"--share-builds: expected 3 passed:\n{table}")

        r, calls, table = run(d)
        if r.returncode != 0 or len(calls) != 3 or any(c["keep"] or not c["candidate"].endswith(".cu") for c in calls):
            failures.append(f"without --share-builds every control runs on its source, nothing kept: {calls}")
        if "ran on the library" in table:
            failures.append("without --share-builds the table names shared builds")

        r, calls, table = run(d, "--share-builds", env={"FAKE_NO_LIB": "1"})
        if r.returncode != 0 or len(calls) != 3 or any(c["candidate"].endswith(".so") for c in calls):
            failures.append(f"a first control that left no library: the others must build for themselves: {calls}")

        r = subprocess.run([sys.executable, str(SCRIPT), "--backend", "cpu", "--kcv", str(kcv), "--only",
                            r"^glr_fwd_chunked(_bf16)?$", "--jobs", "2", "--share-builds",
                            "--out", str(Path(d) / "cpu.md")],
                           capture_output=True, text=True, env=dict(os.environ, FAKE_LOG=str(Path(d) / "cpu.jsonl")))
        cpu_calls = [json.loads(line) for line in (Path(d) / "cpu.jsonl").read_text().splitlines()]
        if r.returncode != 0 or len(cpu_calls) != 2 or any(c["keep"] or not c["candidate"].endswith(".cpp")
                                                            for c in cpu_calls):
            failures.append(f"a C++ source shared by two cpu controls must be built by each: {cpu_calls}")

        r, calls, table = run(d, "--share-builds", "--timeout", "3", env={"FAKE_HANG_OP": "glr_bwd_bf16"})
        if r.returncode != 1 or "ERROR (kcv ran past 3 s)" not in table or "2 passed, 1 failed" not in table:
            failures.append(f"a kcv past --timeout: expected one ERROR row and exit 1, got exit {r.returncode}:\n"
                            f"{table}\n{r.stderr[-500:]}")
    sys.exit(finish("scripts.verify_controls_share", failures))


if __name__ == "__main__":
    main()
