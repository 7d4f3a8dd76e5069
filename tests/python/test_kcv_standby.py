"""Standby workers (issue 22; docs/architecture.md "Standby workers"): the torch workers that the
determinism and sanitizer gates need beyond the main one start beside it. Checked here, on the
rowsum controls (cpu):
  - they are started and used (the report's kernelbench.standby_workers), and not with KCV_STANDBY=0;
  - the worker a gate gets is fresh: started with the case's thread count, the solution loaded
    once, no call made before (a solution that reports what its process has seen);
  - verdicts, cases and evidence are the same with and without them, in a kcv.Session and in
    separate verifications, a crash while loading in one configuration included;
  - a standby worker that fails before it is ready is reported (standby_workers.not_used) and its
    batch gets a worker of its own, as without standby.

Run by ctest (python.kcv_standby) with PYTHONPATH=<build>/python. Needs torch in kcv's Python.
"""

import os
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from test_kcv_api import ROWSUM, has_torch, kcv_python  # noqa: E402

import kcv  # noqa: E402  (PYTHONPATH=<build>/python)

PROBLEM = os.path.join(ROWSUM, "problem.py")

# The process's own account, as the output's value (the input is ignored): 1000 x the threads torch
# had when the solution was loaded, + 100 x how often the solution was loaded in this process,
# + 10 when torch's thread count differs from OMP_NUM_THREADS (what kcv starts a worker with),
# + 1 when a call was made in this process before this worker's batch began (a used worker).
# A fresh 1-thread worker gives 1100, the main worker (KCV_THREADS=2) 2100.
REPORTS_ITS_WORKER = '''
import builtins, os, torch, torch.nn as nn
builtins._kcv_test_loads = getattr(builtins, "_kcv_test_loads", 0) + 1
THREADS = torch.get_num_threads()
CALLS = [0]

class ModelNew(nn.Module):
    def forward(self, x):
        CALLS[0] += 1
        code = 1000 * THREADS + 100 * builtins._kcv_test_loads
        code += 10 if str(torch.get_num_threads()) != os.environ.get("OMP_NUM_THREADS") else 0
        # the determinism gate's cases make 5 calls (main worker) and 2 (each thread count)
        code += 1 if CALLS[0] > (5 if THREADS == 2 else 2) else 0
        return torch.zeros(x.shape[0], x.shape[1]) + float(code)
'''

# Loads in the main worker, dies while loading in a worker started with 1 thread.
DIES_WITH_ONE_THREAD = '''
import os, torch, torch.nn as nn
if os.environ.get("OMP_NUM_THREADS") == "1":
    os._exit(7)

class ModelNew(nn.Module):
    def forward(self, x):
        return torch.clamp(x, min=0.0) * 2.0 + x.flip(1).sum(dim=1, keepdim=True)
'''


# An interpreter whose first start with one thread in a verification fails before Python runs
# (a standby worker with standby on), the next ones run /usr/bin/python3's torch. The mark lies in
# the verification's extensions directory, which every worker may write.
FAILS_ONCE_WITH_ONE_THREAD = """#!/bin/sh
if [ "$OMP_NUM_THREADS" = 1 ] && [ -n "$TORCH_EXTENSIONS_DIR" ] && [ ! -e "$TORCH_EXTENSIONS_DIR/.failed-once" ]; then
  mkdir -p "$TORCH_EXTENSIONS_DIR" && : > "$TORCH_EXTENSIONS_DIR/.failed-once" && echo "wrapper: this start fails" >&2
  exit 9
fi
exec %s "$@"
"""


class Env:
    """Sets environment variables for a block (kcv reads them in this process)."""

    def __init__(self, **values):
        self.values, self.saved = values, {}

    def __enter__(self):
        for k, v in self.values.items():
            self.saved[k] = os.environ.get(k)
            os.environ[k] = v

    def __exit__(self, *exc):
        for k, v in self.saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def gate_summary(r):
    return [(g.id, g.verdict, g.cases, g.evidence) for g in r.gates.values()]


def verify(solution, gates, seed, standby):
    with Env(KCV_STANDBY="1" if standby else "0", KCV_THREADS="2"):
        return kcv.verify_kernelbench(PROBLEM, solution, backend="cpu", gates=gates, seed=seed, python=kcv_python())


@unittest.skipUnless(has_torch(), f"SKIP: no torch in kcv's Python ({kcv_python()})")
class Standby(unittest.TestCase):
    def test_the_extra_workers_are_started_beside_the_main_one_and_used(self):
        ok = os.path.join(ROWSUM, "solution_ok.py")
        on = verify(ok, None, 5, True)
        off = verify(ok, None, 5, False)
        # determinism's 1- and 3-thread workers and the sanitizer's ASan worker
        self.assertEqual(on.report["kernelbench"]["standby_workers"], {"started": 3, "used": 3}, on.to_json())
        self.assertEqual(off.report["kernelbench"]["standby_workers"], {"started": 0, "used": 0})
        self.assertEqual((on.verdict, gate_summary(on)), (off.verdict, gate_summary(off)))
        # Only the selected gates' workers.
        only = verify(ok, ["numerics", "determinism"], 5, True)
        self.assertEqual(only.report["kernelbench"]["standby_workers"], {"started": 2, "used": 2})

    def test_the_worker_a_gate_gets_is_fresh(self):
        with tempfile.TemporaryDirectory() as d:
            sol = os.path.join(d, "solution_reports_its_worker.py")
            with open(sol, "w") as f:
                f.write(REPORTS_ITS_WORKER)
            for standby in (True, False):
                r = verify(sol, ["determinism"], 11, standby)
                g = r.gates["determinism"]
                # The thread counts differ, so the gate fails: its evidence says what case 1's
                # worker saw: 1 thread, one load, OMP_NUM_THREADS kept, no call before its batch.
                self.assertEqual(g.verdict, "FAIL", r.to_json())
                self.assertIn("case 1 (1 thread(s)) vs case 0", g.evidence)
                self.assertIn("is 1100, first run gave 2100", g.evidence)
                self.assertEqual(r.report["kernelbench"]["standby_workers"]["used"], 2 if standby else 0)

    def test_a_crash_while_loading_in_one_configuration_reads_as_without_standby(self):
        with tempfile.TemporaryDirectory() as d:
            sol = os.path.join(d, "solution_dies_with_one_thread.py")
            with open(sol, "w") as f:
                f.write(DIES_WITH_ONE_THREAD)
            on = verify(sol, ["numerics", "determinism", "sanitizer"], 13, True)
            off = verify(sol, ["numerics", "determinism", "sanitizer"], 13, False)
        g = on.gates["determinism"]
        self.assertEqual(g.verdict, "CRASH", on.to_json())
        self.assertIn("while loading the candidate", g.evidence)
        self.assertEqual(on.gates["numerics"].verdict, "PASS")
        self.assertEqual(on.gates["sanitizer"].verdict, "PASS")
        self.assertEqual(gate_summary(on), gate_summary(off))

    def test_a_standby_worker_that_fails_before_it_is_ready_leaves_its_batch_a_worker_of_its_own(self):
        with tempfile.TemporaryDirectory() as d:
            os.chmod(d, 0o755)  # the workers' uid runs the interpreter from here
            py = os.path.join(d, "python3")
            with open(py, "w") as f:
                f.write(FAILS_ONCE_WITH_ONE_THREAD % kcv_python())
            os.chmod(py, 0o755)
            with Env(KCV_STANDBY="1", KCV_THREADS="2"):
                r = kcv.verify_kernelbench(PROBLEM, os.path.join(ROWSUM, "solution_ok.py"), backend="cpu",
                                           gates=["numerics", "determinism", "sanitizer"], seed=19, python=py)
        sw = r.report["kernelbench"]["standby_workers"]
        self.assertEqual((sw["started"], sw["used"]), (3, 2), r.to_json())
        self.assertEqual(len(sw["not_used"]), 1, sw)
        self.assertIn("threads 1: it ended before saying idle", sw["not_used"][0])
        # The determinism batch started its own 1-thread worker (the interpreter's second start).
        self.assertEqual(r.verdict, "PASS", r.to_json())
        self.assertEqual(r.gates["determinism"].cases, 3)

    def test_a_session_gives_what_separate_verifications_without_standby_give(self):
        sols = [os.path.join(ROWSUM, s) for s in
                ("solution_mutates_input.py", "solution_assumes_contiguous.py", "solution_ok.py")]
        # KCV_POOL=0: this session's workers are its own standby ones (test_kcv_pool.py: the pool's).
        with Env(KCV_STANDBY="1", KCV_THREADS="2", KCV_POOL="0"):
            with kcv.Session(PROBLEM, backend="cpu", python=kcv_python(), seed=17) as s:
                session = [s.verify(sol) for sol in sols]
        separate = [verify(sol, None, 17, False) for sol in sols]
        for sol, a, b in zip(sols, session, separate):
            self.assertEqual((a.verdict, gate_summary(a)), (b.verdict, gate_summary(b)), sol)
            self.assertEqual(a.report["kernelbench"]["standby_workers"]["used"], 3)
        self.assertEqual([r.verdict for r in session], ["FAIL", "FAIL", "PASS"])
        self.assertIn("inputs_intact", session[0].failing)


if __name__ == "__main__":
    unittest.main(verbosity=2)
