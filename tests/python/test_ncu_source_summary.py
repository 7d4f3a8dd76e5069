#!/usr/bin/env python3
"""bench/glr/ncu_source_summary.py reads ncu's per-SASS source page (CSV) and says where a kernel's
instructions and stalls go: totals, stall reasons, the opcode mix (predicates dropped), generic
loads by address space, and straight-line blocks (runs of equal executed counts), largest first.
A file that is not such a CSV is refused with exit 1."""
import csv, subprocess, sys, tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(Path(__file__).resolve().parent))
from script_check import finish  # noqa: E402
SCRIPT = ROOT / "bench/glr/ncu_source_summary.py"
HEADER = ["Address", "Source", "Warp Stall Sampling (All Samples)", "Instructions Executed", "Address Space",
          "stall_wait", "stall_wait (Not Issued)", "stall_long_sb"]
# (source, executed, samples, address space, wait, long_sb): a 3-instruction block run 100 times (a
# generic load of shared memory in it), then a 2-instruction block run 1,000 times, then dead code.
ROWS = [("IMAD R1, R2, 0x4, R3", 100, 10, "", 6, 0),
        ("LD.E R4, desc[UR4][R6.64]", 100, 30, "Shared", 0, 30),
        ("@!P0  BRA 0x7f00", 100, 0, "", 0, 0),
        ("FFMA R1, R2, R3, R1", 1000, 40, "", 30, 0),
        ("HMMA.16816.F32.BF16 R8, R12, R16, R8", 1000, 20, "", 4, 16),
        ("EXIT", 0, 0, "", 0, 0)]


def write(path, rows, kernel="void k<int>(int)"):
    with open(path, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["Kernel Name", kernel])
        w.writerow(HEADER)
        for i, (src, x, s, space, wait, lsb) in enumerate(rows):
            w.writerow([f"0x{16 * i:x}", src, f"{s:,}", f"{x:,}", space, wait, wait, lsb])


def run(*args):
    return subprocess.run([sys.executable, str(SCRIPT), *map(str, args)], capture_output=True, text=True)


def main():
    failures = []
    with tempfile.TemporaryDirectory() as d:
        good, bad = Path(d) / "k.csv", Path(d) / "bad.csv"
        write(good, ROWS)
        bad.write_text("not,a,source,page\n1,2,3,4\n")
        r = run(good)
        if r.returncode != 0:
            failures.append(f"a source page: exit {r.returncode}: {r.stderr}")
        # 2,300 instructions: FFMA and HMMA 1,000 each (43.5%), IMAD, LD, BRA 100 each (4.3%)
        for want in ["## void k<int>(int)", "warp instructions executed: 2,300; stall samples: 100",
                     "| FFMA | 43.5% | 40.0% |", "| HMMA | 43.5% | 20.0% |", "| BRA | 4.3% | 0.0% |",
                     "| LD | Shared | 4.3% |", "| long_sb | 53.5% |", "| wait | 46.5% |",
                     "| 3-4 | 2 | 1,000 | 87.0% | 60.0% | `FFMA R1, R2, R3, R1` | FFMA 1, HMMA 1 |",
                     "| 0-2 | 3 | 100 | 13.0% | 40.0% | `IMAD R1, R2, 0x4, R3` |"]:
            if want not in r.stdout:
                failures.append(f"missing {want!r} in:\n{r.stdout}")
        if "EXIT" in r.stdout:
            failures.append("an instruction never executed was listed (opcode mix or blocks)")
        if r.stdout.index("| 3-4 |") > r.stdout.index("| 0-2 |"):
            failures.append("blocks not listed largest first")
        r = run(bad)
        if r.returncode != 1 or "not ncu's source page" not in r.stderr:
            failures.append(f"not a source page: exit {r.returncode}, stderr {r.stderr!r}")
        r = run(good, Path(d) / "missing.csv")
        if r.returncode != 1 or "## void k<int>(int)" not in r.stdout:
            failures.append(f"a missing second file: exit {r.returncode} (the first still summarized?)")
    return finish("ncu_source_summary", failures)


if __name__ == "__main__":
    sys.exit(main())
