"""What the torch reference server and the torch candidate worker share: loading a KernelBench
problem or solution file as a module, its module-level sizes, dtype codes of the kcv ABI, and
building a model the same way on both sides (same seed, on the CPU, then moved)."""

import ctypes
import json
import os
import sys

import torch

from kcv_torch_load import extend_search_path, load_module  # noqa: F401 (re-exported)

# kcv_dtype codes (include/kcv/abi.h)
DTYPES = {
    0: torch.float64, 1: torch.float32, 2: torch.float16, 3: torch.bfloat16,
    4: torch.int32, 5: torch.int64, 6: torch.uint8,
}
CODES = {v: k for k, v in DTYPES.items()}
# torch.bool travels as uint8 (one byte, 0 or 1): an input's argument template says "bool" so that
# both sides view it as bool again; a bool output is judged as its 0/1 bytes.
CARRIED = {**CODES, torch.bool: CODES[torch.uint8]}

REFUSE_MARK = "kcv: refuse"


def module_sizes(mod):
    """The module-level integer sizes (bool excluded) as the file set them."""
    return {k: v for k, v in vars(mod).items()
            if type(v) is int and not k.startswith("_") and k.isidentifier()}


def set_sizes(mod, nominal, bindings):
    """Every size back to nominal, then the bindings on top: get_inputs()/get_init_inputs() read
    module globals when called, so this is how a problem is re-sized."""
    for k, v in nominal.items():
        setattr(mod, k, int(bindings.get(k, v)))


def model_class(mod, prefer_new):
    if prefer_new and hasattr(mod, "ModelNew"):
        return mod.ModelNew
    if hasattr(mod, "Model"):
        return mod.Model
    raise RuntimeError("the file defines neither ModelNew nor Model")


def build_model(cls, init_args, init_seed, device):
    # NOTES: on the CPU under one seed, then moved: Model and ModelNew draw identical weights
    # whenever they declare the same parameters in the same order (KernelBench's assumption).
    torch.manual_seed(init_seed)
    model = cls(*init_args)
    return model.to(device)


def as_tuple(out):
    if isinstance(out, (tuple, list)):
        return tuple(out)
    return (out,)


CU_CTX_SCHED_BLOCKING_SYNC = 0x04  # cuda.h


def sleep_while_waiting_for_the_gpu():
    """Makes this process's threads sleep, not spin, while they wait for the GPU: the primary
    context of every device gets CU_CTX_SCHED_BLOCKING_SYNC. Call before anything creates a
    context. Returns whether every device took it (False without a CUDA driver)."""
    # NOTES: CUDA's default (auto) spins when a process has fewer contexts than the host has
    # cores, so every torch process of a `kcv corpus run --jobs N` held a core at 100% while its
    # GPU work ran: the reference server through each float64 forward, a sanitized worker through
    # each instrumented kernel. With 14 verifications on 16 cores the host's CPU was saturated
    # (session 7, vmstat). torch never sets the flag itself (pytorch issue 28224). Waiting by
    # blocking changes when the host wakes, not what the GPU computes.
    try:
        driver = ctypes.CDLL("libcuda.so.1")
    except OSError:
        return False
    count = ctypes.c_int(0)
    if driver.cuInit(0) != 0 or driver.cuDeviceGetCount(ctypes.byref(count)) != 0:
        return False
    set_flags = getattr(driver, "cuDevicePrimaryCtxSetFlags_v2", None) or driver.cuDevicePrimaryCtxSetFlags
    every = True
    for ordinal in range(count.value):
        device = ctypes.c_int(0)
        every = (driver.cuDeviceGet(ctypes.byref(device), ordinal) == 0
                 and set_flags(device, ctypes.c_uint(CU_CTX_SCHED_BLOCKING_SYNC)) == 0) and every
    return every


def library_settings():
    """How torch's libraries compute, the same for the reference and the candidate."""
    # NOTES: an fp32 contract: TF32 in matmul or cuDNN would be a 2^13 coarser rounding. Both
    # the reference and the candidate run with it off; a candidate that turns it on fails.
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    # NOTES: cuDNN may pick algorithms that sum with atomics (a transposed convolution's forward
    # is cuDNN's backward-data pass): then the problem's own Model differs run to run in the last
    # bits, and the determinism and coverage gates rejected 6 KernelBench reference controls on
    # an H200. Deterministic cuDNN algorithms only, and no autotuning between runs. The gates
    # still judge what the solution's own kernels do.
    torch.backends.cudnn.deterministic = True
    torch.backends.cudnn.benchmark = False


def tensor_bytes(t):
    """The raw bytes of t in row-major order (no numpy needed)."""
    t = t.detach().contiguous().cpu()
    buf = bytearray(t.numel() * t.element_size())
    if buf:
        torch.frombuffer(buf, dtype=torch.uint8).copy_(t.reshape(-1).view(torch.uint8))
    return buf


def tensor_from_bytes(blob, dtype, shape):
    if len(blob) == 0:
        return torch.empty(shape, dtype=dtype)
    if not isinstance(blob, bytearray):  # torch.frombuffer wants writable memory
        blob = bytearray(blob)
    return torch.frombuffer(blob, dtype=torch.uint8).view(dtype).reshape(shape)


def reuse_unchanged_inline_builds():
    """torch before 2.x rewrites load_inline's sources on every call, so ninja rebuilds the
    extension in every new process (a worker per gate). Where that is so, give a rewritten source
    with unchanged contents back its old modification time: ninja then sees nothing to do."""
    import torch.utils.cpp_extension as ext
    if hasattr(ext, "_maybe_write") or not hasattr(ext, "_jit_compile"):
        return
    before = {}
    orig_load_inline, orig_jit = ext.load_inline, ext._jit_compile

    def load_inline(name, *a, **kw):
        build_dir = kw.get("build_directory") or ext._get_build_directory(name, kw.get("verbose", False))
        for f in ("main.cpp", "cuda.cu"):
            path = os.path.join(build_dir, f)
            if os.path.exists(path):
                with open(path, "rb") as fh:
                    before[path] = (fh.read(), os.stat(path).st_mtime_ns)
        return orig_load_inline(name, *a, **kw)

    def jit_compile(name, sources, *a, **kw):
        for path in sources:
            if path in before and os.path.exists(path):
                with open(path, "rb") as fh:
                    same = fh.read() == before[path][0]
                if same:
                    os.utime(path, ns=(before[path][1], before[path][1]))
        return orig_jit(name, sources, *a, **kw)

    ext.load_inline, ext._jit_compile = load_inline, jit_compile


def pch_key(extra_cflags, extra_include_paths, with_cuda):
    """What a precompiled torch/extension.h must have been made for (kcv_torch_pch.py): the
    build's own flags, empty strings dropped (torch joins flags with spaces, so [''] is none)."""
    return json.dumps({"cflags": [f for f in (extra_cflags or []) if f.strip()],
                       "include": list(extra_include_paths or []), "cuda": bool(with_cuda)}, sort_keys=True)


def sha256_of(path, copy_to=None):
    """The sha256 of path's bytes, read once; with copy_to, those bytes are written there too."""
    import hashlib
    h = hashlib.sha256()
    with open(path, "rb") as fin, (open(copy_to, "wb") if copy_to else open(os.devnull, "wb")) as fout:
        for block in iter(lambda: fin.read(1 << 22), b""):
            h.update(block)
            if copy_to:
                fout.write(block)
    return h.hexdigest()


def verified_copy(src, dst, sha256):
    """Copies src to dst if its bytes hash to sha256; False (and no dst) otherwise."""
    part = dst + ".part"
    try:
        digest = sha256_of(src, copy_to=part)
    except OSError:
        digest = None
    if digest != sha256:
        if os.path.exists(part):
            os.remove(part)
        return False
    os.replace(part, dst)
    return True


def use_precompiled_torch_header(entries, private_dir):
    """Makes load_inline compile main.cpp against a precompiled torch/extension.h when the manifest
    (kcv_torch_pch.py, passed in the plan) has one for the build's flags. The gch is used through
    this verification's own copy, checked against the manifest's sha256 when it is made; every
    later worker of the verification finds the same copy and passes the same flags, so ninja sees
    the same build and does not rebuild. No entry, no copy: the build is torch's own."""
    import inspect
    import torch.utils.cpp_extension as ext
    by_key = {e["key"]: e for e in entries}
    orig = ext.load_inline
    try:
        signature = inspect.signature(orig)
    except (TypeError, ValueError):
        return

    def load_inline(*a, **kw):
        try:
            bound = signature.bind(*a, **kw)
        except TypeError:
            return orig(*a, **kw)   # torch says what is wrong with the call
        args = bound.arguments
        if args.get("use_pch") or args.get("no_implicit_headers"):
            return orig(*a, **kw)
        with_cuda = args.get("with_cuda")
        if with_cuda is None:
            with_cuda = bool(args.get("cuda_sources"))
        entry = by_key.get(pch_key(args.get("extra_cflags"), args.get("extra_include_paths"), with_cuda))
        if entry is None:
            return orig(*a, **kw)
        where = os.path.join(private_dir, entry["sha256"][:16], "torch")
        header, gch = os.path.join(where, "extension.h"), os.path.join(where, "extension.h.gch")
        if not os.path.exists(gch):
            # kcv makes the checked copy before any worker starts (checked_pch_copies); this is
            # for a plan made without it. A directory the worker cannot write: no PCH.
            try:
                os.makedirs(where, exist_ok=True)
                with open(header, "w") as f:   # the stub's text is kcv's, not a file's on disk
                    f.write("#include <torch/extension.h>\n")
                copied = verified_copy(entry["gch"], gch, entry["sha256"])
            except OSError:
                copied = False
            if not copied:
                print(f"kcv: the precompiled torch/extension.h {entry['gch']} is not the one kcv made "
                      "(or cannot be copied); building without it", file=sys.stderr)
                return orig(*a, **kw)
        args["extra_cflags"] = list(args.get("extra_cflags") or []) + ["-include", header]
        return orig(*bound.args, **bound.kwargs)

    ext.load_inline = load_inline


def build_call_key(fn_name, arguments, workdir):
    """The SHA-256 of a canonical JSON of one load_inline/load call's arguments (every one, defaults
    included): the sources' text (a load source file's bytes), functions, flags, include paths,
    CUDA or not. The verification's workdir is written as <workdir>: a path kcv's own copies have
    (a precompiled header's) is the same build in every verification."""
    import hashlib

    def canonical(v):
        if isinstance(v, str):
            return v.replace(workdir, "<workdir>") if workdir else v
        if isinstance(v, (list, tuple)):
            return [canonical(x) for x in v]
        if isinstance(v, dict):
            return {str(k): canonical(x) for k, x in sorted(v.items())}
        if v is None or isinstance(v, (bool, int, float)):
            return v
        return repr(v)

    args = {k: canonical(v) for k, v in arguments.items() if k not in ("verbose", "build_directory")}
    # NOTES: kcv's precompiled torch/extension.h makes the same objects as parsing the header (g++
    # ignores one made with other flags): a build with it and one without are one build.
    flags = list(args.get("extra_cflags") or [])
    for i in range(len(flags) - 1):
        if flags[i] == "-include" and "/torch-pch/" in str(flags[i + 1]):
            del flags[i:i + 2]
            break
    if "extra_cflags" in args:
        args["extra_cflags"] = flags
    header_dirs = list(arguments.get("extra_include_paths") or [])
    if fn_name == "load":
        sources = arguments.get("sources")
        paths = [sources] if isinstance(sources, str) else list(sources or [])
        digests = []
        for p in paths:
            with open(p, "rb") as f:
                digests.append(hashlib.sha256(f.read()).hexdigest())
        args["sources_sha256"] = digests
        header_dirs += [os.path.dirname(os.path.abspath(p)) for p in paths]   # "..." includes beside them
    for flag_list in ("extra_cflags", "extra_cuda_cflags"):
        header_dirs += include_dirs_of_flags(arguments.get(flag_list) or [])
    args["headers_sha256"] = user_headers_digest(header_dirs, workdir)
    text = json.dumps({"fn": fn_name, "args": args}, sort_keys=True)
    return hashlib.sha256(text.encode()).hexdigest()


class TooManyHeaders(OSError):
    """The header folders of a build are too large to hash: the build is not cached."""


def include_dirs_of_flags(flags):
    """The folders of -I/-isystem/-iquote/-idirafter flags ("-Idir" or "-I", "dir")."""
    out, flags = [], [str(f) for f in flags]
    for i, f in enumerate(flags):
        for opt in ("-I", "-isystem", "-iquote", "-idirafter"):
            if f == opt and i + 1 < len(flags):
                out.append(flags[i + 1])
            elif f.startswith(opt) and len(f) > len(opt) and not f.startswith("-include"):
                out.append(f[len(opt):])
    return out


# What one call may hash of its header folders before it is left uncached.
HEADER_FILES_MAX = 2048
HEADER_BYTES_MAX = 64 << 20


def user_headers_digest(dirs, workdir):
    """Every regular file under the build's own header folders (extra_include_paths, -I flags, a
    load source's folder), by path and SHA-256 of its bytes: a header edited between two runs of the
    same solution changes the call key, so the cached build is not imported (a stale .so would be
    judged). Folders of the toolchain and of Python (the interpreter's prefixes, torch's package,
    CUDA_HOME, /usr) are the entry key's already (compilers, torch, CUDA by identity) and are not
    read. Raises TooManyHeaders past HEADER_FILES_MAX files or HEADER_BYTES_MAX bytes."""
    import hashlib
    skip = {os.path.realpath(p) for p in (sys.prefix, sys.base_prefix, "/usr",
                                          os.environ.get("CUDA_HOME") or "/usr/local/cuda")}
    skip.add(os.path.realpath(os.path.dirname(torch.__file__)))
    files, total, seen = [], 0, set()
    for d in dirs:
        real = os.path.realpath(str(d))
        if real in seen or not os.path.isdir(real) or any(real == s or real.startswith(s + os.sep) for s in skip):
            continue
        seen.add(real)
        shown = real.replace(workdir, "<workdir>") if workdir else real
        for root, subdirs, names in os.walk(real):
            subdirs.sort()
            for n in sorted(names):
                path = os.path.join(root, n)
                if not os.path.isfile(path):
                    continue
                files.append(path)
                total += os.path.getsize(path)
                if len(files) > HEADER_FILES_MAX or total > HEADER_BYTES_MAX:
                    raise TooManyHeaders(f"{shown}: more than {HEADER_FILES_MAX} files or {HEADER_BYTES_MAX} bytes")
    out = []
    for path in files:
        with open(path, "rb") as f:
            digest = hashlib.sha256(f.read()).hexdigest()
        shown = path.replace(workdir, "<workdir>") if workdir else path
        out.append([shown, digest])
    return out


def use_build_cache(prebuilt, ext_dir, workdir):
    """The build cache (docs/kernelbench.md "Build cache"), installed under every other wrapper of
    load_inline/load so that it sees the final flags. A call whose name and call key match an entry
    of prebuilt ({"files": [{"name", "call_key", "file"}]}: kcv's checked copy of this solution's
    earlier builds) imports that .so as torch imports a built extension: no ninja, no compiler. Any
    other call builds as before and appends {name, call_key, so} to ext_dir/builds.jsonl, which kcv
    reads once every worker has ended."""
    import functools
    import importlib.util
    import inspect
    import torch.utils.cpp_extension as ext
    by_key = {(e["name"], e["call_key"]): e["file"] for e in (prebuilt or {}).get("files", [])}
    for fn_name in ("load_inline", "load"):
        orig = getattr(ext, fn_name)
        try:
            signature = inspect.signature(orig)
        except (TypeError, ValueError):
            continue

        # NOTES: wraps: the wrappers above this one (the precompiled header's) bind their calls to
        # torch's signature, which inspect finds through __wrapped__.
        @functools.wraps(orig)
        def wrapper(*a, _orig=orig, _sig=signature, _fn=fn_name, **kw):
            try:
                bound = _sig.bind(*a, **kw)
            except TypeError:
                return _orig(*a, **kw)   # torch says what is wrong with the call
            bound.apply_defaults()
            args = bound.arguments
            # NOTES: only a Python module built in torch's own directory: a library for torch.ops
            # or a build directory the solution chose is left to torch.
            if not args.get("is_python_module", True) or args.get("is_standalone") or args.get("build_directory"):
                return _orig(*a, **kw)
            name = args.get("name")
            try:
                key = build_call_key(_fn, args, workdir)
            except OSError:
                return _orig(*a, **kw)
            so = by_key.get((name, key))
            if so is not None:
                spec = importlib.util.spec_from_file_location(name, so)
                module = importlib.util.module_from_spec(spec)
                spec.loader.exec_module(module)
                print(f"kcv: extension {name} loaded from the build cache ({so})", file=sys.stderr)
                return module
            module = _orig(*a, **kw)
            where = getattr(module, "__file__", None)
            if where and ext_dir:
                try:
                    with open(os.path.join(ext_dir, "builds.jsonl"), "a") as f:
                        f.write(json.dumps({"name": name, "call_key": key, "so": os.path.abspath(where)}) + "\n")
                except OSError:
                    pass   # a build kcv does not keep
            return module

        setattr(ext, fn_name, wrapper)
