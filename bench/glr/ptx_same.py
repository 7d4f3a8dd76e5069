#!/usr/bin/env python3
"""Whether two PTX files hold the same device code, function by function: the check that a change
meant to leave the default kernels alone (a build switch's #else side, a host-side refactor) did.
nvcc numbers basic-block labels across the module and orders functions as the front end instantiated
them, so a plain diff shows changes where there are none: each .entry / .func body is compared with its
module-numbered names renumbered ($L__BB<function>_<block> -> $L__BB_<block>, __local_depot<n> ->
__local_depot), matched by mangled name.

  bench/glr/ptx_same.py A.ptx B.ptx      exit 0: same functions, same bodies; 1: not (listed); 2: usage

Make the PTX with the same flags from both trees, e.g. (~1 min each on 2 cores):
  nvcc -std=c++17 -O3 -DNDEBUG -gencode arch=compute_90a,code=sm_90a -Iinclude -Ibench/glr -ptx \\
       -o X.ptx bench/glr/glr_bwd_time.cu
"""
import re, sys

HEAD = re.compile(r"^(?:\.visible |\.weak )?\.(?:entry|func) (?:\([^)]*\) )?([\w$.]+)\s*\(")
LABEL = re.compile(r"\$L__BB\d+_")
DEPOT = re.compile(r"__local_depot\d+")


def functions(text):
    """{mangled name: body with its labels renumbered} of every defined .entry and .func."""
    out, name, body, braced = {}, None, [], False
    for line in text.splitlines(keepends=True):
        if name is None:
            m = HEAD.match(line)
            if m:
                name, body, braced = m.group(1), [line], False
            continue
        body.append(line)
        if not braced and line.lstrip().startswith(";"):  # a prototype, no body
            name = None
            continue
        braced = braced or line.startswith("{")
        if line.startswith("}"):
            out[name] = DEPOT.sub("__local_depot", LABEL.sub("$L__BB_", "".join(body)))
            name = None
    return out


def compare(a_text, b_text):
    """(only in a, only in b, differing) mangled names."""
    a, b = functions(a_text), functions(b_text)
    return sorted(set(a) - set(b)), sorted(set(b) - set(a)), sorted(k for k in a.keys() & b.keys() if a[k] != b[k])


def main(argv):
    if len(argv) != 3:
        print(__doc__.strip().split("\n\n")[1], file=sys.stderr)
        return 2
    texts = []
    for p in argv[1:]:
        try:
            texts.append(open(p).read())
        except OSError as e:
            print(f"ptx_same.py: {e}", file=sys.stderr)
            return 2
    only_a, only_b, diff = compare(*texts)
    n = len(functions(texts[0]))
    if n == 0:
        print(f"ptx_same.py: no .entry or .func definitions in {argv[1]} (not PTX?)", file=sys.stderr)
        return 2
    for label, names in ((f"only in {argv[1]}", only_a), (f"only in {argv[2]}", only_b), ("bodies differ", diff)):
        for k in names:
            print(f"{label}: {k}")
    same = not (only_a or only_b or diff)
    print(f"{n} functions in {argv[1]}: {'the same device code' if same else 'NOT the same device code'}")
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv))
