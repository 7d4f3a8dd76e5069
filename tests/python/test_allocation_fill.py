#!/usr/bin/env python3
"""The torch worker's allocation fill (allocation_fill in adapters/torch/kcv_torch_worker.py): on
cpu, during a call, every block glibc's malloc hands out holds the call's output poison, whatever
the heap held there before — so an output element a candidate never writes reads as the poison in
every run, and a verification's verdicts repeat under the same seed (the stale-output control's
layout verdict once depended on which freed block torch.empty_like got back).

Checked in a worker's environment (GLIBC_TUNABLES as src/kcv/isolation/spawn.cpp sets it): for
each poison byte (0xFF, which glibc can only be asked for as 0x100, 0x3F, 0x00, a random one),
tensors of tcache, fastbin, small-bin, large-bin and mmap sizes, each allocated right after a
tensor of the same size holding other bytes was freed, from the main thread and from another
thread (torch's pool allocates in its own arenas). Prints "SKIP: <why>" and exits 0 without torch.
"""
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ADAPTERS = os.path.join(HERE, "..", "..", "adapters", "torch")

CHILD = r"""
import sys, threading
sys.path.insert(0, sys.argv[1])
import torch
import kcv_torch_worker as w
torch.manual_seed(0)
bad = []
sizes = [1, 7, 132, 528, 1000, 4096, 65536, 1 << 20, 48 << 20]
def check(byte, where):
    for n in sizes:
        old = torch.full((n,), (byte + 1) & 0xFF, dtype=torch.uint8)
        del old  # the block the next allocation of this size is likely to get back
        if not w.allocation_fill(byte):
            bad.append("mallopt(M_PERTURB) refused under glibc")
        t = torch.empty(n, dtype=torch.uint8)
        f = torch.empty(n // 4 + 1, dtype=torch.float32)
        w.allocation_fill(None)
        for name, x in (("uint8", t), ("float32", f.view(torch.uint8))):
            wrong = int((x != byte).sum())
            if wrong:
                bad.append(f"{where}: poison {byte:#04x}, {n} bytes ({name}): {wrong} bytes not the poison")
for byte in (0xFF, 0x3F, 0x00, int(torch.randint(1, 255, ()).item())):
    check(byte, "main thread")
    th = threading.Thread(target=check, args=(byte, "another thread"))
    th.start(); th.join()
print("\n".join(bad) if bad else "ok")
"""


def main():
    try:
        import torch  # noqa: F401
    except Exception as e:  # noqa: BLE001
        print(f"SKIP: no torch in {sys.executable} ({type(e).__name__}: {e})")
        return 0
    env = dict(os.environ, GLIBC_TUNABLES="glibc.malloc.tcache_count=0",
               MALLOC_MMAP_THRESHOLD_="4294967296", MALLOC_TRIM_THRESHOLD_="17179869184")
    # The spawn.cpp environment, read from the source: a test of that environment, not a copy.
    spawn = open(os.path.join(HERE, "..", "..", "src", "kcv", "isolation", "spawn.cpp")).read()
    for var in ("GLIBC_TUNABLES", "MALLOC_MMAP_THRESHOLD_", "MALLOC_TRIM_THRESHOLD_"):
        if f'"{var}={env[var]}"' not in spawn:
            print(f"FAIL: spawn.cpp no longer gives the torch worker {var}={env[var]}; update this test")
            return 1
    r = subprocess.run([sys.executable, "-c", CHILD, ADAPTERS], env=env, capture_output=True, text=True)
    out = (r.stdout + r.stderr).strip()
    if r.returncode != 0 or out.splitlines()[-1:] != ["ok"]:
        print("FAIL: the allocation fill let other bytes through:\n" + out)
        return 1
    print("ok: every fresh block held the poison (4 poisons x 9 sizes x 2 dtypes x 2 threads)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
