#!/usr/bin/env python3
"""bench/kernelbench/make_corpus.py subset: a corpus of some of another's candidates, by key (the
path kcv's journal names them by): pairs with their problem.py, --self problem files alone;
--match and --keys add, --exclude removes; unknown keys, no selector, or nothing selected are
refused (exit 2) and nothing is written."""
import json, subprocess, sys, tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(Path(__file__).resolve().parent))
from script_check import checker, finish  # noqa: E402
SCRIPT = ROOT / "bench/kernelbench/make_corpus.py"


def run(*args):
    return subprocess.run([sys.executable, str(SCRIPT), "subset", *map(str, args)], capture_output=True, text=True)


def files(d):
    return sorted(p.relative_to(d).as_posix() for p in Path(d).rglob("*.py"))


def main():
    failures, check = checker()
    with tempfile.TemporaryDirectory() as t:
        t = Path(t)
        pairs, selfc = t / "pairs", t / "self"
        corpus = {"level1/14_Upper": ["solution_a_1.py", "solution_b_2.py"], "level1/19_ReLU": ["solution_a_3.py"]}
        for prob, sols in corpus.items():
            (pairs / prob).mkdir(parents=True)
            (pairs / prob / "problem.py").write_text(f"# {prob}\n")
            for s in sols:
                (pairs / prob / s).write_text(f"# {s}\n")
        (selfc / "level1").mkdir(parents=True)
        for stem in ["22_Tanh", "23_Softmax", "97_SDPA"]:
            (selfc / "level1" / f"{stem}.py").write_text(f"# {stem}\n")

        r = run("--from", pairs, "--match", "^level1/14_", "--exclude", "_b_", "--out", t / "o1")
        check(r.returncode == 0, f"pairs: exit {r.returncode} {r.stderr}")
        check(files(t / "o1") == ["level1/14_Upper/problem.py", "level1/14_Upper/solution_a_1.py"],
              f"pairs: {files(t / 'o1')}")
        m = json.loads((t / "o1/manifest.json").read_text())
        check(m["keys"] == ["level1/14_Upper/solution_a_1.py"] and m["counts"] == {"from": 3, "taken": 1},
              f"manifest {m}")
        check((t / "o1/level1/14_Upper/problem.py").read_text() == "# level1/14_Upper\n", "problem.py copied as it is")

        keys = t / "keys.txt"
        keys.write_text("level1/23_Softmax.py\n\nlevel1/97_SDPA.py\n")
        r = run("--from", selfc, "--keys", keys, "--out", t / "o2")
        check(r.returncode == 0 and files(t / "o2") == ["level1/23_Softmax.py", "level1/97_SDPA.py"],
              f"self: {r.stderr} {files(t / 'o2')}")
        r = run("--from", selfc, "--exclude", "SDPA", "--out", t / "o3")
        check(r.returncode == 0 and files(t / "o3") == ["level1/22_Tanh.py", "level1/23_Softmax.py"],
              f"exclude alone: {files(t / 'o3')}")

        keys.write_text("level1/99_Nothing.py\n")
        refused = [(["--keys", keys], "unknown key"), ([], "no selector"),
                   (["--match", "^level9/"], "nothing selected")]
        for args, what in refused:
            r = run("--from", selfc, *args, "--out", t / "bad")
            check(r.returncode == 2 and "make_corpus:" in r.stderr and not (t / "bad").exists(),
                  f"{what}: exit {r.returncode}, stderr {r.stderr!r}, wrote {(t / 'bad').exists()}")
        r = run("--from", selfc, "--match", "x", "--out", t / "o2")
        check(r.returncode == 2 and "not empty" in r.stderr, f"non-empty OUT: exit {r.returncode} {r.stderr!r}")
    return finish("make_corpus subset", failures)


if __name__ == "__main__":
    sys.exit(main())
