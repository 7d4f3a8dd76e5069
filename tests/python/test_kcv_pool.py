"""The session-wide pool (issue 22; docs/architecture.md "The session-wide pool"): a kcv.Session
starts the next candidate's worker set (main + standby workers: sandboxed, torch imported, no
candidate read) while the current one is verified. Checked here, on the rowsum controls (cpu):
  - the next candidate's main worker was started before verify() was called, and had loaded no
    solution and made no call before it (a solution that reports its process's age and history);
    without the pool (KCV_POOL=0) its main worker is a new one;
  - verdicts, cases and evidence equal separate verifications';
  - a pooled worker whose spawn would differ (the solution in another directory) is not used,
    and said so; one that died before its candidate came is reported and replaced;
  - no process of the session's is left after close(), nor after the session is dropped.

Run by ctest (python.kcv_pool) with PYTHONPATH=<build>/python. Needs torch in kcv's Python.
"""

import gc
import os
import signal
import sys
import tempfile
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from test_kcv_api import ROWSUM, has_torch, kcv_python  # noqa: E402
from test_kcv_standby import Env, gate_summary  # noqa: E402

import kcv  # noqa: E402  (PYTHONPATH=<build>/python)

PROBLEM = os.path.join(ROWSUM, "problem.py")
OK = os.path.join(ROWSUM, "solution_ok.py")
WAIT_S = 14.0  # between a verification's end and the next verify(): longer than any worker start here

# The output's value (the input is ignored) says what the process had seen when the solution was
# loaded: 1000 when the process was then at least 10 s old (started before verify() was called:
# the test waits WAIT_S first; a worker started by verify() loads within seconds, even on a loaded
# CI machine), + 100 x how often a solution was loaded in this process, + 1 when a call was made
# before (the numerics gate's first case makes one call per seed: only a worker used before sees
# more).
REPORTS_ITS_AGE = '''
import builtins, os, torch, torch.nn as nn
def _age():
    with open("/proc/self/stat") as f:
        start = int(f.read().rsplit(")", 1)[1].split()[19]) / os.sysconf("SC_CLK_TCK")
    with open("/proc/uptime") as f:
        return float(f.read().split()[0]) - start
AGE = _age()
builtins._kcv_test_loads = getattr(builtins, "_kcv_test_loads", 0) + 1
builtins._kcv_test_calls = getattr(builtins, "_kcv_test_calls", 0)

class ModelNew(nn.Module):
    def forward(self, x):
        first = builtins._kcv_test_calls == 0
        builtins._kcv_test_calls += 1
        code = (1000 if AGE >= 10.0 else 0) + 100 * builtins._kcv_test_loads + (0 if first else 1)
        return torch.zeros(x.shape[0], x.shape[1]) + float(code)
'''


def descendants():
    """Processes below this one (pid -> cmdline), read from /proc."""
    parent = {}
    for p in os.listdir("/proc"):
        if not p.isdigit():
            continue
        try:
            with open(f"/proc/{p}/stat") as f:
                parent[int(p)] = int(f.read().rsplit(")", 1)[1].split()[1])
        except OSError:
            pass
    out = {}
    for pid in parent:
        q = pid
        while q in parent and q > 1:
            q = parent[q]
            if q == os.getpid():
                try:
                    with open(f"/proc/{pid}/cmdline", "rb") as f:
                        out[pid] = f.read().replace(b"\0", b" ").decode(errors="replace")
                except OSError:
                    out[pid] = "?"
                break
    return out


def torch_workers():
    return {pid: c for pid, c in descendants().items() if "kcv_torch_worker.py" in c}


def session(seed):
    return kcv.Session(PROBLEM, backend="cpu", python=kcv_python(), seed=seed)


@unittest.skipUnless(has_torch(), f"SKIP: no torch in kcv's Python ({kcv_python()})")
class Pool(unittest.TestCase):
    def numerics_value(self, r):
        g = r.gates["numerics"]
        self.assertEqual(g.verdict, "FAIL", r.to_json())
        return g.evidence.split(" got ", 1)[1].split()[0]

    def test_the_next_candidates_main_worker_was_started_before_verify_and_never_used(self):
        with tempfile.TemporaryDirectory() as d:
            sol = os.path.join(d, "solution_reports_its_age.py")
            with open(sol, "w") as f:
                f.write(REPORTS_ITS_AGE)
            got = {}
            for pool in ("1", "0"):
                with Env(KCV_POOL=pool, KCV_THREADS="2"), session(23) as s:
                    first = s.verify(sol, gates=["numerics"])
                    time.sleep(WAIT_S)
                    waiting = torch_workers()
                    second = s.verify(sol, gates=["numerics"])
                got[pool] = (first, second, waiting)
        first, second, waiting = got["1"]
        # One worker waits between the candidates (numerics needs the main one only) ...
        self.assertEqual(len(waiting), 1, waiting)
        self.assertEqual(first.report["kernelbench"]["pool"], {"offered": 0, "taken": 0, "used": 0})
        pool = second.report["kernelbench"]["pool"]
        self.assertEqual((pool["offered"], pool["taken"], pool["used"]), (1, 1, 1), second.to_json())
        self.assertGreaterEqual(pool["main_started_s_before"], WAIT_S)
        # ... and it is the one that loaded the second candidate: old, one load, no call before.
        self.assertEqual(self.numerics_value(first), "100")
        self.assertEqual(self.numerics_value(second), "1100")
        # Without the pool the second candidate's main worker is started by verify().
        first0, second0, waiting0 = got["0"]
        self.assertEqual(waiting0, {})
        self.assertEqual(self.numerics_value(second0), "100")
        self.assertEqual(second0.report["kernelbench"]["pool"], {"offered": 0, "taken": 0, "used": 0})

    def test_a_session_with_the_pool_gives_what_separate_verifications_give(self):
        sols = [os.path.join(ROWSUM, s) for s in
                ("solution_mutates_input.py", "solution_assumes_contiguous.py", "solution_ok.py", "solution_ok.py")]
        with Env(KCV_POOL="1", KCV_THREADS="2"):
            with session(29) as s:
                pooled = [s.verify(sol) for sol in sols]
            separate = [kcv.verify_kernelbench(PROBLEM, sol, backend="cpu", seed=29, python=kcv_python())
                        for sol in sols]
        for sol, a, b in zip(sols, pooled, separate):
            self.assertEqual((a.verdict, gate_summary(a)), (b.verdict, gate_summary(b)), sol)
            self.assertNotIn("pool", b.report["kernelbench"])  # kcv verify has none
        self.assertEqual([r.verdict for r in pooled], ["FAIL", "FAIL", "PASS", "PASS"])
        # The 2nd..Nth: all four workers (main, 1 and 3 threads, ASan) came from the pool and ran.
        for r in pooled[1:]:
            kb = r.report["kernelbench"]
            self.assertEqual(kb["pool"]["offered"], 4, r.to_json())
            self.assertEqual((kb["pool"]["taken"], kb["pool"]["used"]), (4, 4), r.to_json())
            self.assertEqual(kb["standby_workers"], {"started": 0, "used": 0})

    def test_a_pooled_worker_whose_spawn_would_differ_is_not_used(self):
        with tempfile.TemporaryDirectory() as d:
            os.chmod(d, 0o755)
            elsewhere = os.path.join(d, "solution_ok.py")  # same solution, another directory
            with open(OK) as f, open(elsewhere, "w") as g:
                g.write(f.read())
            with Env(KCV_POOL="1", KCV_THREADS="2"), session(31) as s:
                a = s.verify(OK, gates=["numerics", "determinism"])
                b = s.verify(elsewhere, gates=["numerics", "determinism"])
                # Another default thread count: the main worker's environment differs (OMP_NUM_THREADS).
                with Env(KCV_THREADS="1"):
                    c = s.verify(elsewhere, gates=["numerics", "determinism"])
        for r in (a, b, c):
            self.assertEqual(r.verdict, "PASS", r.to_json())
        pb = b.report["kernelbench"]["pool"]
        self.assertEqual((pb["offered"], pb["taken"], pb["used"]), (3, 0, 0), b.to_json())
        self.assertTrue(all("its spawn differs in keep_dirs" in n for n in pb["not_used"]), pb)
        self.assertEqual(b.report["kernelbench"]["standby_workers"], {"started": 2, "used": 2})
        # KCV_THREADS shapes the main worker only: the 1- and 3-thread ones still match and run.
        pc = c.report["kernelbench"]["pool"]
        self.assertEqual((pc["offered"], pc["taken"], pc["used"]), (3, 2, 2), c.to_json())
        self.assertEqual(pc["not_used"], ["threads 0: its spawn differs in env"])

    def test_a_pooled_worker_that_died_is_reported_and_replaced(self):
        with Env(KCV_POOL="1", KCV_THREADS="2"), session(37) as s:
            a = s.verify(OK, gates=["numerics", "determinism"])
            time.sleep(WAIT_S)
            waiting = torch_workers()
            self.assertEqual(len(waiting), 3, waiting)
            for pid in waiting:
                os.kill(pid, signal.SIGKILL)
            time.sleep(0.5)
            b = s.verify(OK, gates=["numerics", "determinism"])
        self.assertEqual((a.verdict, gate_summary(a)), (b.verdict, gate_summary(b)))
        p = b.report["kernelbench"]["pool"]
        self.assertEqual(p["used"], 0, b.to_json())
        self.assertEqual(len(p["not_used"]), 3, p)
        self.assertTrue(all("it ended" in n or "it was gone" in n for n in p["not_used"]), p)

    def test_no_process_is_left_after_close_or_when_the_session_is_dropped(self):
        before = descendants()
        self.assertEqual(before, {})
        with Env(KCV_POOL="1", KCV_THREADS="2"):
            s = session(41)
            s.verify(OK, gates=["numerics", "determinism"])
            self.assertEqual(len(torch_workers()), 3)  # the next candidate's set, waiting
            s.close()
            time.sleep(0.5)
            self.assertEqual(descendants(), {})
            s = session(41)
            s.verify(OK, gates=["numerics", "determinism"])
            self.assertEqual(len(torch_workers()), 3)
            del s
            gc.collect()
            time.sleep(0.5)
            self.assertEqual(descendants(), {})
        self.assertEqual([d for d in os.listdir(tempfile.gettempdir()) if d.startswith(f"kcv-{os.getpid()}-")], [])


if __name__ == "__main__":
    unittest.main(verbosity=2)
