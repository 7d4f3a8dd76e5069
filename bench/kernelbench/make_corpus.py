#!/usr/bin/env python3
"""Materialize KernelBench corpora for `kcv corpus run` from the KernelBench repository and the
public KernelBench leaderboard. Python 3 standard library only.

The output is third-party code: write it OUTSIDE git-tracked content (bench/kernelbench/data/ is
git-ignored). Each source repository may be a normal checkout or a bare mirror: with no --*-rev
given, a checkout's files are read directly when present (DIR/KernelBench/, DIR/docs/assets/);
otherwise, and always when a revision is given, files are read with `git show REV:PATH`.

Usage:

  make_corpus.py problems --kernelbench-repo DIR --out OUT [--levels 1,2,3]
                 [--kernelbench-rev REV] [--force]
      OUT/level<N>/<stem>.py, one per KernelBench problem, plus OUT/manifest.json.
      For the reference controls:  kcv corpus run OUT --self --out RUN

  make_corpus.py leaderboard --leaderboard-repo DIR --out OUT [--kernelbench-repo DIR]
                 [--levels 1,2,3] [--limit N] [--index data|raw]
                 [--problems leaderboard|kernelbench] [--kernelbench-rev REV] [--force]
      OUT/level<N>/<stem>/problem.py and OUT/level<N>/<stem>/solution_<model>_<hash8>.py for
      every leaderboard entry whose problem and solution files exist, plus OUT/manifest.json
      listing the pairs (level, problem, model, hash, torch_speedup).
      Then:  kcv corpus run OUT --out RUN --baseline kernelbench

  make_corpus.py subset --from DIR (--match RE | --exclude RE | --keys FILE)... --out OUT [--force]
      A corpus of some of DIR's candidates, to run again without the rest: the pairs (a
      solution*.py beside a problem.py, its problem.py copied with it) or, in a --self corpus,
      the problem files whose key (the path relative to DIR, as kcv's journal names it) matches
      any --match regex or is a line of a --keys file (both absent: every key), less those that
      match any --exclude regex. OUT/manifest.json lists the keys taken. Session 28 ran the pairs
      an earlier run had not reached, and the next reruns the ones a kcv change concerns, so.

  --index data (default): docs/assets/data.json, what the leaderboard page shows (at most the
      five fastest correct kernels per problem). --index raw: docs/assets/raw_data.json, every
      evaluated-correct kernel the leaderboard holds (a superset).
  --problems leaderboard (default): problem.py is the leaderboard's own copy of the problem,
      docs/assets/problems/l<N>_p<M>.py: the version the solutions were generated and timed
      against. --problems kernelbench: KernelBench/level<N>/<stem>.py from --kernelbench-repo at
      --kernelbench-rev (default HEAD). KernelBench has since changed every problem file (most
      sizes scaled up, randn -> rand) and replaced some problems outright, so HEAD pairs a
      solution with a problem it never saw; --kernelbench-rev 7749313 matches the leaderboard.
      With --problems leaderboard and --kernelbench-repo given, the manifest records for each pair
      whether the problem is byte-identical to KernelBench at --kernelbench-rev.
  --limit N keeps the first N pairs in the order (level, problem number, model, hash), after the
      skipped entries are dropped, so a subset is reproducible.

OUT must be missing or empty unless --force; --force first empties OUT (it refuses to empty a
directory that holds .git, the filesystem root, the home directory or the current directory or
one of its parents). Nothing outside OUT is written or removed. The manifest holds no timestamp:
the same inputs give byte-identical output.

Exit status: 0 done, 1 a source could not be read, 2 bad usage or OUT refused.
"""

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

SCHEMA = "kcv.kernelbench-corpus/1"
PROBLEM_RE = re.compile(r"^(\d+)_.*\.py$")


class SourceError(Exception):
    pass


class Source:
    """Read-only files of one repository: from the work tree, or via git at a revision."""

    def __init__(self, directory, marker, rev):
        self.dir = Path(directory)
        if not self.dir.is_dir():
            raise SourceError(f"{self.dir}: not a directory")
        self.use_files = rev is None and (self.dir / marker).is_dir()
        self.rev = rev or "HEAD"
        commit = self._git("rev-parse", "--verify", "--quiet", self.rev + "^{commit}",
                           check=False)
        self.commit = commit.strip() if commit else None
        if self.commit is None and not self.use_files:
            where = "" if rev is not None else f"no {marker}/ folder here, and "
            raise SourceError(f"{self.dir}: {where}git cannot resolve revision {self.rev!r} "
                              f"(not a git repository, or no such revision)")
        self.tree_ish = self.commit or self.rev  # read at the resolved commit, not a moving name

    def _git(self, *args, check=True):
        r = subprocess.run(["git", "-C", str(self.dir), *args], capture_output=True)
        if r.returncode != 0:
            if not check:
                return None
            msg = r.stderr.decode(errors="replace").strip().splitlines()
            raise SourceError(f"git -C {self.dir} {' '.join(args)}: "
                              f"{msg[-1] if msg else 'exit %d' % r.returncode}")
        return r.stdout.decode(errors="replace")

    def describe(self):
        d = {"dir": str(self.dir), "read": "files" if self.use_files else "git",
             "commit": self.commit}
        if not self.use_files:
            d["rev"] = self.rev
        return d

    def list_dir(self, prefix):
        """Names of the plain files directly inside folder `prefix`."""
        if self.use_files:
            p = self.dir / prefix
            return sorted(x.name for x in p.iterdir() if x.is_file()) if p.is_dir() else []
        out = self._git("ls-tree", "-z", f"{self.tree_ish}:{prefix}", check=False)
        if out is None:
            return []
        names = []
        for item in out.split("\0"):
            meta, _, name = item.partition("\t")
            if name and meta.split(" ")[1:2] == ["blob"]:
                names.append(name)
        return sorted(names)

    def read(self, path):
        """The file's bytes, or None when it does not exist."""
        if self.use_files:
            p = self.dir / path
            return p.read_bytes() if p.is_file() else None
        r = subprocess.run(["git", "-C", str(self.dir), "cat-file", "blob", f"{self.tree_ish}:{path}"],
                           capture_output=True)
        return r.stdout if r.returncode == 0 else None


def parse_levels(text):
    try:
        levels = sorted({int(x) for x in text.split(",") if x.strip()})
    except ValueError:
        levels = []
    if not levels or min(levels) < 1:
        raise argparse.ArgumentTypeError(f"--levels wants positive integers like 1,2,3, not {text!r}")
    return levels


def die(msg, code=2):
    print(f"make_corpus: {msg}", file=sys.stderr)
    sys.exit(code)


def prepare_out(out, force):
    out = Path(out)
    if out.exists() and not out.is_dir():
        die(f"{out} exists and is not a directory")
    if out.is_dir() and any(out.iterdir()):
        if not force:
            die(f"{out} exists and is not empty; pass --force to empty it first, or pick another --out")
        real = out.resolve()
        cwd = Path.cwd().resolve()
        if (real == Path(real.anchor) or real == Path.home().resolve()
                or real == cwd or real in cwd.parents or (real / ".git").exists()):
            die(f"refusing to empty {out} (resolves to {real}): it is the root, the home directory, "
                f"the current directory or one of its parents, or holds .git")
        for child in real.iterdir():
            if child.is_dir() and not child.is_symlink():
                shutil.rmtree(child)
            else:
                child.unlink()
    out.mkdir(parents=True, exist_ok=True)
    return out


def write_file(path, data):
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "xb") as f:  # never overwrite: a name collision is a bug, not a silent loss
        f.write(data)


def write_manifest(out, manifest):
    text = json.dumps(manifest, indent=1, sort_keys=False) + "\n"
    write_file(out / "manifest.json", text.encode())


def model_slug(name):
    return re.sub(r"[^A-Za-z0-9.-]+", "-", name).strip("-") or "model"


# ---------------------------------------------------------------------------------------------
# problems


def cmd_problems(args):
    try:
        kb = Source(args.kernelbench_repo, "KernelBench", args.kernelbench_rev)
    except SourceError as e:
        die(str(e), 1)
    found = {}
    for lv in args.levels:
        names = [n for n in kb.list_dir(f"KernelBench/level{lv}") if PROBLEM_RE.match(n)]
        found[lv] = sorted(names, key=lambda n: (int(PROBLEM_RE.match(n).group(1)), n))
    missing = [lv for lv in args.levels if not found[lv]]
    if len(missing) == len(args.levels):
        die(f"no problem files under KernelBench/level{{{','.join(map(str, args.levels))}}} "
            f"in {kb.dir} ({'files' if kb.use_files else 'git ' + kb.rev})", 1)
    out = prepare_out(args.out, args.force)
    entries = []
    for lv in args.levels:
        for name in found[lv]:
            data = kb.read(f"KernelBench/level{lv}/{name}")
            if data is None:
                die(f"cannot read KernelBench/level{lv}/{name}", 1)
            write_file(out / f"level{lv}" / name, data)
            entries.append({"key": f"level{lv}/{name}", "level": lv, "problem": name[:-3],
                            "problem_number": int(PROBLEM_RE.match(name).group(1))})
    write_manifest(out, {
        "schema": SCHEMA, "mode": "problems", "levels": args.levels,
        "sources": {"kernelbench": kb.describe()},
        "counts": {f"level{lv}": len(found[lv]) for lv in args.levels},
        "problems": entries,
    })
    per = ", ".join(f"level{lv} {len(found[lv])}" for lv in args.levels)
    warn = f"; no problems for level(s) {','.join(map(str, missing))}" if missing else ""
    print(f"problems: wrote {len(entries)} problem files ({per}) from KernelBench "
          f"{kb.commit[:12] if kb.commit else '?'}{' work tree' if kb.use_files else ''}"
          f"{warn} -> {out}")
    return 0


# ---------------------------------------------------------------------------------------------
# leaderboard


def load_json(src, path):
    data = src.read(path)
    if data is None:
        die(f"{src.dir}: no {path} ({'files' if src.use_files else 'git ' + src.rev})", 1)
    try:
        return json.loads(data)
    except ValueError as e:
        die(f"{src.dir}/{path}: not JSON: {e}", 1)


def leaderboard_entries(lb, index):
    """[(level, number, stem, model, hash, torch_speedup)] from the chosen index."""
    data = load_json(lb, "docs/assets/data.json")
    stems = {}
    entries = []
    key_re = re.compile(r"^Level (\d+): ((\d+)_.*)$")
    for key, items in data.items():
        m = key_re.match(key)
        if not m:
            die(f"data.json: unexpected key {key!r}", 1)
        lv, stem, num = int(m.group(1)), m.group(2), int(m.group(3))
        stems[(lv, num)] = stem
        if index == "data":
            for it in items:
                entries.append((lv, num, stem, it["display_name"], it["file"],
                                it.get("torch_speedup")))
    if index == "raw":
        for it in load_json(lb, "docs/assets/raw_data.json"):
            lv, num = int(it["level"]), int(it["problem_id"]) + 1  # problem_id counts from 0
            stem = stems.get((lv, num))
            if stem is None:
                die(f"raw_data.json: level {lv} problem_id {num - 1} has no name in data.json", 1)
            entries.append((lv, num, stem, it["display_name"], it["file"],
                            it.get("torch_speedup")))
    entries.sort(key=lambda e: (e[0], e[1], e[3], e[4]))
    return entries


def cmd_leaderboard(args):
    try:
        lb = Source(args.leaderboard_repo, "docs/assets", args.leaderboard_rev)
        kb = (Source(args.kernelbench_repo, "KernelBench", args.kernelbench_rev)
              if args.kernelbench_repo else None)
    except SourceError as e:
        die(str(e), 1)
    if args.problems == "kernelbench" and kb is None:
        die("--problems kernelbench needs --kernelbench-repo")
    if args.limit is not None and args.limit < 0:
        die("--limit must be >= 0")

    all_entries = leaderboard_entries(lb, args.index)
    in_levels = [e for e in all_entries if e[0] in args.levels]
    solutions = set(lb.list_dir("docs/assets/solutions"))

    problem_cache = {}

    def problem_bytes(lv, num, stem):
        if (lv, num) not in problem_cache:
            if args.problems == "leaderboard":
                path = f"docs/assets/problems/l{lv}_p{num}.py"
                problem_cache[(lv, num)] = (path, lb.read(path))
            else:
                path = f"KernelBench/level{lv}/{stem}.py"
                problem_cache[(lv, num)] = (path, kb.read(path))
        return problem_cache[(lv, num)]

    kept, skipped = [], []
    for lv, num, stem, model, h, speedup in in_levels:
        ppath, pdata = problem_bytes(lv, num, stem)
        reason = None
        if pdata is None:
            reason = f"no problem file {ppath}"
        elif f"{h}.py" not in solutions:
            reason = f"no solution file docs/assets/solutions/{h}.py"
        rec = {"level": lv, "problem": stem, "problem_number": num, "model": model, "hash": h,
               "torch_speedup": speedup}
        if reason:
            rec["reason"] = reason
            skipped.append(rec)
        else:
            kept.append(rec)
    dropped = 0
    if args.limit is not None and len(kept) > args.limit:
        dropped = len(kept) - args.limit
        kept = kept[:args.limit]

    out = prepare_out(args.out, args.force)
    kb_cmp = {}
    written_problems = set()
    for rec in kept:
        lv, num, stem = rec["level"], rec["problem_number"], rec["problem"]
        ppath, pdata = problem_bytes(lv, num, stem)
        pdir = out / f"level{lv}" / stem
        if (lv, num) not in written_problems:
            write_file(pdir / "problem.py", pdata)
            written_problems.add((lv, num))
            if args.problems == "leaderboard" and kb is not None:
                kdata = kb.read(f"KernelBench/level{lv}/{stem}.py")
                kb_cmp[(lv, num)] = None if kdata is None else (kdata == pdata)
        sname = f"solution_{model_slug(rec['model'])}_{rec['hash'][:8]}.py"
        sdata = lb.read(f"docs/assets/solutions/{rec['hash']}.py")
        if sdata is None:
            die(f"cannot read docs/assets/solutions/{rec['hash']}.py", 1)
        write_file(pdir / sname, sdata)
        rec["key"] = f"level{lv}/{stem}/{sname}"
        rec["problem_file"] = f"level{lv}/{stem}/problem.py"
        rec["problem_source"] = ppath
        if (lv, num) in kb_cmp:
            rec["problem_matches_kernelbench"] = kb_cmp[(lv, num)]

    per_level = {}
    for lv in args.levels:
        per_level[f"level{lv}"] = {
            "entries": sum(1 for e in in_levels if e[0] == lv),
            "written": sum(1 for r in kept if r["level"] == lv),
            "skipped": sum(1 for r in skipped if r["level"] == lv),
        }
    sources = {"leaderboard": lb.describe()}
    if kb is not None:
        sources["kernelbench"] = kb.describe()
    differ = sum(1 for v in kb_cmp.values() if v is False)
    absent = sum(1 for v in kb_cmp.values() if v is None)
    write_manifest(out, {
        "schema": SCHEMA, "mode": "leaderboard", "levels": args.levels,
        "index": "docs/assets/data.json" if args.index == "data" else "docs/assets/raw_data.json",
        "problems_from": args.problems, "limit": args.limit,
        "sources": sources,
        "counts": {"index_entries": len(all_entries), "in_levels": len(in_levels),
                   "pairs": len(kept), "problems": len(written_problems),
                   "skipped": len(skipped), "dropped_by_limit": dropped,
                   "per_level": per_level},
        "pairs": kept,
        "skipped": skipped,
    })

    if not kept and args.limit != 0:
        print(f"make_corpus: warning: no pairs for level(s) {','.join(map(str, args.levels))}",
              file=sys.stderr)
    reasons = {}
    for r in skipped:
        why = r["reason"].split(" ", 3)[:3]
        reasons[" ".join(why)] = reasons.get(" ".join(why), 0) + 1
    why = "; ".join(f"{n} {k}" for k, n in sorted(reasons.items())) or "none"
    cmp_note = ""
    if kb_cmp:
        cmp_note = (f"; {differ} of {len(kb_cmp)} problems differ from KernelBench "
                    f"{kb.commit[:12] if kb.commit else kb.rev}"
                    + (f", {absent} absent there" if absent else ""))
    lim = f"; {dropped} dropped by --limit {args.limit}" if args.limit is not None else ""
    print(f"leaderboard: wrote {len(kept)} pairs over {len(written_problems)} problems "
          f"(levels {','.join(map(str, args.levels))}; {len(in_levels)} of {len(all_entries)} "
          f"{args.index} entries in those levels; skipped {len(skipped)}: {why}{lim}; "
          f"problems from {args.problems}{cmp_note}) -> {out}")
    return 0


# ---------------------------------------------------------------------------------------------
# subset


def corpus_keys(src):
    """(key, files to copy) for every candidate of the corpus at src: a pair per solution*.py
    beside a problem.py, else (a --self corpus) every .py file outside such folders."""
    out = []
    for path in sorted(src.rglob("*.py")):
        rel = path.relative_to(src)
        if (path.parent / "problem.py").is_file():
            if path.name.startswith("solution"):
                out.append((rel.as_posix(), [rel.parent / "problem.py", rel]))
        else:
            out.append((rel.as_posix(), [rel]))
    return out


def cmd_subset(args):
    src = Path(args.src)
    if not src.is_dir():
        die(f"--from {src}: not a directory")
    try:
        match = [re.compile(r) for r in args.match]
        exclude = [re.compile(r) for r in args.exclude]
    except re.error as e:
        die(f"bad regex: {e}")
    listed = set()
    for f in args.keys:
        try:
            listed |= {line.strip() for line in Path(f).read_text().splitlines() if line.strip()}
        except OSError as e:
            die(f"--keys {f}: {e.strerror}", 1)
    if not (match or exclude or listed):
        die("subset: say which keys: --match, --exclude or --keys")
    everything = corpus_keys(src)
    if not everything:
        die(f"--from {src}: no candidates (no solution*.py beside a problem.py, no .py file)")
    taken = [(k, files) for k, files in everything
             if (not (match or listed) or k in listed or any(r.search(k) for r in match))
             and not any(r.search(k) for r in exclude)]
    unknown = sorted(listed - {k for k, _ in everything})
    if unknown:
        die(f"--keys names {len(unknown)} key(s) not in {src}, e.g. {unknown[0]!r}")
    if not taken:
        die("no key of the corpus is selected")
    out = prepare_out(args.out, args.force)
    copied = set()
    for _, files in taken:
        for rel in files:
            if rel not in copied:
                write_file(out / rel, (src / rel).read_bytes())
                copied.add(rel)
    write_manifest(out, {"schema": SCHEMA, "mode": "subset", "from": str(src), "match": args.match,
                         "exclude": args.exclude, "keys_files": args.keys,
                         "counts": {"from": len(everything), "taken": len(taken)},
                         "keys": [k for k, _ in taken]})
    print(f"subset: {len(taken)} of {len(everything)} candidates of {src} -> {out}")
    return 0


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter,
                                 epilog="See the module docstring (head -60 make_corpus.py).")
    sub = ap.add_subparsers(dest="cmd", required=True)

    p = sub.add_parser("problems", help="KernelBench problems, one file each (for --self)")
    p.add_argument("--kernelbench-repo", required=True, metavar="DIR")
    p.add_argument("--kernelbench-rev", metavar="REV",
                   help="read KernelBench at this git revision (default: the work tree if "
                        "present, else HEAD)")
    p.add_argument("--levels", type=parse_levels, default=[1, 2, 3], metavar="1,2,3")
    p.add_argument("--out", required=True, metavar="OUT")
    p.add_argument("--force", action="store_true", help="empty a non-empty OUT first")
    p.set_defaults(func=cmd_problems)

    q = sub.add_parser("leaderboard", help="leaderboard solutions paired with their problems")
    q.add_argument("--leaderboard-repo", required=True, metavar="DIR")
    q.add_argument("--leaderboard-rev", metavar="REV",
                   help="read the leaderboard at this git revision (default: work tree or HEAD)")
    q.add_argument("--kernelbench-repo", metavar="DIR",
                   help="needed for --problems kernelbench; otherwise used only to record "
                        "whether each problem matches KernelBench")
    q.add_argument("--kernelbench-rev", metavar="REV")
    q.add_argument("--problems", choices=("leaderboard", "kernelbench"), default="leaderboard",
                   help="where problem.py comes from (default: the leaderboard's own copy)")
    q.add_argument("--index", choices=("data", "raw"), default="data",
                   help="data: data.json, the page's top-5 per problem (default); "
                        "raw: raw_data.json, every entry")
    q.add_argument("--levels", type=parse_levels, default=[1, 2, 3], metavar="1,2,3")
    q.add_argument("--limit", type=int, metavar="N",
                   help="keep the first N pairs by (level, problem number, model, hash)")
    q.add_argument("--out", required=True, metavar="OUT")
    q.add_argument("--force", action="store_true", help="empty a non-empty OUT first")
    q.set_defaults(func=cmd_leaderboard)

    u = sub.add_parser("subset", help="some of a corpus's candidates, by key")
    u.add_argument("--from", dest="src", required=True, metavar="DIR")
    u.add_argument("--match", action="append", default=[], metavar="RE", help="take keys matching RE (any)")
    u.add_argument("--exclude", action="append", default=[], metavar="RE", help="leave keys matching RE (any)")
    u.add_argument("--keys", action="append", default=[], metavar="FILE", help="take the keys listed, one a line")
    u.add_argument("--out", required=True, metavar="OUT")
    u.add_argument("--force", action="store_true", help="empty a non-empty OUT first")
    u.set_defaults(func=cmd_subset)

    args = ap.parse_args(argv)
    return args.func(args)


if __name__ == "__main__":
    sys.exit(main())
