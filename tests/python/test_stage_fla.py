#!/usr/bin/env python3
"""bench/glr/stage_fla.sh: FLA's tree staged for the device benchmarks with FLA_COMMIT naming its
commit (session 35's run went without it, and the benchmark recorded FLA's commit as None). A staged
tree holds HEAD's files and FLA_COMMIT = '<sha> <commit date>'; a repository without
fla/ops/gla/chunk.py, a directory that is no git repository and an existing destination are refused
(exit 2) and leave nothing behind."""
import subprocess, sys, tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from script_check import finish  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "bench/glr/stage_fla.sh"


def git(repo, *args):
    return subprocess.run(["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@t", *args],
                          capture_output=True, text=True, check=True).stdout.strip()


def stage(git_dir, dest):
    return subprocess.run([str(SCRIPT), str(git_dir), str(dest)], capture_output=True, text=True)


def main():
    fails = []
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        repo = tmp / "fla_repo"
        (repo / "fla/ops/gla").mkdir(parents=True)
        (repo / "fla/ops/gla/chunk.py").write_text("def chunk_gla(): pass\n")
        (repo / "README.md").write_text("fla\n")
        git(repo, "init", "-q")
        git(repo, "add", "-A")
        git(repo, "commit", "-qm", "one")
        sha = git(repo, "rev-parse", "HEAD")
        dest = tmp / "x/fla"
        r = stage(repo / ".git", dest)
        if r.returncode != 0:
            fails.append(f"a FLA repository: rc {r.returncode}: {r.stderr.strip()}")
        else:
            commit = (dest / "FLA_COMMIT").read_text().split()
            if len(commit) != 2 or commit[0] != sha:
                fails.append(f"FLA_COMMIT {commit} does not name {sha} and its date")
            if (dest / "fla/ops/gla/chunk.py").read_text() != "def chunk_gla(): pass\n":
                fails.append("the staged tree lacks HEAD's fla/ops/gla/chunk.py")
            if (dest / ".git").exists():
                fails.append("the staged tree carries git metadata")
        again = stage(repo / ".git", dest)
        if again.returncode != 2 or "exists" not in again.stderr:
            fails.append(f"an existing destination: rc {again.returncode}")
        other = tmp / "other"
        other.mkdir()
        (other / "a.py").write_text("")
        git(other, "init", "-q")
        git(other, "add", "-A")
        git(other, "commit", "-qm", "one")
        for n, (what, g) in enumerate((("a repository without fla/ops/gla/chunk.py", other / ".git"),
                                       ("a directory that is no git repository", tmp / "x"))):
            d = tmp / f"refused_{n}"
            r = stage(g, d)
            if r.returncode != 2:
                fails.append(f"{what}: rc {r.returncode}")
            if d.exists() or list(tmp.glob(d.name + ".staging*")):
                fails.append(f"{what}: left {d} behind")
    return finish("scripts.stage_fla", fails)


if __name__ == "__main__":
    sys.exit(main())
