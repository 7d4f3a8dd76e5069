"""kcv torch worker: runs a KernelBench solution's ModelNew for the kcv engine, in an isolated
process that kcv's Runner starts exactly like kcv-worker and that speaks the same protocol
(docs/protocol.md; tests/python/test_protocol_golden.py checks this side against its golden files):

  fd 3  a memfd: [0, 8) plan offset, [8, 16) plan length; the JSON plan; input bytes and output
        poison staged by the parent; snapshot slots this worker fills ([guard][span][guard])
  fd 4  a unix socket; text records: ready | fatal <hex> | start <i> | done <i> <rc> <seconds> <hex> |
        fault device <hex> | bye | idle; after each `done` the worker waits for one byte from kcv
        (it has looked at what the call left behind)
  fd 5  (only when the plan says "session": true) a unix socket: after its last call the worker
        says `idle` instead of `bye` and waits there for the next batch's memfd (SCM_RIGHTS); the
        imports, the solution's build and the CUDA context are paid once per session, not per
        batch. End of file on fd 5 ends the worker. A first plan that says "standby": true has no
        calls: the worker imports torch, says `idle` and takes its first real plan from fd 5.

Nothing here knows an expected value: the parent judges the snapshots.

Per call: inputs live inside guarded buffers of our own (4 KiB of keyed canaries each side) and
are handed over as torch.as_strided views with the plan's strides and offset; a call whose plan
says "exact" gets them in tensors whose storage is exactly their span (no guard band), inside a
block from the caching allocator as its own tensors lie inside its segments. A new input's address
(its first element's and its storage's) is one no input had before in this worker, so a result
cached by address is met again only where a case reuses buffers on purpose. Calls run on torch's current stream, the default (null) stream; the
concurrency gate's writer runs on a side stream of our own, or on the default stream when the plan
says "null_stream", and then only that stream is synchronized. Outputs are the
tensors the candidate returns; before the call the caching allocator is filled with the plan's
output poison, so an element the candidate never writes shows up as poison. A raised exception is a
refusal (rc 1 when its message carries "kcv: refuse", else rc 2); an output of the wrong shape,
dtype or count is rc 3.
"""

import ctypes
import mmap
import os
import sys
import threading
import time
import traceback

KGUARD = 4096
RESULT_FD = 4


def emit(line):
    data = (line + "\n").encode()
    while data:
        n = os.write(RESULT_FD, data)
        data = data[n:]


M_PERTURB = -6  # mallopt's parameter: the byte glibc's malloc fills blocks with (0: off)
LIBC = ctypes.CDLL(None)  # this process's C library (malloc's and mallopt's)


def allocation_fill(byte):
    """On cpu: every block glibc's malloc hands out from now on holds `byte` (None: off again).

    NOTES: the candidate allocates its own outputs, so an element it never writes holds whatever
    the heap held there: in one run an earlier call's correct values, in another a temporary's,
    depending on which block the allocator (and torch's thread pool's arenas) reused. With the
    call's output poison in every fresh block that element is the poison in every run, as the
    prefilled outputs of a kcv-worker call are, and verdicts repeat under the same seed.
    glibc fills a block with perturb ^ 0xFF (and a freed one with perturb); perturb 0 is "off",
    so the byte 0xFF is asked for as 0x100 (memset keeps the low byte: 0x1FF -> 0xFF). The
    per-thread cache, which skips the fill, is off in this worker (GLIBC_TUNABLES, spawn.cpp).
    Under the sanitizer gate's preloaded ASan, malloc is ASan's, whose mallopt refuses: no fill
    there (ASan fills fresh blocks with its own byte). Returns whether the fill is in force.
    """
    value = 0 if byte is None else (byte ^ 0xFF or 0x100)
    return LIBC.mallopt(M_PERTURB, value) == 1


def await_go():
    """After a `done`: wait until kcv has looked at what the call left behind (one byte on fd 4)."""
    while True:
        try:
            b = os.read(RESULT_FD, 1)
        except InterruptedError:
            continue
        if not b:
            os._exit(3)  # kcv is gone
        return


def hexs(s):
    b = s.encode("utf-8", "replace")
    return b.hex() if b else "-"


def done_record(i, rc, seconds, msg):
    """The `done` record of call i (docs/protocol.md): rc, seconds with 6 decimals, the message in hex."""
    return f"done {i} {rc} {seconds:.6f} {hexs(msg)}"


def fatal(why):
    emit("fatal " + hexs(why))
    os._exit(2)


def build_failure(e, sanitize):
    """A load_inline/load build that failed (torch raises "Error building extension 'x': " and
    ninja's output): the whole output goes to the verification's build.log (build-asan.log for the
    sanitizer's builds), whose path is emitted for kcv to keep; the reason is the compiler's own
    first error line, not ninja's command. None for any other exception."""
    text = str(e)
    if not isinstance(e, RuntimeError) or not text.startswith("Error building extension"):
        return None
    name = text.split(":", 1)[0][len("Error building extension"):].strip()
    ext_dir = os.environ.get("TORCH_EXTENSIONS_DIR", "").rstrip("/")
    log = os.path.join(os.path.dirname(ext_dir) if ext_dir else os.getcwd(),
                       "build-asan.log" if sanitize else "build.log")
    try:
        with open(log, "w", encoding="utf-8", errors="replace") as f:
            f.write(text + "\n")
        emit("build_log " + hexs(log))
        where = f" (whole compiler output: {log})"
    except OSError:
        where = ""
    return f"cannot load candidate: the extension {name} does not build: {compiler_error(text)}{where}"


def compiler_error(text):
    """The compiler's first error line in a failed build's output: gcc/clang "file:line:col: error:",
    nvcc "file(line): error", a linker's "undefined reference"; never ninja's progress, command or
    FAILED lines. The build's first line when none is found."""
    import re
    lines = text.splitlines()[1:]
    skip = re.compile(r"^\s*(\[\d+/\d+\]|FAILED:|ninja:|/\S*(c\+\+|g\+\+|gcc|clang\+*|nvcc)\s|(c\+\+|g\+\+|gcc|nvcc)\s)")
    patterns = [re.compile(r":\d+(:\d+)?: (fatal )?error"), re.compile(r"\(\d+\): (catastrophic )?error"),
                re.compile(r"undefined reference|error:"), re.compile(r"\berror\b", re.IGNORECASE)]
    for pat in patterns:
        for line in lines:
            if line.strip() and not skip.match(line) and pat.search(line):
                return line.strip()[:800]
    return text.splitlines()[0][:800] if text else "no compiler output"


def map_plan(fd):
    """The memfd's mapping and the plan it carries."""
    import json
    mm = mmap.mmap(fd, os.fstat(fd).st_size, mmap.MAP_SHARED, mmap.PROT_READ | mmap.PROT_WRITE)
    plan_at = int.from_bytes(mm[0:8], "little")
    plan_len = int.from_bytes(mm[8:16], "little")
    return mm, json.loads(bytes(mm[plan_at:plan_at + plan_len]))


def next_batch(ctl):
    """Waits on the session socket for the next batch's memfd; None at end of file."""
    import array
    import socket
    fds = array.array("i")
    msg, anc, _, _ = ctl.recvmsg(1, socket.CMSG_LEN(fds.itemsize))
    for level, kind, data in anc:
        if level == socket.SOL_SOCKET and kind == socket.SCM_RIGHTS:
            fds.frombytes(data[:len(data) - (len(data) % fds.itemsize)])
    if not msg or not fds:
        return None
    return fds[0]


def timing_job(plan, mm, kb, torch, common, device, cuda):
    """A timing job (plan kernelbench.timing; docs/timing.md, adapters/torch/kcv_torch_timing.py):
    one call whose one uint8 output carries the samples as JSON. Role "reference" never imports
    the solution. Ends the worker."""
    import time
    import kcv_torch_timing as kt  # its clocks are taken now, before any candidate code runs
    timing = kb["timing"]
    calls = plan["calls"]
    if len(calls) != 1 or len(calls[0]["outputs"]) != 1:
        fatal("a timing plan has one call with one output")
    out = calls[0]["outputs"][0]
    try:
        problem = common.load_module(kb["problem"], "kcv_problem")
    except Exception as e:  # noqa: BLE001
        fatal(f"cannot load the problem: {type(e).__name__}: {e}".splitlines()[0][:800])

    def load_solution():
        try:
            return common.model_class(common.load_module(plan["candidate"], "kcv_solution"), prefer_new=True)
        except SystemExit as e:
            fatal(f"cannot load candidate: it called exit({e.code}) while loading")
        except Exception as e:  # noqa: BLE001
            fatal(build_failure(e, False) or f"cannot load candidate: {type(e).__name__}: {e}".splitlines()[0][:800])

    began = []

    def on_ready():
        emit("ready")
        emit("start 0")
        began.append(time.perf_counter())

    result = kt.run(torch, common, problem, common.module_sizes(problem), load_solution, on_ready, timing,
                    int(kb.get("init_seed", 42)), device, cuda)
    shm = torch.frombuffer(mm, dtype=torch.uint8)
    data = kt.encode(result, out["span"])
    shm[out["snap"] + KGUARD:out["snap"] + KGUARD + out["span"]].copy_(torch.frombuffer(bytearray(data), dtype=torch.uint8))
    emit(done_record(0, 0, time.perf_counter() - began[0], ""))
    await_go()
    emit("bye")
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)


def main():
    # The sanitizer runtime is preloaded into this process only: the compilers load_inline starts
    # must not inherit it.
    os.environ.pop("LD_PRELOAD", None)
    mm, plan = map_plan(3)

    # After the plan: a broken torch is a fatal, not a hang. A fatal is kcv's setup error: an
    # interpreter without torch is the machine's fault, never a CRASH of the candidate.
    try:
        import torch
    except Exception as e:  # noqa: BLE001
        fatal(f"the torch worker's interpreter {sys.executable} cannot import torch: {type(e).__name__}: {e}"
              .splitlines()[0][:800])
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import kcv_torch_common as common
    import socket

    ctl = None
    if plan.get("standby"):
        # A standby worker (docs/architecture.md "Standby workers"): started beside the candidate's
        # main worker, it has paid for its interpreter and torch, and waits for its first real plan
        # on fd 5. Nothing of the candidate has been read yet: from here it is a new worker on that plan.
        ctl = socket.socket(fileno=5)
        mm.close()
        os.close(3)
        emit("idle")
        fd = next_batch(ctl)
        if fd is None:
            os._exit(0)
        mm, plan = map_plan(fd)
        os.close(fd)

    backend = plan["backend"]
    cuda = backend == "cuda"
    if cuda and not torch.cuda.is_available():
        fatal("backend 'cuda': torch in this interpreter sees no CUDA device")
    kb = plan.get("kernelbench", {})
    # NOTES: not in a timing job: there a host that sleeps while it waits for the GPU would add its
    # wake-up to every repetition's device-synchronized time (docs/timing.md).
    if cuda and not kb.get("timing"):
        common.sleep_while_waiting_for_the_gpu()  # before the solution or torch makes a context
    device = torch.device("cuda" if cuda else "cpu")
    key = int(plan["canary_key"])
    common.library_settings()

    if not plan["candidate"]:
        emit("ready")
        emit("bye")
        os._exit(0)

    if kb.get("sanitize") and not cuda:
        # The cpu sanitizer gate: extensions the solution builds get ASan+UBSan (the runtime is
        # preloaded by the runner). Their own directory: torch keeps one build per name and
        # directory, and alternating flags there would rebuild both every time.
        if os.environ.get("TORCH_EXTENSIONS_DIR"):
            os.environ["TORCH_EXTENSIONS_DIR"] += "-asan"
    ext_dir = os.environ.get("TORCH_EXTENSIONS_DIR", "").rstrip("/")
    if ext_dir:
        # Innermost of the build wrappers: it sees the sanitizer's flags and the PCH's.
        variant = "asan" if kb.get("sanitize") and not cuda else "plain"
        common.use_build_cache((kb.get("build_cache") or {}).get(variant), ext_dir, os.path.dirname(ext_dir))
    if kb.get("sanitize") and not cuda:
        import torch.utils.cpp_extension as ext
        flags = ["-fsanitize=address,undefined", "-fno-omit-frame-pointer", "-g", "-fno-sanitize-recover=all"]
        for fn_name in ("load_inline", "load"):
            orig = getattr(ext, fn_name)

            def patched(*a, _orig=orig, **kw):
                kw["extra_cflags"] = list(kw.get("extra_cflags") or []) + flags
                kw["extra_ldflags"] = list(kw.get("extra_ldflags") or []) + ["-fsanitize=address,undefined"]
                return _orig(*a, **kw)
            setattr(ext, fn_name, patched)

    if kb.get("pch") and not (kb.get("sanitize") and not cuda) and os.environ.get("TORCH_EXTENSIONS_DIR"):
        # A precompiled torch/extension.h for the .cpp half (kcv_torch_pch.py), through this
        # verification's own checked copy beside its extensions directory. Not for the cpu
        # sanitizer's builds: their flags differ, so no PCH would fit them.
        common.use_precompiled_torch_header(
            kb["pch"], os.path.join(os.path.dirname(os.environ["TORCH_EXTENSIONS_DIR"].rstrip("/")), "torch-pch"))
    common.reuse_unchanged_inline_builds()
    # The private copies' directories, then the originals' (kcv's Candidate::python_search_path):
    # a module beside the solution or the problem is found as it was before kcv copied them.
    common.extend_search_path(kb.get("search_path", []))
    if kb.get("timing"):
        timing_job(plan, mm, kb, torch, common, device, cuda)
    try:
        problem = common.load_module(kb["problem"], "kcv_problem")
        nominal = common.module_sizes(problem)
        solution = common.load_module(plan["candidate"], "kcv_solution")
        cls = common.model_class(solution, prefer_new=True)
    except SystemExit as e:
        fatal(f"cannot load candidate: it called exit({e.code}) while loading")
    except Exception as e:  # noqa: BLE001
        why = build_failure(e, bool(kb.get("sanitize") and not cuda))
        fatal(why or f"cannot load candidate: {type(e).__name__}: {e}".splitlines()[0][:800])
    init_seed = int(kb.get("init_seed", 42))
    template = kb.get("args", [])
    bool_inputs = {a["tensor"] for a in template if a.get("bool")}  # carried as uint8
    emit("ready")

    # ---- canaries (protocol::canary_byte, in torch int64 arithmetic) ----
    def s64(c):
        return c - (1 << 64) if c >= (1 << 63) else c

    def srl(x, n):  # logical shift right of int64 lanes
        return (x >> n) & ((1 << (64 - n)) - 1)

    def canary(pos):
        x = torch.full_like(pos, s64(key)) ^ (pos * s64(0x9E3779B97F4A7C15))
        x = x ^ srl(x, 33)
        x = x * s64(0xff51afd7ed558ccd)
        x = x ^ srl(x, 33)
        x = x * s64(0xc4ceb9fe1a85ec53)
        x = x ^ srl(x, 33)
        return (x & 0xFF).to(torch.uint8)

    pre_guard = canary(torch.arange(-KGUARD, 0, dtype=torch.int64))
    post_cache = {}

    def post_guard(span):
        if span not in post_cache:
            post_cache[span] = canary(torch.arange(span, span + KGUARD, dtype=torch.int64))
        return post_cache[span]

    models = {}
    shared_sizes = {k: v for k, v in common.module_sizes(solution).items() if k in nominal}
    # A problem whose Model keeps state between calls: both sides build a fresh model, from the
    # same seed, for every call (docs/kernelbench.md, "A function of its inputs").
    fresh_model = bool(kb.get("fresh_model"))

    def model_for(bindings):
        k = tuple(sorted(bindings.items()))
        if fresh_model or k not in models:
            common.set_sizes(problem, nominal, bindings)
            # The solution's own copies of the problem's sizes follow them: a model built from
            # module globals (rather than get_init_inputs) is built at the case's sizes.
            common.set_sizes(solution, shared_sizes, bindings)
            init = list(problem.get_init_inputs())
            models.clear()
            models[k] = common.build_model(cls, init, init_seed, device)
        return models[k]

    def view_of(buf, a, g=KGUARD):
        """The tensor the plan describes, inside buf's data region [g, g + span)."""
        dt = common.DTYPES[a["dtype"]]
        region = buf[g:g + a["span"]]
        if a["span"] == 0:
            return torch.empty(a["shape"], dtype=dt, device=buf.device)
        v = region.view(dt)
        return v.as_strided(a["shape"], a["stride"], v.storage_offset() + a["offset"])

    # NOTES: every address an input ever had in this worker (its view's first element and its
    # storage's), over all batches of a session. A new input never gets one of them: a candidate
    # that caches its result by address must never be handed different data at an address it has
    # seen, except where a case reuses a call's buffers on purpose (stateless). The allocators
    # hand a freed block back first, so without this a call's "fresh" buffer (a plain twin, a
    # later batch's input) could land where the candidate cached another input's result, and
    # the twin's stale result would excuse the call it stands beside (issue 26, run 6).
    # Each buffer is a window, a storage of its own, at an unseen place in a block SLACK bytes
    # larger: a block at a reused address still gives a fresh window, so memory stays bounded
    # (never reusing a large block outright would hold a new one per call on a shared GPU).
    seen = set()
    SLACK, STEP = 64 << 10, 512  # 128 places, as aligned as the caching allocator's blocks

    class _Window:  # a device pointer and the block it lies in, for torch.as_tensor
        def __init__(self, block, ptr, nbytes):
            self.block = block
            self.__cuda_array_interface__ = {"shape": (nbytes,), "typestr": "|u1", "data": (ptr, False),
                                             "version": 2}

    def window(block, at, nbytes):
        """nbytes of block from byte at, as a tensor whose storage is exactly them (it keeps block)."""
        if cuda:
            return torch.as_tensor(_Window(block, block.data_ptr() + at, nbytes), device=device)
        try:
            return torch.from_numpy(block.numpy()[at:at + nbytes])
        except Exception:  # noqa: BLE001 - a torch without numpy: a view (its storage is the block's)
            return block[at:at + nbytes]

    def fresh_buffer(nbytes, data_at):
        """A uint8 tensor of nbytes, a storage of its own, whose first byte and byte data_at were
        never an input's address in this worker."""
        if nbytes == 0:  # no address at all (an exact buffer of an empty tensor)
            return torch.empty(0, dtype=torch.uint8, device=device)
        held = []  # blocks with no unseen place left, kept until one with a place comes
        while True:
            block = torch.empty(nbytes + SLACK, dtype=torch.uint8, device=device)
            base = block.data_ptr()
            for at in range(0, SLACK + 1, STEP):
                if base + at not in seen and base + at + data_at not in seen:
                    seen.update((base + at, base + at + data_at))
                    return window(block, at, nbytes)
            held.append(block)

    side_stream = torch.cuda.Stream() if cuda else None
    load_stream = torch.cuda.Stream() if cuda else None
    load_a = None

    def caller_stream(c):
        """The concurrency gate's caller stream: a side stream of ours, or the default (null) one."""
        return torch.cuda.default_stream() if c.get("null_stream") else side_stream

    def prepare(i):
        c = calls[i]
        st = state[i]
        reuse = state[c["reuse"]] if c["reuse"] >= 0 else None
        st["bindings"] = {k: int(v) for k, v in c.get("bindings", {}).items()}
        st["model"] = model_for(st["bindings"])
        st["in_buf"], st["inputs"] = [], []
        # NOTES: exact: a tensor of the span alone, from the caching allocator (issue 26).
        g = st["g"] = reuse["g"] if reuse is not None else 0 if c.get("exact") else KGUARD
        for n, a in enumerate(c["inputs"]):
            span = a["span"]
            if reuse is not None:
                buf = reuse["in_buf"][n]
            else:
                elem = torch.tensor([], dtype=common.DTYPES[a["dtype"]]).element_size()
                buf = fresh_buffer(g + span + g, g + a["offset"] * elem)
            if reuse is None and g:
                buf[:KGUARD].copy_(pre_guard)
                buf[KGUARD + span:].copy_(post_guard(span))
            src = shm[a["src"]:a["src"] + span]
            if c.get("writer_kernel") and cuda:
                # Poison now; the real values arrive on the caller's stream behind a 20 ms kernel.
                buf[g:g + span].fill_(0xFF)
                torch.cuda.synchronize()
                st.setdefault("late", []).append((buf, src.pin_memory() if span else src))
            else:
                buf[g:g + span].copy_(src)
            st["in_buf"].append(buf)
            view = view_of(buf, a, g)
            st["inputs"].append(view.view(torch.bool) if n in bool_inputs else view)
        if cuda:
            torch.cuda.synchronize()

    def poison_allocator(i):
        c = calls[i]
        outs = c["outputs"]
        if not outs:
            return
        byte = int(shm[outs[0]["src"]].item()) if outs[0]["span"] else 0xFF
        # NOTES: blocks of each output's size (the allocator hands a freed block of the same size
        # back first) and one large block; all filled with the poison, then freed.
        blocks = []
        total = 0
        for o in outs:
            n = 1
            for d in o["shape"]:
                n *= d
            nbytes = n * torch.tensor([], dtype=common.DTYPES[o["dtype"]]).element_size()
            total += nbytes
            for _ in range(2):
                blocks.append(torch.full((max(nbytes, 1),), byte, dtype=torch.uint8, device=device))
        if cuda:  # the caching allocator splits large segments; glibc reuses same-size blocks
            blocks.append(torch.full((max(4 * total, 32 << 20),), byte, dtype=torch.uint8, device=device))
        if cuda:
            torch.cuda.synchronize()
        del blocks
        if not cuda:
            allocation_fill(byte)  # off again when the call has returned (settle)

    def invoke(i):
        c = calls[i]
        st = state[i]
        args = [st["inputs"][a["tensor"]] if "tensor" in a else a["const"] for a in template]
        rc, msg = 0, ""
        t0 = time.perf_counter()
        try:
            with torch.no_grad():
                if c.get("writer_kernel") and cuda:
                    with torch.cuda.stream(caller_stream(c)):
                        torch.cuda._sleep(int(20e-3 * 1.98e9))  # ~20 ms at the H200's clock
                        g = st["g"]
                        for buf, src in st["late"]:
                            buf[g:g + src.numel()].copy_(src, non_blocking=True)
                        out = st["model"](*args)
                else:
                    out = st["model"](*args)
        except SystemExit as e:
            raise SystemExit(e.code)
        except Exception as e:  # noqa: BLE001
            text = f"{type(e).__name__}: {e}"
            if cuda:
                try:
                    torch.cuda.synchronize()
                except Exception as dev:  # noqa: BLE001 - the context is gone: a device fault
                    emit("fault device " + hexs(str(dev).splitlines()[0][:500]))
                    os._exit(1)
            rc, msg, out = (1 if common.REFUSE_MARK in text else 2), text.splitlines()[0][:900], None
        st["seconds"] = time.perf_counter() - t0
        st["rc"], st["msg"], st["out"] = rc, msg, out

    def settle(i):
        """After the call (or the pair) returned: its work done, the allocation fill off."""
        if not cuda:
            allocation_fill(None)
            return
        if calls[i].get("writer_kernel"):
            caller_stream(calls[i]).synchronize()  # only the caller's: escaped work shows as missing
        else:
            torch.cuda.synchronize()

    def finish(i):
        c = calls[i]
        st = state[i]
        rc, msg = st["rc"], st["msg"]
        for n, a in enumerate(c["inputs"]):
            span = a["span"]
            if st["g"] == 0:  # exact: only the span (the parent checks no guards of such a call)
                shm[a["snap"] + KGUARD:a["snap"] + KGUARD + span].copy_(st["in_buf"][n].cpu())
            else:
                shm[a["snap"]:a["snap"] + 2 * KGUARD + span].copy_(st["in_buf"][n].cpu())
        outs = common.as_tuple(st["out"]) if rc == 0 else ()
        if rc == 0 and len(outs) != len(c["outputs"]):
            rc, msg = 3, f"returned {len(outs)} outputs; the problem's Model returns {len(c['outputs'])}"
        for n, a in enumerate(c["outputs"]):
            span, snap = a["span"], a["snap"]
            slot = shm[snap:snap + 2 * KGUARD + span]
            # NOTES: the candidate allocates its outputs, so their guards are not observable here:
            # the slot carries the canaries; writes past an output are the sanitizer gate's.
            slot[:KGUARD].copy_(pre_guard)
            slot[KGUARD + span:].copy_(post_guard(span))
            slot[KGUARD:KGUARD + span].copy_(shm[a["src"]:a["src"] + span])
            if rc != 0:
                continue
            o = outs[n]
            want_dt = common.DTYPES[a["dtype"]]
            if not isinstance(o, torch.Tensor):
                rc, msg = 3, f"output {n} is a {type(o).__name__}, not a tensor"
            elif list(o.shape) != list(a["shape"]) or (o.dtype != want_dt and not (
                    o.dtype == torch.bool and want_dt == torch.uint8)):  # a bool travels as uint8
                rc, msg = 3, (f"output {n} is {o.dtype} {list(o.shape)}; the problem's Model returns "
                              f"{want_dt} {list(a['shape'])}")
            else:
                o = o.detach().cpu()
                view_of(slot, a).copy_(o.view(torch.uint8) if o.dtype == torch.bool else o)
        emit(done_record(i, rc, st['seconds'], msg))
        await_go()
        state[i] = {"in_buf": st["in_buf"], "g": st["g"]}  # later calls may reuse the buffers

    if ctl is None and plan.get("session"):
        ctl = socket.socket(fileno=5)
    while True:
        shm = torch.frombuffer(mm, dtype=torch.uint8)
        calls = plan["calls"]
        state = [dict() for _ in calls]
        i = 0
        while i < len(calls):
            c = calls[i]
            if c.get("concurrent_with_next") and i + 1 < len(calls):
                prepare(i)
                prepare(i + 1)
                poison_allocator(i)
                emit(f"start {i}")
                emit(f"start {i + 1}")
                barrier = threading.Barrier(2)

                def body(k):
                    barrier.wait()
                    invoke(k)
                other = threading.Thread(target=body, args=(i + 1,))
                other.start()
                body(i)
                other.join()
                settle(i)
                finish(i)
                finish(i + 1)
                i += 2
                continue
            prepare(i)
            poison_allocator(i)
            if c.get("background_load") and cuda:
                if load_a is None:
                    load_a = torch.randn(4096, 4096, device=device)
                with torch.cuda.stream(load_stream):
                    for _ in range(40):
                        load_a @ load_a
            emit(f"start {i}")
            invoke(i)
            settle(i)
            try:
                finish(i)
            except Exception as e:  # noqa: BLE001 - a device error surfacing at the copy back
                emit("fault device " + hexs(str(e).splitlines()[0][:500]))
                os._exit(1)
            i += 1
        if ctl is None or not plan.get("session"):
            break  # a standby worker's sanitized batch: one batch, then bye (the tools report at exit)
        # NOTES: every view of this batch's memfd goes before the next one is mapped.
        del shm, state, calls
        mm = None
        if cuda:
            # NOTES: an idle worker gives its cached blocks back: `kcv corpus run --jobs N` puts
            # N verifications (2-3 torch processes each) on one GPU, and cached-but-free memory of
            # one starved the others (session 7: reference controls out of memory at --jobs 14).
            torch.cuda.empty_cache()
        sys.stdout.flush()
        sys.stderr.flush()
        emit("idle")
        fd = next_batch(ctl)
        if fd is None:
            break
        mm, plan = map_plan(fd)
        os.close(fd)
        emit("ready")
    try:
        emit("bye")
    except BrokenPipeError:
        pass  # kcv had all it wanted and closed the pipe first: nothing left to say
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)


if __name__ == "__main__":
    try:
        main()
    except SystemExit:
        raise
    except BaseException:  # noqa: BLE001 - the worker itself broke: say so, and die non-zero
        traceback.print_exc()
        os._exit(3)
