#!/usr/bin/env python3
"""The sm100 backward as compiled (ctest tmem.sm100_binary): the PTX and cubin that CMake keeps in
the build tree (glr/tests/sm100/glr_bwd_sm100.cu, -gencode arch=compute_100a,code=sm_100a) must hold,
in every sm100_glr_bwd_chunks entry, the TMEM lifecycle the plan (tmem_plan.hpp) expects:

  one tcgen05.alloc, then one tcgen05.relinquish_alloc_permit, tcgen05.mma kind::f16 with
  tcgen05.commit to an mbarrier, tcgen05.ld 32x32b with tcgen05.wait::ld, and one tcgen05.dealloc
  after the last MMA and load, preceded by a tcgen05.fence::before_thread_sync and a CTA barrier;
  the alloc and the dealloc each take the entry's template argument (AllocColumns, one of the
  plan's kRunAllocColumns) as a compile-time constant (an immediate, or a register written once by
  a mov of one), so that a reader of the binary (kcv's TMEM check) sees the budget;

and the operands arrive by TMA through an mbarrier pipeline (include/glr/cuda/sm100/pipeline.hpp):
cp.async.bulk.tensor.3d tile loads completing on an mbarrier (complete_tx::bytes), after an
mbarrier.arrive.expect_tx that sets the bytes; mbarrier.init and mbarrier.try_wait.parity; at least
two tcgen05.commit sites (the MMAs release their operand slot and signal the MMA barrier); on the
vector gate a plain mbarrier.arrive (the q/k slots feed FFMA only); and no 16-bit load from global
memory (q, k, v, dO come only by TMA);

ptxas's register count of each entry must be at least the plan's kRegsPerThreadFloor (else the
plan's register term would over-state how few CTAs fit, i.e. under-count residency); the cubin
must name every entry; and the sm_90a PTX of the same source must hold no tcgen05 instruction (the
kernel is a trap there). --self-test breaks copies of the real PTX one way each and requires the check
to reject every one, so the check cannot pass vacuously.

Usage: check_binary.py --ptx100 F --ptxas100 F --cubin100 F --ptx90 F --plan tmem_plan.hpp [--self-test]
"""
import argparse
import re
import sys

KERNEL = "sm100_glr_bwd_chunks"


def entries(ptx):
    """{mangled name: body} of every .entry whose name holds KERNEL."""
    out = {}
    for m in re.finditer(r"\.entry\s+(\S+)\s*\(", ptx):
        name = m.group(1)
        start = m.end()
        nxt = re.search(r"\.entry\s+\S+\s*\(", ptx[start:])
        body = ptx[start: start + nxt.start()] if nxt else ptx[start:]
        if KERNEL in name:
            out[name] = body
    return out


def lines_of(body, pat):
    return [i for i, line in enumerate(body.splitlines()) if re.search(pat, line)]


def constant_columns(body, line):
    """The column operand (the last) of the tcgen05 instruction at `line`: an int when it is an
    immediate or a register written exactly once, by a mov of an immediate; else None."""
    text = body.splitlines()[line]
    m = re.search(r",\s*(%?\w+)\s*;", text)
    if not m:
        return None
    op = m.group(1)
    if re.fullmatch(r"\d+", op):
        return int(op)
    writes = re.findall(r"^\s*(\S+)\s+" + re.escape(op) + r"\s*,\s*([^;]*);", body, flags=re.M)
    if len(writes) == 1 and re.fullmatch(r"mov\.[busb]\d+", writes[0][0]) and re.fullmatch(r"\d+", writes[0][1].strip()):
        return int(writes[0][1])
    return None


def check_pipeline(short, body):
    """The TMA loads and the mbarrier pipeline of one entry (the gate form aside)."""
    bad = []
    tma = lines_of(body, r"^\s*cp\.async\.bulk\.tensor\.3d\.shared::cluster\.global(\.tile)?\.mbarrier::complete_tx::bytes\b")
    expect_tx = lines_of(body, r"^\s*mbarrier\.arrive\.expect_tx\.shared::cta\.b64\b")
    init = lines_of(body, r"^\s*mbarrier\.init\.shared::cta\.b64\b")
    try_wait = lines_of(body, r"^\s*mbarrier\.try_wait\.parity\.shared::cta\.b64\b")
    commits = lines_of(body, r"^\s*tcgen05\.commit\.cta_group::1\.mbarrier::arrive::one")
    ld16 = lines_of(body, r"^\s*ld\.global[.a-z0-9:]*\.(b16|u16|s16|f16|bf16)\b")
    for what, xs in (("TMA load (cp.async.bulk.tensor.3d ... mbarrier::complete_tx::bytes)", tma),
                     ("mbarrier.arrive.expect_tx", expect_tx), ("mbarrier.init", init),
                     ("mbarrier.try_wait.parity", try_wait)):
        if not xs:
            bad.append(f"{short}: no {what}")
    if tma and expect_tx and expect_tx[0] > tma[0]:
        bad.append(f"{short}: a TMA load before any mbarrier.arrive.expect_tx")
    if len(commits) < 2:
        bad.append(f"{short}: {len(commits)} tcgen05.commit site(s): the slot release and the MMA barrier need 2")
    if ld16:
        bad.append(f"{short}: {len(ld16)} 16-bit load(s) from global memory: the MMA operands must come by TMA")
    return bad


def check_entry(name, body):
    """List of problems with one entry's TMEM lifecycle."""
    bad = []
    alloc = lines_of(body, r"^\s*tcgen05\.alloc\.cta_group::1\.sync\.aligned\.shared::cta\.b32")
    reli = lines_of(body, r"^\s*tcgen05\.relinquish_alloc_permit\.cta_group::1\.sync\.aligned")
    deal = lines_of(body, r"^\s*tcgen05\.dealloc\.cta_group::1\.sync\.aligned\.b32")
    mma = lines_of(body, r"^\s*tcgen05\.mma\.cta_group::1\.kind::f16\b")
    commit = lines_of(body, r"^\s*tcgen05\.commit\.cta_group::1\.mbarrier::arrive::one")
    ld = lines_of(body, r"^\s*tcgen05\.ld\.sync\.aligned\.32x32b\.")
    wait_ld = lines_of(body, r"^\s*tcgen05\.wait::ld\.sync\.aligned")
    fence_before = lines_of(body, r"^\s*tcgen05\.fence::before_thread_sync")
    barrier = lines_of(body, r"^\s*(bar\.sync|barrier\.sync|bar\.arrive|barrier\.cta\.sync)\b")
    short = name if len(name) < 90 else name[:90] + "..."
    if len(alloc) != 1:
        bad.append(f"{short}: {len(alloc)} tcgen05.alloc (one expected)")
    if len(reli) != 1:
        bad.append(f"{short}: {len(reli)} tcgen05.relinquish_alloc_permit (one expected)")
    if len(deal) != 1:
        bad.append(f"{short}: {len(deal)} tcgen05.dealloc (one expected)")
    for what, xs in (("tcgen05.mma kind::f16", mma), ("tcgen05.commit", commit), ("tcgen05.ld 32x32b", ld),
                     ("tcgen05.wait::ld", wait_ld)):
        if not xs:
            bad.append(f"{short}: no {what}")
    if bad:
        return bad
    if reli[0] < alloc[0]:
        bad.append(f"{short}: relinquish_alloc_permit before the alloc")
    last_use = max(mma + ld)
    if deal[0] < last_use:
        bad.append(f"{short}: dealloc before the last tcgen05.mma/ld")
    if deal[0] < alloc[0]:
        bad.append(f"{short}: dealloc before the alloc")
    between = [b for b in barrier if last_use < b < deal[0]]
    if not between:
        bad.append(f"{short}: no CTA barrier between the last tcgen05.mma/ld and the dealloc")
    elif not [f for f in fence_before if last_use < f < between[-1]]:
        bad.append(f"{short}: no tcgen05.fence::before_thread_sync before the final barrier")
    if commit[-1] < mma[-1]:
        bad.append(f"{short}: an MMA after the last commit")
    bad += check_pipeline(short, body)
    m = re.search(r"ELi(\d+)EE", name)
    want = int(m.group(1)) if m else None
    for what, line in (("tcgen05.alloc", alloc[0]), ("tcgen05.dealloc", deal[0])):
        got = constant_columns(body, line)
        if got is None:
            bad.append(f"{short}: {what}'s column count is not a compile-time constant")
        elif got != want:
            bad.append(f"{short}: {what} of {got} columns, the template argument says {want}")
    return bad


def check(ptx100, ptxas100, cubin100, ptx90, floor):
    bad = []
    es = entries(ptx100)
    if len(es) != 8:
        bad.append(f"sm_100a PTX: {len(es)} {KERNEL} entries (bf16/f16 x vector/scalar gate x 32/64 columns: 8 expected)")
    for name, body in es.items():
        bad += check_entry(name, body)
        is_scalar = "Lb0E" in name
        n_mma_sites = len(lines_of(body, r"^\s*tcgen05\.mma\."))
        # Vector gate: DV only (two K16 steps); scalar gate: DV and A (two each).
        want = 4 if is_scalar else 2
        if n_mma_sites < want:
            bad.append(f"{name[:60]}...: {n_mma_sites} tcgen05.mma sites, at least {want} expected")
        if not is_scalar and not lines_of(body, r"^\s*mbarrier\.arrive\.shared::cta\.b64\b"):
            bad.append(f"{name[:60]}...: vector gate without a plain mbarrier.arrive (the q/k slots' release)")
    regs = {}
    cur = None
    for line in ptxas100.splitlines():
        m = re.search(r"Compiling entry function '(\S+)' for 'sm_100a'", line)
        if m:
            cur = m.group(1)
            continue
        m = re.search(r"Used (\d+) registers", line)
        if m and cur:
            regs[cur] = int(m.group(1))
            cur = None
    for name in es:
        if name not in regs:
            bad.append(f"ptxas log: no register count for {name[:60]}...")
        elif regs[name] < floor:
            bad.append(f"{name[:60]}...: {regs[name]} registers < the plan's floor {floor} (residency under-counted)")
    if not cubin100.startswith(b"\x7fELF"):
        bad.append("cubin: not an ELF file")
    for name in es:
        if name.encode() not in cubin100:
            bad.append(f"cubin: no symbol {name[:60]}...")
    e90 = entries(ptx90)
    if len(e90) != 8:
        bad.append(f"sm_90a PTX: {len(e90)} {KERNEL} entries (8 empty ones expected)")
    for name, body in e90.items():
        if "tcgen05" in body:
            bad.append(f"sm_90a PTX: {name[:60]}... holds tcgen05 instructions")
    return bad, regs


def self_test(ptx100, ptxas100, cubin100, ptx90, floor):
    """Each mutation must be rejected."""
    first = next(iter(entries(ptx100)))
    start = ptx100.index(first)

    def in_first(pat, repl, count=1):
        head, tail = ptx100[:start], ptx100[start:]
        new = re.sub(pat, repl, tail, count=count, flags=re.M)
        assert new != tail, f"self-test: pattern {pat} not found"
        return head + new

    def in_first_all_but_one(pat):
        """Every line matching `pat` in the first entry's body removed but the first one."""
        m = re.search(r"\.entry\s+" + re.escape(first) + r"\s*\(", ptx100)
        nxt = re.search(r"\.entry\s+\S+\s*\(", ptx100[m.end():])
        b0, b1 = m.end(), (m.end() + nxt.start() if nxt else len(ptx100))
        seen = []

        def drop(mm):
            seen.append(1)
            return mm.group(0) if len(seen) == 1 else ""
        body = re.sub(pat, drop, ptx100[b0:b1], flags=re.M)
        assert len(seen) > 1, f"self-test: fewer than two lines match {pat}"
        return ptx100[:b0] + body + ptx100[b1:]

    cases = {
        "dealloc removed": (in_first(r"^\s*tcgen05\.dealloc\..*$", ""), ptxas100, ptx90),
        "relinquish removed": (in_first(r"^\s*tcgen05\.relinquish_alloc_permit\..*$", ""), ptxas100, ptx90),
        "second alloc": (in_first(r"^(\s*tcgen05\.alloc\..*)$", r"\1\n\1"), ptxas100, ptx90),
        "alloc columns from a parameter": (in_first(r"^(\s*tcgen05\.alloc\.[^,]*,\s*)%?\w+\s*;", r"\1%r999;"),
                                           ptxas100, ptx90),
        "dealloc of other columns": (in_first(r"^(\s*tcgen05\.dealloc\.[^,]*,\s*)%?\w+\s*;", r"\g<1>128;"),
                                     ptxas100, ptx90),
        "no tcgen05.ld": (in_first(r"^\s*tcgen05\.ld\..*$", "", count=0), ptxas100, ptx90),
        "no TMA load": (in_first(r"^\s*cp\.async\.bulk\.tensor\..*$", "", count=0), ptxas100, ptx90),
        "no expect_tx": (in_first(r"^\s*mbarrier\.arrive\.expect_tx\..*$", "", count=0), ptxas100, ptx90),
        "no try_wait": (in_first(r"^\s*mbarrier\.try_wait\..*$", "", count=0), ptxas100, ptx90),
        "a 16-bit global load": (in_first(r"^(\s*tcgen05\.relinquish_alloc_permit\..*)$",
                                          r"\1\n\tld.global.nc.b16 %rs999, [%rd999];"), ptxas100, ptx90),
        "one commit": (in_first_all_but_one(r"^\s*tcgen05\.commit\..*$"), ptxas100, ptx90),
        "registers under the floor": (ptx100, re.sub(r"Used \d+ registers", "Used 8 registers", ptxas100), ptx90),
        "tcgen05 in the sm_90a PTX": (ptx100, ptxas100, ptx90.replace("ret;", "tcgen05.fence::after_thread_sync;\nret;")),
    }
    failed = []
    for what, (p100, log, p90) in cases.items():
        bad, _ = check(p100, log, cubin100, p90, floor)
        if not bad:
            failed.append(what)
        else:
            print(f"self-test: '{what}' rejected: {bad[0]}")
    return failed


def main():
    ap = argparse.ArgumentParser()
    for a in ("--ptx100", "--ptxas100", "--cubin100", "--ptx90", "--plan"):
        ap.add_argument(a, required=True)
    ap.add_argument("--self-test", action="store_true")
    o = ap.parse_args()
    ptx100 = open(o.ptx100).read()
    ptxas100 = open(o.ptxas100).read()
    cubin100 = open(o.cubin100, "rb").read()
    ptx90 = open(o.ptx90).read()
    m = re.search(r"kRegsPerThreadFloor\s*=\s*(\d+)", open(o.plan).read())
    if not m:
        print("FAIL: kRegsPerThreadFloor not found in the plan")
        return 1
    floor = int(m.group(1))
    bad, regs = check(ptx100, ptxas100, cubin100, ptx90, floor)
    for name, r in sorted(regs.items()):
        if KERNEL in name:
            print(f"{r:4d} registers  {name}")
    if bad:
        print("FAIL:\n  " + "\n  ".join(bad[:20]))
        return 1
    print(f"ok: {len(entries(ptx100))} sm100 entries hold alloc -> relinquish -> mma/commit/ld -> barrier -> dealloc"
          f" and TMA loads on an mbarrier pipeline (expect_tx, try_wait.parity), no 16-bit global loads;"
          f" registers >= {floor}; the sm_90a PTX holds no tcgen05")
    if o.self_test:
        failed = self_test(ptx100, ptxas100, cubin100, ptx90, floor)
        if failed:
            print("FAIL: the check accepted broken binaries: " + ", ".join(failed))
            return 1
        print("ok: every broken copy rejected")
    return 0


if __name__ == "__main__":
    sys.exit(main())
