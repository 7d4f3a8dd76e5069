"""Honest timing (issue 22 item 2, docs/timing.md): `kcv time`, timing=True in kcv.verify_kernelbench
and kcv.Session, on the controls in controls/torch/timing/.

  - an ordinary correct kernel is timed, with sane numbers (order statistics in order, a speedup
    near 1 against the same matmul, the clock and device noted);
  - a result-caching kernel never reaches timing: it fails stateless first, and the timing section
    says why it was not timed;
  - an output that computes its values when read (a tensor subclass) passes numerics but is not
    timed: only plain torch.Tensor outputs are;
  - cpu: a solution that returns before its work is done (a thread of its own, joined at the next
    call) looks many times faster timed to its return; kcv's timer waits for its threads, and the
    speedup vanishes;
  - cuda (skipped, said so, without a GPU): KernelBench's side-stream kernel, the same way with
    torch.cuda.synchronize().

Run by ctest (python.kcv_timing) with PYTHONPATH=<build>/python and KCV_EXE=<build>/kcv.
"""

import json
import os
import subprocess
import sys
import tempfile
import unittest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
TIMING = os.path.join(ROOT, "controls", "torch", "timing")
PROBLEM = os.path.join(TIMING, "problem.py")

import kcv  # noqa: E402  (PYTHONPATH=<build>/python)


def kcv_python():
    return os.environ.get("KCV_PYTHON") or ("/usr/bin/python3" if os.path.exists("/usr/bin/python3") else "python3")


def probe(code):
    try:
        return subprocess.run([kcv_python(), "-c", code], capture_output=True, timeout=120).returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        return False


HAS_TORCH = probe("import torch")
HAS_CUDA = HAS_TORCH and probe("import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)")


def sol(name):
    return os.path.join(TIMING, f"solution_{name}.py")


class Sane:
    def assert_sane(self, t, reps):
        self.assertTrue(t["timed"], t)
        for name in ("candidate", "reference_eager"):
            m = t[name]
            self.assertEqual(m["reps"], reps)
            self.assertGreater(m["min_ms"], 0)
            self.assertLessEqual(m["min_ms"], m["p10_ms"])
            self.assertLessEqual(m["p10_ms"], m["median_ms"])
            self.assertLessEqual(m["median_ms"], m["p90_ms"])
            self.assertLessEqual(m["p90_ms"], m["max_ms"])
            self.assertLess(m["max_ms"], 60_000)
        self.assertAlmostEqual(t["speedup"], t["reference_eager"]["median_ms"] / t["candidate"]["median_ms"], places=9)
        self.assertIn("reason", t["compiled"])
        if t["compiled"]["ok"]:
            self.assertIsNotNone(t["reference_compiled"])
            self.assertIsNotNone(t["speedup_vs_compiled"])
        else:  # said, with its reason (torch 1.13 has no torch.compile)
            self.assertIsNone(t["reference_compiled"])
            self.assertTrue(t["compiled"]["reason"])
        self.assertTrue(t["device"]["name"])
        self.assertTrue(t["device"]["clock"])
        self.assertIn("fresh set per repetition", t["inputs"])
        self.assertGreaterEqual(t["flush_bytes"], 64 << 20)


@unittest.skipUnless(HAS_TORCH, f"SKIP: no torch in kcv's Python ({kcv_python()})")
class CpuTiming(unittest.TestCase, Sane):
    def test_an_ordinary_kernel_is_timed_with_sane_numbers(self):
        r = kcv.verify_kernelbench(PROBLEM, sol("ok"), backend="cpu", gates=["numerics"], seed=11,
                                   python=kcv_python(), timing=True, timing_reps=20)
        self.assertEqual(r.verdict, "PASS", r.to_json())
        t = r.timing
        self.assert_sane(t, 20)
        self.assertIn("CLOCK_MONOTONIC", t["device"]["clock"])
        # The same matmul both sides: within a factor the shared 2-core test machine's noise allows.
        self.assertGreater(r.speedup, 0.33, t)
        self.assertLess(r.speedup, 3.0, t)
        self.assertEqual(json.loads(r.to_json())["timing"], t)

    def test_a_result_caching_kernel_never_reaches_timing(self):
        r = kcv.verify_kernelbench(PROBLEM, sol("caches_result"), backend="cpu", gates=["numerics", "stateless"],
                                   seed=11, python=kcv_python(), timing=True, timing_reps=20)
        self.assertEqual(r.verdict, "FAIL", r.to_json())
        self.assertIn("stateless", r.failing)
        self.assertFalse(r.timing["timed"], r.timing)
        self.assertIn("stateless", r.timing["reason"])
        self.assertNotIn("candidate", r.timing)
        self.assertIsNone(r.speedup)

    def test_a_lazy_output_that_computes_when_read_is_not_timed(self):
        # It passes numerics (the gates read its outputs, which computes them); timed to its
        # return it would cost nothing. Only plain torch.Tensor outputs are timed.
        r = kcv.verify_kernelbench(PROBLEM, sol("lazy_output"), backend="cpu", gates=["numerics"], seed=11,
                                   python=kcv_python(), timing=True, timing_reps=20)
        self.assertEqual(r.verdict, "PASS", r.to_json())
        self.assertFalse(r.timing["timed"], r.timing)
        self.assertIn("not a plain torch.Tensor", r.timing["reason"])

    def test_work_left_on_a_thread_of_its_own_is_counted(self):
        r = kcv.verify_kernelbench(PROBLEM, sol("side_thread"), backend="cpu", gates=["inputs_intact"], seed=11,
                                   python=kcv_python(), timing=True, timing_reps=20)
        self.assertEqual(r.verdict, "PASS", r.to_json())
        t = r.timing
        self.assert_sane(t, 20)
        # Timed to its return it looks several times faster; counted until its thread is done, not.
        self.assertGreater(t["returned_speedup"], 3.0, t)
        self.assertLess(t["speedup"], 2.0, t)
        self.assertGreater(t["candidate"]["median_ms"], 2 * t["candidate"]["returned_median_ms"], t)

    def test_kcv_time_cli_exit_status_and_json(self):
        exe = os.environ.get("KCV_EXE", os.path.join(ROOT, "build", "kcv"))
        with tempfile.TemporaryDirectory() as d:
            out = os.path.join(d, "r.json")
            p = subprocess.run([exe, "time", PROBLEM, sol("caches_result"), "--backend", "cpu", "--gates",
                                "numerics,stateless", "--reps", "20", "--seed", "5", "--python", kcv_python(),
                                "--json", out], capture_output=True, text=True, timeout=900)
            self.assertEqual(p.returncode, 1, p.stdout + p.stderr)
            self.assertIn("timing: not timed", p.stdout)
            self.assertFalse(json.load(open(out))["timing"]["timed"])
            p = subprocess.run([exe, "time", PROBLEM, sol("ok"), "--backend", "cpu", "--reps", "5"],
                               capture_output=True, text=True, timeout=300)
            self.assertEqual(p.returncode, 2, p.stdout + p.stderr)
            self.assertIn("--reps must be 20..1000", p.stderr)

    def test_timing_needs_a_kernelbench_pair(self):
        add = os.path.join(ROOT, "controls", "cpu", "add", "add_ok.c")
        with self.assertRaisesRegex(kcv.SetupError, "timing needs a KernelBench pair"):
            kcv._kcv.verify_json({"op": "add", "candidate": add, "backend": "cpu", "timing": True})

    def test_session_verify_many_in_parallel_times_only_what_passed(self):
        with kcv.Session(PROBLEM, backend="cpu", python=kcv_python(), seed=13) as s:
            rs = s.verify_many([sol("caches_result"), sol("ok"), "not python(\n"], jobs=3,
                               gates=["numerics", "stateless"], timing=True, timing_reps=20)
        self.assertEqual(len(rs), 3)
        self.assertNotIsInstance(rs[0], kcv.SetupError, str(rs[0]))
        self.assertNotIsInstance(rs[1], kcv.SetupError, str(rs[1]))
        self.assertEqual(rs[0].verdict, "FAIL")
        self.assertFalse(rs[0].timing["timed"])
        self.assertEqual(rs[1].verdict, "PASS", rs[1].to_json())
        self.assert_sane(rs[1].timing, 20)
        self.assertTrue(isinstance(rs[2], kcv.SetupError) or rs[2].verdict != "PASS")
        with self.assertRaises(kcv.SetupError):
            kcv.Session(PROBLEM, backend="cpu", python=kcv_python()).verify_many([sol("ok")], jobs=0)


@unittest.skipUnless(HAS_CUDA, f"SKIP: no CUDA device for torch in kcv's Python ({kcv_python()})")
class CudaTiming(unittest.TestCase, Sane):
    def test_a_side_stream_kernels_speedup_vanishes_under_device_sync(self):
        problem = os.path.join(TIMING, "problem_cuda.py")
        r = kcv.verify_kernelbench(problem, sol("cuda_side_stream"), backend="cuda", gates=["numerics"], seed=11,
                                   python=kcv_python(), timing=True, timing_reps=30)
        self.assertEqual(r.verdict, "PASS", r.to_json())
        t = r.timing
        self.assert_sane(t, 30)
        self.assertGreater(t["returned_speedup"], 3.0, t)
        self.assertLess(t["speedup"], 1.5, t)

    def test_an_ordinary_cuda_kernel_is_timed(self):
        problem = os.path.join(TIMING, "problem_cuda.py")
        r = kcv.verify_kernelbench(problem, sol("ok"), backend="cuda", gates=["numerics"], seed=11,
                                   python=kcv_python(), timing=True, timing_reps=30)
        self.assert_sane(r.timing, 30)
        self.assertIn("cuda events", r.timing["device"]["clock"])
        self.assertGreater(r.speedup, 0.7, r.timing)
        self.assertLess(r.speedup, 1.4, r.timing)


if __name__ == "__main__":
    if not HAS_TORCH:
        print(f"SKIP: no torch in kcv's Python ({kcv_python()})")
        sys.exit(0)
    if not HAS_CUDA:
        print(f"note: the cuda timing controls are skipped: no CUDA device for torch in {kcv_python()}")
    unittest.main(verbosity=2)
