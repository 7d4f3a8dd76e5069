#!/usr/bin/env python3
"""bench/glr/include_with_defines.sh: the include/ copy kcv compiles glr's controls against when the
binaries were built with GLR_DEFINES. A compile against the copy sees the switches (through switches.cuh,
which every sm90 kernel file reads via common.cuh; GLR_NEXT with whatever set it turns on there); one
against include/ does not; a name switches.cuh does not list, or an existing destination, is refused with nothing written."""
import re, shutil, subprocess, sys, tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from script_check import finish  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "bench/glr/include_with_defines.sh"
SWITCHES_CUH = ROOT / "include/glr/cuda/sm90/switches.cuh"
# The switches switches.cuh lists ("///   NAME  what it does"), and two it only mentions: gone into the default.
SWITCHES = tuple(re.findall(r"^///   (GLR_[A-Z0-9_]+) ", SWITCHES_CUH.read_text(), re.M))
GONE = ("GLR_PREP_PAIRS", "GLR_WALK_3CTAS")


def next_set():
    """The switches GLR_NEXT turns on in include/'s switches.cuh (its #ifdef GLR_NEXT block; empty
    between sets)."""
    text = SWITCHES_CUH.read_text()
    block = text.split("#ifdef GLR_NEXT", 1)[1].split("\n#endif\n#endif", 1)[0] if "#ifdef GLR_NEXT" in text else ""
    return tuple(sorted(set(re.findall(r"#define (GLR_\w+)", block))))


def defined(include_dir, names, tmp):
    """The names among `names` that a translation unit including common.cuh's first header sees."""
    probe = Path(tmp) / "probe.cpp"
    probe.write_text('#include "glr/cuda/sm90/switches.cuh"\n' +
                     "".join(f"#ifdef {n}\nseen_{n}\n#endif\n" for n in names))
    out = subprocess.run(["g++", "-E", "-P", f"-I{include_dir}", str(probe)], capture_output=True, text=True, check=True)
    return {n for n in names if f"seen_{n}" in out.stdout}


def run(*args):
    return subprocess.run([str(SCRIPT), *map(str, args)], capture_output=True, text=True)


def main():
    fails = []
    with tempfile.TemporaryDirectory() as tmp:
        common = (ROOT / "include/glr/cuda/sm90/common.cuh").read_text()
        if '#include "glr/cuda/sm90/switches.cuh"' not in common:
            fails.append("common.cuh does not include switches.cuh: the kernels would not see the copy's defines")
        NEXT_SET = next_set()
        if len(SWITCHES) < 2 or set(GONE) & set(SWITCHES):
            fails.append(f"switches.cuh's list read as {SWITCHES}: expected two or more switches, none of {GONE}")
        if "#ifdef GLR_NEXT" not in SWITCHES_CUH.read_text():
            fails.append("switches.cuh has no GLR_NEXT block: cmake -DGLR_DEFINES=GLR_NEXT has nothing to name")
        if defined(ROOT / "include", NEXT_SET + SWITCHES + ("GLR_NEXT",), tmp):
            fails.append("include/ itself defines a switch: the defaults are not the defaults")
        dst = Path(tmp) / "next"
        r = run(ROOT / "include", dst, "GLR_NEXT")
        if r.returncode != 0:
            fails.append(f"GLR_NEXT refused: {r.stderr.strip()}")
        else:
            seen = defined(dst, NEXT_SET + SWITCHES + ("GLR_NEXT",), tmp)
            if seen != set(NEXT_SET) | {"GLR_NEXT"}:
                fails.append(f"the copy with GLR_NEXT defines {sorted(seen)}, expected GLR_NEXT and its set {NEXT_SET}")
            if not (dst / "kcv/abi.h").is_file():
                fails.append("the copy lacks kcv/abi.h: a candidate could not compile against it")
        two = Path(tmp) / "two"
        r = run(ROOT / "include", two, *SWITCHES[:2])
        if r.returncode != 0 or defined(two, SWITCHES + ("GLR_NEXT",), tmp) != set(SWITCHES[:2]):
            fails.append(f"two switches: rc {r.returncode}, {r.stderr.strip()}")
        for bad, why in ((("GLR_BOGUS",), "a name switches.cuh does not list"), (("glr_next",), "a lower-case name"),
                         (("GLR_NEXT", "x;rm"), "a name that is no identifier"),
                         ((GONE[0],), "a switch gone into the default (mentioned, not listed)")):
            out = Path(tmp) / "bad"
            r = run(ROOT / "include", out, *bad)
            if r.returncode != 2 or out.exists() or "not a switch" not in r.stderr:
                fails.append(f"{why} {bad}: rc {r.returncode}, destination {'written' if out.exists() else 'absent'}")
            shutil.rmtree(out, ignore_errors=True)
        r = run(ROOT / "include", dst, "GLR_NEXT")  # dst exists from above
        if r.returncode != 2 or "exists" not in r.stderr:
            fails.append(f"an existing destination was not refused: rc {r.returncode}")
        r = run(Path(tmp) / "nowhere", Path(tmp) / "x", "GLR_NEXT")
        if r.returncode != 2 or "not found" not in r.stderr:
            fails.append(f"a source without switches.cuh was not refused: rc {r.returncode}")
    return finish("scripts.include_with_defines", fails)


if __name__ == "__main__":
    sys.exit(main())
