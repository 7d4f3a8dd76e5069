#!/usr/bin/env python3
"""The build cache's call key covers the build's own headers (adapters/torch/kcv_torch_common.py,
build_call_key; docs/kernelbench.md "Build cache"): a header edited in a folder the build includes
(extra_include_paths, an -I/-isystem/-iquote flag, a load source's folder) changes the key, so the
cached build of the same solution is not imported; the toolchain's and Python's folders are not
read (the entry key has them by identity); a build whose header folders hold more than the limits
is not cached (TooManyHeaders, an OSError: the wrapper then builds as before).

Run by $KCV_PYTHON (ctest torch_adapter.build_call_key); prints "SKIP: <why>" and exits 0 without torch.
"""
import os
import sys
import tempfile

try:
    import torch  # noqa: F401 (kcv_torch_common imports it)
except Exception as e:  # noqa: BLE001
    print(f"SKIP: no torch in {sys.executable} ({type(e).__name__}: {e})")
    sys.exit(0)

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "adapters", "torch"))
import kcv_torch_common as common  # noqa: E402

failures = []


def check(what, ok):
    print(("ok   " if ok else "FAIL ") + what)
    if not ok:
        failures.append(what)


def write(path, text):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        f.write(text)


with tempfile.TemporaryDirectory() as d:
    inc, work = os.path.join(d, "inc"), os.path.join(d, "work")
    write(os.path.join(inc, "tile.h"), "#define TILE 16\n")
    write(os.path.join(inc, "sub", "more.h"), "#define MORE 1\n")
    base = {"name": "ext", "cpp_sources": "int f();", "cuda_sources": "", "functions": ["f"],
            "extra_cflags": ["-O3"], "extra_include_paths": [inc]}

    def key(args, fn="load_inline", workdir=""):
        return common.build_call_key(fn, args, workdir)

    k0 = key(base)
    check("the same call gives the same key", key(dict(base)) == k0)
    write(os.path.join(inc, "tile.h"), "#define TILE 32\n")
    k1 = key(base)
    check("a header edited in extra_include_paths changes the key", k1 != k0)
    write(os.path.join(inc, "sub", "more.h"), "#define MORE 2\n")
    check("... and one in a folder below it", key(base) != k1)
    by_flag = dict(base, extra_include_paths=[], extra_cflags=["-O3", "-I" + inc])
    kf = key(by_flag)
    write(os.path.join(inc, "tile.h"), "#define TILE 64\n")
    check("a header under an -I flag's folder changes the key", key(by_flag) != kf)
    by_cuda_flag = dict(base, extra_include_paths=[], extra_cuda_cflags=["-isystem", inc])
    kc = key(by_cuda_flag)
    write(os.path.join(inc, "tile.h"), "#define TILE 128\n")
    check("... and under an -isystem flag of extra_cuda_cflags", key(by_cuda_flag) != kc)
    # load: the sources' folder is where their "..." includes are found.
    src = os.path.join(d, "src", "k.cpp")
    write(src, '#include "local.h"\nint f() { return LOCAL; }\n')
    write(os.path.join(d, "src", "local.h"), "#define LOCAL 1\n")
    loaded = {"name": "ext", "sources": [src], "extra_cflags": []}
    kl = key(loaded, "load")
    write(os.path.join(d, "src", "local.h"), "#define LOCAL 2\n")
    check("load: a header beside its source changes the key", key(loaded, "load") != kl)
    # The toolchain's and Python's folders are the entry key's: not read here.
    check("system folders are not read",
          common.user_headers_digest(["/usr/include", sys.prefix, os.path.dirname(torch.__file__)], "") == [])
    # The workdir is written as <workdir>: the same build in two verifications' workdirs.
    for w in ("w1", "w2"):
        write(os.path.join(work, w, "h", "x.h"), "#define X 1\n")
    kw1 = key(dict(base, extra_include_paths=[os.path.join(work, "w1", "h")]), workdir=os.path.join(work, "w1"))
    kw2 = key(dict(base, extra_include_paths=[os.path.join(work, "w2", "h")]), workdir=os.path.join(work, "w2"))
    check("the same headers in two workdirs give one key", kw1 == kw2)
    # Past the limits: not cached (an OSError the wrapper answers by building as before).
    for i in range(common.HEADER_FILES_MAX + 1):
        write(os.path.join(d, "many", f"h{i}.h"), "")
    try:
        key(dict(base, extra_include_paths=[os.path.join(d, "many")]))
        check("more files than HEADER_FILES_MAX raise TooManyHeaders", False)
    except common.TooManyHeaders as e:
        check("more files than HEADER_FILES_MAX raise TooManyHeaders", isinstance(e, OSError))
    check("-I/-isystem/-iquote/-idirafter parsed, -include not",
          common.include_dirs_of_flags(["-I", "/a", "-I/b", "-isystem/c", "-include", "/x.h", "-iquote", "/d",
                                        "-idirafter", "/e"]) == ["/a", "/b", "/c", "/d", "/e"])

print(f"{len(failures)} failed" if failures else "all passed")
sys.exit(1 if failures else 0)
