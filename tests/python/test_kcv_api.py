"""kcv as a Python library (issue 22 item 1): kcv.verify and kcv.verify_kernelbench on the project's
controls, from paths and from source strings; the typed Result; SetupError for bad input.

Run by ctest (python.kcv_api) with PYTHONPATH=<build>/python, where CMake lays out the package and
its extension. The KernelBench part needs torch in kcv's Python ($KCV_PYTHON or /usr/bin/python3)
and says SKIP without it.
"""

import json
import os
import subprocess
import sys
import tempfile
import unittest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
ADD = os.path.join(ROOT, "controls", "cpu", "add")
ROWSUM = os.path.join(ROOT, "controls", "torch", "rowsum")

import kcv  # noqa: E402  (PYTHONPATH=<build>/python)

FAST = ["numerics", "shapes", "nonfinite"]


def kcv_python():
    return os.environ.get("KCV_PYTHON") or ("/usr/bin/python3" if os.path.exists("/usr/bin/python3") else "python3")


def has_torch():
    try:
        return subprocess.run([kcv_python(), "-c", "import torch"], capture_output=True, timeout=120).returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        return False


class AbiCandidates(unittest.TestCase):
    def test_a_correct_candidate_passes_from_its_path(self):
        r = kcv.verify("add", os.path.join(ADD, "add_ok.c"), backend="cpu", gates=FAST, seed=7)
        self.assertEqual(r.verdict, "PASS", r.to_json())
        self.assertTrue(r.passed)
        self.assertEqual(r.failing, [])
        self.assertEqual(r.seed, 7)
        for g in FAST:
            self.assertEqual(r.gates[g].verdict, "PASS")
            self.assertGreater(r.gates[g].cases, 0)
        # Not selected: listed, not run, not a failure.
        self.assertNotIn("layout", r.failing)
        doc = json.loads(r.to_json())
        self.assertEqual(doc["schema"], "kcv.report/1")
        self.assertEqual(doc["verdict"], "PASS")

    def test_a_candidate_that_drops_the_tail_fails_shapes_with_evidence(self):
        r = kcv.verify("add", os.path.join(ADD, "add_drops_tail.c"), backend="cpu", gates=FAST, seed=7)
        self.assertEqual(r.verdict, "FAIL")
        self.assertIn("shapes", r.failing)
        g = r.gates["shapes"]
        self.assertFalse(g.passed)
        self.assertTrue(g.evidence)
        self.assertIsNotNone(g.failing_case)
        self.assertEqual(r.replay_command("r.json", "shapes"), f"kcv replay r.json --gate shapes --case {g.failing_case}")
        passing = [x for x in r.gates.values() if x.failing_case is None]
        self.assertTrue(passing)
        with self.assertRaises(ValueError):
            r.replay_command("r.json", passing[0].id)

    def test_source_text_is_judged_like_its_file_and_leaves_nothing_behind(self):
        with open(os.path.join(ADD, "add_ok.c")) as f:
            src = f.read()
        before = set(os.listdir(tempfile.gettempdir()))
        r = kcv.verify("add", src, backend="cpu", gates=FAST, seed=7, language="c")
        self.assertEqual(r.verdict, "PASS", r.to_json())
        left = [d for d in set(os.listdir(tempfile.gettempdir())) - before if d.startswith("kcv-src-")]
        self.assertEqual(left, [])
        with open(os.path.join(ADD, "add_drops_tail.c")) as f:
            bad = f.read()
        self.assertEqual(kcv.verify("add", bad, backend="cpu", gates=["shapes"], seed=7, language="c").verdict, "FAIL")

    def test_bad_input_raises_setup_error_with_kcv_message(self):
        with self.assertRaisesRegex(kcv.SetupError, "no_such_op"):
            kcv.verify("no_such_op", os.path.join(ADD, "add_ok.c"))
        with self.assertRaisesRegex(kcv.SetupError, "unknown gate 'numeric'"):
            kcv.verify("add", os.path.join(ADD, "add_ok.c"), gates=["numeric"])
        with self.assertRaisesRegex(kcv.SetupError, "no such file"):
            kcv.verify("add", "does_not_exist.c")
        with self.assertRaisesRegex(kcv.SetupError, "language"):
            kcv.verify("add", "int x;\n", language="fortran")
        # A candidate that does not build: kcv's one line, not a crash of the caller.
        with self.assertRaises(kcv.SetupError):
            kcv.verify("add", "this is not C\n", language="c", gates=["numerics"])

    def test_version(self):
        self.assertRegex(kcv.__version__, r"^\d+\.\d+\.\d+")
        self.assertEqual(len(kcv.GATES), 12)


@unittest.skipUnless(has_torch(), f"SKIP: no torch in kcv's Python ({kcv_python()})")
class KernelBench(unittest.TestCase):
    def test_rowsum_pair_from_source_strings(self):
        with open(os.path.join(ROWSUM, "problem.py")) as f:
            problem = f.read()
        with open(os.path.join(ROWSUM, "solution_ok.py")) as f:
            ok = f.read()
        r = kcv.verify_kernelbench(problem, ok, backend="cpu", gates=["numerics", "layout"], seed=3,
                                   python=kcv_python())
        self.assertEqual(r.verdict, "PASS", r.to_json())
        bad = os.path.join(ROWSUM, "solution_assumes_contiguous.py")
        r = kcv.verify_kernelbench(os.path.join(ROWSUM, "problem.py"), bad, backend="cpu",
                                   gates=["numerics", "layout"], seed=3, python=kcv_python())
        self.assertEqual(r.verdict, "FAIL")
        self.assertEqual(r.failing, ["layout"])

    def test_session_serves_the_next_candidates_references_from_its_cache(self):
        problem = os.path.join(ROWSUM, "problem.py")
        with kcv.Session(problem, backend="cpu", python=kcv_python(), seed=9) as s:
            self.assertEqual(s.seed, 9)
            first = s.verify(os.path.join(ROWSUM, "solution_ok.py"), gates=["numerics", "layout"])
            computed = s.reference_misses
            self.assertGreater(computed, 0)
            rest = s.verify_many([os.path.join(ROWSUM, "solution_assumes_contiguous.py"),
                                  "this is not python(\n", os.path.join(ROWSUM, "solution_ok.py")],
                                 gates=["numerics", "layout"])
            # Same seed, same cases: nothing computed again, every answer from the cache.
            self.assertEqual(s.reference_misses, computed)
            self.assertGreater(s.reference_hits, 0)
        self.assertEqual(first.verdict, "PASS", first.to_json())
        self.assertEqual(rest[0].verdict, "FAIL")
        self.assertEqual(rest[0].failing, ["layout"])
        self.assertIsInstance(rest[1], (kcv.SetupError, kcv.Result))
        if isinstance(rest[1], kcv.Result):  # a solution that does not import fails, it cannot pass
            self.assertNotEqual(rest[1].verdict, "PASS")
        self.assertEqual(rest[2].verdict, "PASS")
        # The same verdicts as separate verifications with that seed.
        alone = kcv.verify_kernelbench(problem, os.path.join(ROWSUM, "solution_assumes_contiguous.py"), backend="cpu",
                                       gates=["numerics", "layout"], seed=9, python=kcv_python())
        self.assertEqual((alone.verdict, alone.failing), (rest[0].verdict, rest[0].failing))

    def test_session_rotates_its_seed_every_n_candidates(self):
        problem = os.path.join(ROWSUM, "problem.py")
        ok = os.path.join(ROWSUM, "solution_ok.py")
        gates = ["numerics"]
        with kcv.Session(problem, backend="cpu", python=kcv_python(), seed=9, rotate_every=2) as s:
            rs = [s.verify(ok, gates=gates) for _ in range(3)]
            self.assertEqual(s.seeds, [9, kcv.rotated_seed(9, 1)])
            misses_after_rotation = s.reference_misses
        # Candidates 1-2 under seed 9, candidate 3 under the next: recorded in each Result.
        self.assertEqual([r.seed for r in rs], [9, 9, kcv.rotated_seed(9, 1)])
        self.assertNotEqual(kcv.rotated_seed(9, 1), 9)
        self.assertTrue(all(r.verdict == "PASS" for r in rs), [r.to_json() for r in rs])
        # The rotation's cache started over: its first candidate computed its references again.
        with kcv.Session(problem, backend="cpu", python=kcv_python(), seed=9) as s:
            for _ in range(3):
                s.verify(ok, gates=gates)
            never_rotated = s.reference_misses
        self.assertEqual(misses_after_rotation, 2 * never_rotated)
        # Drawn fresh without a seed; bad values are a setup error.
        with kcv.Session(problem, backend="cpu", python=kcv_python(), rotate_every=1) as s:
            a, b = s.verify(ok, gates=gates), s.verify(ok, gates=gates)
        self.assertNotEqual(a.seed, b.seed)
        for bad in (0, -1, 1.5, True):
            with self.assertRaises(kcv.SetupError):
                kcv.Session(problem, backend="cpu", python=kcv_python(), rotate_every=bad)

    def test_session_without_a_problem_is_a_setup_error(self):
        with self.assertRaisesRegex(kcv.SetupError, "no such file"):
            kcv.Session("no_problem_here.py", backend="cpu")


if __name__ == "__main__":
    if not has_torch():  # the ABI half still runs: the test is not reported skipped
        print(f"note: the KernelBench half is skipped: no torch in kcv's Python ({kcv_python()})")
    unittest.main(verbosity=2)
