"""kcv torch worker, timing mode (issue 22 item 2, docs/timing.md): times a KernelBench Model or
ModelNew the same way for both, inside the sandboxed torch worker (kcv_torch_worker.py hands over
when the plan's kernelbench object carries "timing"). Only the raw samples leave this process; kcv
computes the median, the spread and the speedups from them (src/kcv/kernelbench/timing.cpp).

Roles (plan kernelbench.timing.role):
  "candidate"  the solution's ModelNew. The solution is imported only after this module has taken
               its clocks and drawn every repetition's inputs, so nothing it patches at import
               reaches them.
  "reference"  the problem's Model, eager, then torch.compile(Model) where it compiles. The
               solution is never imported in this worker: a candidate cannot slow the reference.

One repetition, for every model alike:
  1. inputs: the problem's get_inputs() under torch.manual_seed(seed + k), a fresh set per
     repetition (warm-up included), drawn before the solution loads (up to a budget; past it, drawn
     per repetition, and the result says so), moved to the device before the timed region;
  2. the cache flushed: a buffer larger than the last-level cache is written (cuda: L2, at least
     256 MiB; cpu: 4x the L3 or 64 MiB);
  3. the whole device idle: torch.cuda.synchronize() (cpu: every thread the candidate started has
     ended and none of its threads is running);
  4. timed: cuda: an event before the call, an event right after it on the caller's stream (what
     KernelBench measures: "returned"), torch.cuda.synchronize(), an event after that ("device":
     all work on every stream counted); cpu: time.perf_counter_ns (CLOCK_MONOTONIC) before the
     call, at its return ("returned"), and once every thread the call started has ended and no
     thread the candidate made is running ("device").

The result, JSON in the call's one uint8 output (NUL-terminated):
  {"role", "device", "clock", "inputs", "flush_bytes", "warmup", "reps",
   "models": {NAME: {"device_ms": [...], "returned_ms": [...]} | {"error": TEXT}},
   "compiled": {"ok": bool, "reason": TEXT}}   (reference only)
"""

import json
import os
import sys
import time

# NOTES: taken when this module is imported, before any candidate code runs: a solution that
# rebinds time.perf_counter_ns or torch.cuda.Event's methods at import changes nothing here.
_perf_ns = time.perf_counter_ns
_sleep = time.sleep
_listdir = os.listdir

INPUT_BUDGET_BYTES = 2 << 30   # pre-drawn inputs (host, or device on cuda) at most this much


def _cpu_name():
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return None


def _l3_bytes():
    try:
        n = os.sysconf("SC_LEVEL3_CACHE_SIZE")
        if n and n > 0:
            return int(n)
    except (ValueError, OSError):
        pass
    return 0


class CpuThreads:
    """The cpu analogue of a whole-device synchronize. NOTES: a cpu solution can return before its
    work is done by handing it to a thread of its own (joined at its next call): timed to its
    return it looks as fast as a cuda kernel that hides its work on a side stream. So the clock
    stops only once every thread the candidate made (any thread not alive before the candidate
    loaded; torch's own pools are warmed up before that) has ended or is parked: not running and
    no CPU time gained over one poll window (WINDOW_S, during which this thread sleeps and so
    holds no GIL: a Python thread waiting for the GIL runs then). A worker thread still computing
    gains CPU time and is waited for; a parked pool thread (waiting on a lock or a queue) is not.
    Limit: work done after the return by a thread that was alive before the candidate loaded
    (torch's intra-op pool) is not seen; torch's pool does not outlive a torch call."""

    WINDOW_S = 100e-6

    def __init__(self):
        self.baseline = set(_listdir("/proc/self/task"))

    @staticmethod
    def _runtime(t):
        """(state, ns on a cpu) of thread t; None once it has ended."""
        try:
            with open(f"/proc/self/task/{t}/stat") as f:
                state = f.read().rsplit(")", 1)[1].split()[0]
            with open(f"/proc/self/task/{t}/schedstat") as f:
                ns = int(f.read().split()[0])
            return state, ns
        except (OSError, IndexError, ValueError):
            return None

    def tasks(self):
        return set(_listdir("/proc/self/task"))

    def wait_idle(self):
        """Returns once every candidate thread has ended or is parked (see the class)."""
        while True:
            mine = [t for t in self.tasks() if t not in self.baseline]
            if not mine:
                return
            first = {t: self._runtime(t) for t in mine}
            _sleep(self.WINDOW_S)
            busy = False
            for t in mine:
                a, b = first[t], self._runtime(t)
                if a is None or b is None:
                    continue  # ended
                if b[0] in ("R", "D") or b[1] != a[1]:
                    busy = True
                    break
            if not busy:
                return


class Clock:
    """How one repetition is timed; built before the solution loads."""

    def __init__(self, torch, cuda, device):
        self.torch, self.cuda, self.device = torch, cuda, device
        if cuda:
            self._sync = torch.cuda.synchronize
            self._event = torch.cuda.Event
            current = torch.cuda.current_stream
            # The C-level methods of torch._C._CudaEventBase, not attributes a solution could
            # rebind on torch.cuda.Event; the Python ones where this torch has no such base.
            base = getattr(torch._C, "_CudaEventBase", None)
            if base is not None and all(hasattr(base, m) for m in ("record", "elapsed_time", "synchronize")):
                self._record = lambda e, _r=base.record: _r(e, current())
                self._elapsed, self._ev_sync = base.elapsed_time, base.synchronize
            else:
                ev = torch.cuda.Event
                self._record = ev.record
                self._elapsed, self._ev_sync = ev.elapsed_time, ev.synchronize
            l2 = getattr(torch.cuda.get_device_properties(device), "L2_cache_size", 0) or (64 << 20)
            self.flush_bytes = max(256 << 20, 4 * int(l2))
        else:
            self.threads = None
            self.flush_bytes = max(64 << 20, 4 * _l3_bytes())
        self.flush_buf = torch.empty(self.flush_bytes // 4, dtype=torch.float32, device=device)
        self.flushes = 0

    def start_cpu_watch(self):
        """After torch's own pool is warm, before the candidate loads: which threads are torch's."""
        if not self.cuda:
            self.threads = CpuThreads()

    def flush(self):
        """Writes the whole buffer (another value each time): what the call reads is not in cache."""
        self.flushes += 1
        self.flush_buf.fill_(float(self.flushes))

    def idle(self):
        if self.cuda:
            self._sync()
        else:
            self.threads.wait_idle()

    def time(self, fn):
        """(device_ms, returned_ms, out) of one call of fn."""
        if self.cuda:
            e0, e1, e2 = self._event(enable_timing=True), self._event(enable_timing=True), self._event(enable_timing=True)
            self._record(e0)
            out = fn()
            self._record(e1)
            self._sync()
            self._record(e2)
            self._ev_sync(e2)
            return self._elapsed(e0, e2), self._elapsed(e0, e1), out
        t0 = _perf_ns()
        out = fn()
        t1 = _perf_ns()
        self.threads.wait_idle()
        t2 = _perf_ns()
        return (t2 - t0) / 1e6, (t1 - t0) / 1e6, out

    def describe(self):
        t = self.torch
        if self.cuda:
            d = {"name": t.cuda.get_device_name(self.device), "clock": "cuda events (torch.cuda.Event)",
                 "sync": "torch.cuda.synchronize() (the whole device)"}
            d.update(_gpu_clocks(t, self.device))
            return d
        d = {"name": _cpu_name() or "cpu", "clock": "time.perf_counter_ns (CLOCK_MONOTONIC)",
             "sync": "every thread the candidate made ended or parked (no CPU time over a 0.1 ms window)",
             "threads": t.get_num_threads()}
        try:
            with open("/sys/devices/system/cpu/cpu0/cpufreq/scaling_cur_freq") as f:
                d["cpu0_mhz"] = int(f.read().strip()) // 1000
        except (OSError, ValueError):
            pass
        return d


def _gpu_clocks(torch, device):
    """The SM clock now and its maximum (NVML through pynvml, else nvidia-smi), read before the
    candidate loads; {"sm_clock": "not read (why)"} otherwise."""
    try:
        import pynvml  # noqa: PLC0415
        pynvml.nvmlInit()
        idx = torch.cuda.current_device() if device.index is None else device.index
        h = pynvml.nvmlDeviceGetHandleByIndex(idx)
        return {"sm_clock_mhz": pynvml.nvmlDeviceGetClockInfo(h, pynvml.NVML_CLOCK_SM),
                "sm_clock_max_mhz": pynvml.nvmlDeviceGetMaxClockInfo(h, pynvml.NVML_CLOCK_SM)}
    except Exception as e:  # noqa: BLE001 - no NVML here: nvidia-smi, else say so
        why = f"no pynvml ({type(e).__name__})"
    import shutil
    import subprocess
    smi = shutil.which("nvidia-smi") or next((p for p in ("/usr/bin/nvidia-smi", "/usr/local/bin/nvidia-smi")
                                              if os.path.exists(p)), None)
    if smi:
        try:
            idx = torch.cuda.current_device() if device.index is None else device.index
            out = subprocess.run([smi, "-i", str(idx), "--query-gpu=clocks.sm,clocks.max.sm",
                                  "--format=csv,noheader,nounits"], capture_output=True, text=True, timeout=10)
            now, top = (int(x) for x in out.stdout.strip().split(","))
            return {"sm_clock_mhz": now, "sm_clock_max_mhz": top}
        except Exception as e:  # noqa: BLE001
            why += f"; nvidia-smi: {type(e).__name__}"
    return {"sm_clock": f"not read ({why})"}


def _nbytes(args):
    return sum(a.numel() * a.element_size() for a in args if hasattr(a, "element_size"))


class Inputs:
    """Every repetition's inputs: get_inputs() under manual_seed(seed + k)."""

    def __init__(self, torch, problem, seed, count, device):
        self.torch, self.problem, self.seed, self.device = torch, problem, seed, device
        self.pre = []
        first = self._draw(0)
        per = max(_nbytes(first), 1)
        if per * count <= INPUT_BUDGET_BYTES:
            self.pre = [first] + [self._draw(k) for k in range(1, count)]
            self.how = (f"a fresh set per repetition (get_inputs() under seed+k), all {count} drawn before the "
                        f"candidate loaded and moved to the device before the timed region")
        else:
            self.how = (f"a fresh set per repetition (get_inputs() under seed+k), drawn before each repetition's "
                        f"timed region ({count} sets of {per} bytes exceed the {INPUT_BUDGET_BYTES}-byte budget "
                        f"for drawing them before the candidate loaded)")

    def _draw(self, k):
        t = self.torch
        t.manual_seed(self.seed + k)
        return [a.to(self.device) if isinstance(a, t.Tensor) else a for a in self.problem.get_inputs()]

    def get(self, k):
        return self.pre[k] if self.pre else self._draw(k)


def plain_outputs(torch, out):
    """NOTES: a tensor subclass (or any other object) can compute its values when they are read,
    after the timed region: the gates read them and find them right, and the timer sees nothing.
    Only plain torch.Tensor outputs are timed (type(), which a __class__ property cannot fool)."""
    for o in (out if isinstance(out, (tuple, list)) else (out,)):
        if type(o) is not torch.Tensor:
            raise TypeError(f"returned a {type(o).__module__}.{type(o).__qualname__}, not a plain torch.Tensor: "
                            "its values could be computed when read, outside the timed region")


def measure(clock, model, inputs, warmup, reps):
    torch = clock.torch
    device_ms, returned_ms = [], []
    with torch.no_grad():
        for k in range(warmup + reps):
            args = inputs.get(k)
            clock.flush()
            clock.idle()
            d, r, out = clock.time(lambda: model(*args))
            plain_outputs(torch, out)
            del out
            if k >= warmup:
                device_ms.append(d)
                returned_ms.append(r)
    return {"device_ms": device_ms, "returned_ms": returned_ms}


def run(torch, common, problem, nominal, load_solution, on_ready, timing, init_seed, device, cuda):
    """The whole timing job of this worker, once the problem is loaded; returns the result dict.
    load_solution() imports the solution and returns its model class (candidate role only);
    on_ready() is called once the models are built, before the first timed call."""
    role = timing["role"]
    reps, warmup, seed = int(timing["reps"]), int(timing["warmup"]), int(timing["seed"])
    common.set_sizes(problem, nominal, {})
    clock = Clock(torch, cuda, device)
    # torch's own threads (intra-op pool, BLAS) start before the candidate does: warm them up.
    warm = torch.randn(512, 512, device=device)
    ((warm @ warm).sum() + torch.randn(1 << 22, device=device).exp().sum()).item()
    clock.start_cpu_watch()
    inputs = Inputs(torch, problem, seed, warmup + reps, device)
    result = {"role": role, "device": clock.describe(), "inputs": inputs.how, "flush_bytes": clock.flush_bytes,
              "warmup": warmup, "reps": reps, "models": {}}
    init = list(problem.get_init_inputs())
    if role == "candidate":
        model = common.build_model(load_solution(), init, init_seed, device)
        on_ready()
        try:
            result["models"]["candidate"] = measure(clock, model, inputs, warmup, reps)
        except Exception as e:  # noqa: BLE001 - it ran through every gate; here it raised
            result["models"]["candidate"] = {"error": f"{type(e).__name__}: {e}".splitlines()[0][:500]}
        return result
    model = common.build_model(common.model_class(problem, prefer_new=False), init, init_seed, device)
    on_ready()
    result["models"]["eager"] = measure(clock, model, inputs, warmup, reps)
    compile_fn = getattr(torch, "compile", None)
    if compile_fn is None:
        result["compiled"] = {"ok": False, "reason": f"torch {torch.__version__} has no torch.compile"}
        return result
    try:
        compiled = compile_fn(model)
        with torch.no_grad():
            compiled(*inputs.get(0))  # compiles here, outside every timed region
        clock.idle()
        result["models"]["compiled"] = measure(clock, compiled, inputs, warmup, reps)
        result["compiled"] = {"ok": True, "reason": ""}
    except Exception as e:  # noqa: BLE001 - "where it compiles": say why it did not
        result["compiled"] = {"ok": False, "reason": f"{type(e).__name__}: {e}".splitlines()[0][:500]}
        result["models"].pop("compiled", None)
    return result


def encode(result, capacity):
    """The result as the bytes of the output slot: JSON, NUL-padded; too long is an error."""
    data = json.dumps(result, separators=(",", ":")).encode()
    if len(data) >= capacity:
        data = json.dumps({"error": f"timing result of {len(data)} bytes exceeds the slot's {capacity}"}).encode()
    return data + b"\0" * (capacity - len(data))


if __name__ == "__main__":
    sys.exit("kcv_torch_timing is used by kcv_torch_worker.py")
