#!/usr/bin/env python3
"""Where a host's CPU goes while a corpus run lasts, by kind of process.

Samples /proc every INTERVAL seconds and keeps each process's last seen user+system time (its
own, not its children's), keyed by pid and start time so that a reused pid is another process.
At the end (SIGTERM, SIGINT, or when --while-pid exits) it writes a table of CPU seconds per
kind, and the share of the host's busy time (from /proc/stat) that the samples account for:
a process shorter than one interval can be missed, and the share says how much was.

Kinds, the first that matches:
  compile      the compilers load_inline runs (nvcc, cicc, ptxas, cudafe++, cc1plus, ld, ninja...)
  sanitizer    compute-sanitizer, and any process whose parent or grandparent is one (the
               sanitized torch worker)
  worker       a torch worker (kcv_torch_worker.py) not under compute-sanitizer
  reference    the torch reference server (kcv_torch_reference.py)
  kcv          kcv itself (verifiers and the corpus run)
  other        anything else (this sampler, vmstat, the system)

Usage: cpu_by_process.py OUT.md [--interval 0.5] [--while-pid PID]
"""
import argparse
import os
import signal
import sys
import time

COMPILERS = {"nvcc", "cicc", "ptxas", "cudafe++", "fatbinary", "nvlink", "cc1plus", "cc1", "as", "ld", "ld.bfd",
             "ld.gold", "collect2", "ninja", "g++", "gcc", "c++", "x86_64-linux-gnu-g++", "x86_64-linux-gnu-gcc",
             "crt1.o", "bin2c", "nvprune"}
TICK = os.sysconf("SC_CLK_TCK")


def stat_of(pid):
    """(comm, ppid, cpu seconds, start ticks) of a process, or None when it is gone."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            raw = f.read().decode("utf-8", "replace")
    except OSError:
        return None
    comm = raw[raw.index("(") + 1:raw.rindex(")")]
    fields = raw[raw.rindex(")") + 2:].split()
    # fields[0] is field 3 (state): utime is field 14, stime 15, starttime 22.
    return comm, int(fields[1]), (int(fields[11]) + int(fields[12])) / TICK, int(fields[19])


def cmdline_of(pid):
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            return f.read().replace(b"\0", b" ").decode("utf-8", "replace")
    except OSError:
        return ""


def busy_seconds():
    """The host's non-idle CPU time so far, all cores (from /proc/stat)."""
    with open("/proc/stat") as f:
        v = [int(x) for x in f.readline().split()[1:]]
    idle = v[3] + (v[4] if len(v) > 4 else 0)
    return (sum(v[:8]) - idle) / TICK


class Sampler:
    def __init__(self):
        self.procs = {}  # (pid, start) -> [kind, cpu now, cpu at first sight, comm, cmdline]
        self.busy0 = busy_seconds()
        self.t0 = time.monotonic()
        self.samples = 0

    def kind(self, pid, comm, ppid, cmd, table):
        if comm in COMPILERS or comm.startswith("cc1"):
            return "compile"
        up, hops = ppid, 0
        chain = [comm]
        while up > 1 and hops < 2:
            st = table.get(up) or stat_of(up)
            if st is None:
                break
            chain.append(st[0])
            up, hops = st[1], hops + 1
        if "compute-sanitizer" in chain or "compute-sanitiz" in chain:
            return "sanitizer"
        if "kcv_torch_worker.py" in cmd:
            return "worker"
        if "kcv_torch_reference.py" in cmd:
            return "reference"
        if comm == "kcv":
            return "kcv"
        return "other"

    def sample(self):
        table = {}
        for name in os.listdir("/proc"):
            if name.isdigit():
                st = stat_of(int(name))
                if st is not None:
                    table[int(name)] = st
        for pid, (comm, ppid, cpu, start) in table.items():
            key = (pid, start)
            p = self.procs.get(key)
            if p is None:
                cmd = cmdline_of(pid)
                # A process already running at the first sample counts from there.
                first = cpu if self.samples == 0 else 0.0
                self.procs[key] = [self.kind(pid, comm, ppid, cmd, table), cpu, first, comm, cmd[:160]]
            else:
                p[1] = cpu
        self.samples += 1

    def report(self, path):
        busy = busy_seconds() - self.busy0
        wall = time.monotonic() - self.t0
        by_kind, count = {}, {}
        for kind, cpu, first, _, _ in self.procs.values():
            by_kind[kind] = by_kind.get(kind, 0.0) + cpu - first
            count[kind] = count.get(kind, 0) + 1
        seen = sum(by_kind.values())
        lines = [f"# CPU by kind of process ({wall:.0f} s of wall, {os.cpu_count()} cores)", "",
                 f"Host busy time (/proc/stat): {busy:.0f} CPU-s; the samples account for {seen:.0f} CPU-s "
                 f"({100 * seen / busy if busy > 0 else 0:.0f}%).", "",
                 "| kind | processes | CPU s | share of sampled |", "|---|---|---|---|"]
        for kind in sorted(by_kind, key=lambda k: -by_kind[k]):
            lines.append(f"| {kind} | {count[kind]} | {by_kind[kind]:.0f} | "
                         f"{100 * by_kind[kind] / seen if seen > 0 else 0:.1f}% |")
        top = sorted(self.procs.values(), key=lambda p: -(p[1] - p[2]))[:15]
        lines += ["", "Largest processes:", "", "| kind | comm | CPU s | command |", "|---|---|---|---|"]
        for kind, cpu, first, comm, cmd in top:
            lines.append(f"| {kind} | {comm} | {cpu - first:.1f} | `{cmd.replace('|', '/')}` |")
        with open(path, "w") as f:
            f.write("\n".join(lines) + "\n")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("out")
    ap.add_argument("--interval", type=float, default=0.5)
    ap.add_argument("--while-pid", type=int, default=0)
    a = ap.parse_args()
    if a.interval <= 0:
        sys.exit("cpu_by_process.py: --interval must be positive")
    s = Sampler()
    stop = []
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: stop.append(1))
    while not stop:
        s.sample()
        if a.while_pid and not os.path.exists(f"/proc/{a.while_pid}"):
            break
        time.sleep(a.interval)
    s.sample()
    s.report(a.out)


if __name__ == "__main__":
    main()
