#!/usr/bin/env python3
"""Where a kernel's instructions and stalls go, from ncu's per-SASS source page (issue 19).

Reads the CSV that bench/glr/device_check.sh's `stalls` step writes for each profiled kernel
(`ncu --import R --page source --print-source sass --csv`: one row per SASS instruction with its
executed count, stall samples and memory columns; rest.tgz's more/source_*.csv) and prints, in
markdown:
  - the totals: warp instructions executed, stall samples;
  - the stall reasons, share of all samples;
  - the opcode mix: share of executed instructions and of samples per opcode (the part before the
    first '.', predicates dropped);
  - generic memory instructions (LD/ST, not LDS/LDG/STS/STG) by the address space ncu saw them
    touch: a generic load of shared memory is a WMMA or plain load through a pointer nvcc did not
    know to be shared (session 32);
  - the blocks: runs of consecutive instructions with the same executed count (straight-line code
    between branches), the largest shares of executed instructions first, with their first
    instruction and top opcodes.

  python3 bench/glr/ncu_source_summary.py [--blocks N] FILE.csv [FILE.csv ...]

Exit 1 when a file is not such a CSV (no "Address" and "Source" header, or no executed counts).
"""
import argparse, collections, csv, sys


def number(text):
    try:
        return float(text.replace(",", ""))
    except ValueError:
        return 0.0


def opcode(source):
    words = source.split()
    if words and words[0].startswith("@"):  # a predicate: @P0, @!PT
        words = words[1:]
    return words[0].split(".")[0] if words else "?"


def read(path):
    """(kernel name, header -> column index, rows) of one source-page CSV; raises ValueError."""
    with open(path, newline="") as f:
        rows = list(csv.reader(f))
    kernel, at = "", 0
    if rows and rows[0] and rows[0][0] == "Kernel Name":
        kernel, at = (rows[0][1] if len(rows[0]) > 1 else ""), 1
    if len(rows) <= at or "Address" not in rows[at] or "Source" not in rows[at]:
        raise ValueError(f"{path}: no 'Address' and 'Source' header: not ncu's source page as CSV")
    header = {h: i for i, h in enumerate(rows[at])}
    if "Instructions Executed" not in header:
        raise ValueError(f"{path}: no 'Instructions Executed' column (print the source page with --print-source sass)")
    return kernel, header, [r for r in rows[at + 1:] if len(r) >= len(header)]


def summary(path, blocks_wanted):
    kernel, col, rows = read(path)
    get = lambda r, name: number(r[col[name]]) if name in col else 0.0
    sample_col = "Warp Stall Sampling (All Samples)"
    executed = [get(r, "Instructions Executed") for r in rows]
    samples = [get(r, sample_col) for r in rows]
    ops = [opcode(r[col["Source"]]) for r in rows]
    total_x, total_s = sum(executed), sum(samples)
    if total_x <= 0:
        raise ValueError(f"{path}: no instruction was executed")
    pct = lambda part, whole: 100.0 * part / whole if whole else 0.0
    out = [f"## {kernel or path}", "", f"- file: `{path}`",
           f"- warp instructions executed: {total_x:,.0f}; stall samples: {total_s:,.0f}", ""]

    stalls = collections.Counter()
    for name in col:
        if name.startswith("stall_") and "(Not Issued)" not in name:
            stalls[name[len("stall_"):]] = sum(get(r, name) for r in rows)
    all_stalls = sum(stalls.values())
    if all_stalls:
        out += ["| stall reason | share of samples |", "|---|---|"]
        out += [f"| {name} | {pct(v, all_stalls):.1f}% |" for name, v in stalls.most_common(10) if v > 0]
        out.append("")

    mix_x, mix_s = collections.Counter(), collections.Counter()
    for op, x, s in zip(ops, executed, samples):
        mix_x[op] += x
        mix_s[op] += s
    out += ["| opcode | executed | samples |", "|---|---|---|"]
    out += [f"| {op} | {pct(v, total_x):.1f}% | {pct(mix_s[op], total_s):.1f}% |" for op, v in mix_x.most_common(20)
            if v > 0 or mix_s[op] > 0]
    out.append("")

    if "Address Space" in col:
        generic = collections.Counter()
        for r, op, x in zip(rows, ops, executed):
            if op in ("LD", "ST") and x > 0:
                generic[(op, r[col["Address Space"]] or "?")] += x
        if generic:
            out += ["| generic memory instruction | address space | executed |", "|---|---|---|"]
            out += [f"| {op} | {space} | {pct(v, total_x):.1f}% |" for (op, space), v in generic.most_common()]
            out.append("")

    runs, start = [], 0
    for i in range(1, len(rows) + 1):
        if i == len(rows) or executed[i] != executed[start]:
            if executed[start] > 0:
                runs.append((start, i))
            start = i
    runs.sort(key=lambda b: -executed[b[0]] * (b[1] - b[0]))
    out += ["| block (rows) | instructions | executed each | share executed | share samples | first | top opcodes |",
            "|---|---|---|---|---|---|---|"]
    for a, b in runs[:blocks_wanted]:
        top = ", ".join(f"{op} {n}" for op, n in collections.Counter(ops[a:b]).most_common(4))
        first = rows[a][col["Source"]].strip().replace("|", "\\|")[:48]
        out.append(f"| {a}-{b - 1} | {b - a} | {executed[a]:,.0f} | {pct(executed[a] * (b - a), total_x):.1f}% | "
                   f"{pct(sum(samples[a:b]), total_s):.1f}% | `{first}` | {top} |")
    out.append("")
    return "\n".join(out)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--blocks", type=int, default=12, help="how many blocks to list (default 12)")
    ap.add_argument("files", nargs="+")
    a = ap.parse_args()
    status = 0
    for path in a.files:
        try:
            print(summary(path, a.blocks))
        except (OSError, ValueError) as e:
            print(f"ncu_source_summary: {e}", file=sys.stderr)
            status = 1
    return status


if __name__ == "__main__":
    sys.exit(main())
