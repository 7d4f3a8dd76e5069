"""kcv as a Python library (issue 22, docs/python-api.md): the 12 gates on a candidate, in process.

    import kcv
    r = kcv.verify("add", "controls/cpu/add/add_ok.c", backend="cpu")
    r = kcv.verify_kernelbench(problem_src, solution_src, backend="cuda")
    r.verdict, r.seed, r.gates["numerics"].evidence, r.to_json()

Candidates and problems are paths or source strings. A source string is written to a private
directory (0700, removed when the call returns) and judged exactly as a file is: the candidate
runs in kcv's worker processes (the sandbox included), never in the caller's process.
Bad usage, a candidate that does not build, or a problem that cannot load raise kcv.SetupError
with kcv's one-line message (the CLI's exit 2).
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from dataclasses import dataclass, field
from typing import Iterable, Optional, Union

# An installed package (setup.py) carries kcv-worker, the candidate headers and the torch adapters
# in _data; a build tree's module finds them where CMake put them (compiled-in paths).
_DATA = os.path.join(os.path.dirname(os.path.abspath(__file__)), "_data")
if os.path.isdir(_DATA):
    os.environ.setdefault("KCV_WORKER", os.path.join(_DATA, "bin", "kcv-worker"))
    os.environ.setdefault("KCV_INCLUDE_DIR", os.path.join(_DATA, "include"))
    os.environ.setdefault("KCV_ADAPTERS_DIR", os.path.join(_DATA, "share", "kcv", "adapters"))

from . import _kcv  # noqa: E402

__all__ = ["verify", "verify_kernelbench", "Session", "Result", "GateResult", "SetupError", "__version__", "GATES"]

SetupError = _kcv.SetupError
__version__ = _kcv.version()

#: The gate ids, in the order kcv runs and reports them (DESIGN §5), from the engine's registry.
GATES = tuple(_kcv.gate_ids())

Source = Union[str, os.PathLike]


@dataclass(frozen=True)
class GateResult:
    """One gate's verdict and its evidence, as the report's "gates" entry gives them."""
    id: str
    verdict: str                 # PASS FAIL CRASH TIMEOUT REFUSED SKIPPED
    cases: int
    seconds: float
    evidence: str
    seed: Optional[int]
    failing_case: Optional[int]  # the first failing case: replay it with `kcv replay REPORT --gate G --case I`
    failing_cases: tuple         # every failing case, as the report lists them

    @property
    def passed(self) -> bool:
        return self.verdict == "PASS"


@dataclass(frozen=True)
class Result:
    """A verification: the overall verdict, every gate, and the kcv.report/1 document behind them."""
    verdict: str                              # PASS only if every selected gate passed
    seed: Optional[int]
    gates: dict = field(repr=False)           # gate id -> GateResult
    report: dict = field(repr=False)          # the kcv.report/1 document

    @property
    def passed(self) -> bool:
        return self.verdict == "PASS"

    @property
    def failing(self) -> list:
        """The ids of the gates that did not pass (gates not selected are not listed)."""
        return [g.id for g in self.gates.values() if g.verdict not in ("PASS", "SKIPPED")]

    @property
    def timing(self) -> Optional[dict]:
        """The report's timing section (timing=True; docs/timing.md), else None: {"timed": True,
        "candidate", "reference_eager", "reference_compiled", "speedup", "speedup_vs_compiled",
        "returned_speedup", "device", ...} or {"timed": False, "reason": ...}."""
        return self.report.get("timing")

    @property
    def speedup(self) -> Optional[float]:
        """Reference eager median / candidate median when the candidate was timed, else None."""
        t = self.timing or {}
        return t.get("speedup") if t.get("timed") else None

    @property
    def baseline(self) -> Optional[dict]:
        """KernelBench's own check (verify_kernelbench(..., baseline=True)), else None."""
        return (self.report.get("kernelbench") or {}).get("baseline")

    def to_json(self, indent: Optional[int] = 2) -> str:
        """The kcv.report/1 document, as `kcv verify --json` writes it."""
        return json.dumps(self.report, indent=indent)

    def replay_command(self, report_path: str, gate: str) -> str:
        """The command that reruns gate's first failing case, once to_json() is saved at report_path."""
        g = self.gates[gate]
        if g.failing_case is None:
            raise ValueError(f"gate {gate} has no failing case to replay ({g.verdict})")
        return f"kcv replay {report_path} --gate {gate} --case {g.failing_case}"


def _result(text: str) -> Result:
    doc = json.loads(text)
    gates = {}
    for g in doc.get("gates", []):
        seed = g.get("seed")
        gates[g["id"]] = GateResult(
            id=g["id"], verdict=g["verdict"], cases=int(g.get("cases", 0)), seconds=float(g.get("seconds", 0.0)),
            evidence=g.get("evidence", ""), seed=int(seed) if seed not in (None, "") else None,
            failing_case=g["failing_case"] if g.get("failing_case", -1) >= 0 else None,
            failing_cases=tuple(g.get("failing_cases", ())))
    seed = doc.get("seed")
    return Result(verdict=doc["verdict"], seed=int(seed) if seed not in (None, "") else None, gates=gates, report=doc)


class _Files:
    """Paths for the call: each source string written to a private directory, removed at exit."""

    def __init__(self):
        self.dir = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        if self.dir:
            shutil.rmtree(self.dir, ignore_errors=True)

    def path(self, what: str, src: Source, name: str) -> str:
        if isinstance(src, os.PathLike):
            src = os.fspath(src)
        if not isinstance(src, str) or not src:
            raise SetupError(f"kcv: {what}: expected a path or source text, got {type(src).__name__}")
        # A string that names an existing file is that file; one with a newline is always source.
        if "\n" not in src and os.path.isfile(src):
            return os.path.abspath(src)
        if "\n" not in src and len(src) < 4096 and os.path.splitext(src)[1] in (".c", ".cpp", ".cc", ".cu", ".py", ".so"):
            raise SetupError(f"kcv: {what}: no such file: {src}")
        if self.dir is None:
            self.dir = tempfile.mkdtemp(prefix="kcv-src-")  # mode 0700
        p = os.path.join(self.dir, name)
        with open(p, "w", encoding="utf-8") as f:
            f.write(src)
        return p


class _KeptFiles(_Files):
    """_Files whose directory outlives the call (a session's): removed by remove()."""

    def __exit__(self, *exc):
        pass

    def remove(self):
        _Files.__exit__(self, None, None, None)
        self.dir = None


def _candidate_name(src: str, language: Optional[str]) -> str:
    ext = {"c": ".c", "c++": ".cpp", "cpp": ".cpp", "cuda": ".cu", "cu": ".cu"}
    if language is not None:
        if language.lower() not in ext:
            raise SetupError(f"kcv: language {language!r}: expected one of c, cpp, cuda")
        return "candidate" + ext[language.lower()]
    cuda = "__global__" in src or "<<<" in src or "cudaStream_t" in src
    return "candidate.cu" if cuda else "candidate.cpp"


def _gates(gates: Optional[Iterable[str]]) -> Optional[list]:
    if gates is None:
        return None
    gates = [gates] if isinstance(gates, str) else list(gates)
    unknown = [g for g in gates if g not in GATES]
    if unknown:
        raise SetupError(f"kcv: unknown gate {unknown[0]!r} (gates: {', '.join(GATES)})")
    return gates


def verify(op: str, candidate: Source, backend: str = "cpu", gates: Optional[Iterable[str]] = None,
           seed: Optional[int] = None, timeout: Optional[float] = None, language: Optional[str] = None,
           sandbox: bool = True, max_time: Optional[float] = None) -> Result:
    """The gates on an ABI candidate (DESIGN §3) of a built-in op contract (`kcv contracts`).

    candidate: a path (.c, .cpp, .cu, .so) or source text; language ("c", "cpp", "cuda") names the
    text's language where the guess (CUDA if it holds __global__ or <<<) is not wanted.
    """
    with _Files() as files:
        name = _candidate_name(str(candidate), language)
        opts = {"op": op, "candidate": files.path("candidate", candidate, name), "backend": backend,
                "gates": _gates(gates), "seed": seed, "timeout": timeout, "sandbox": sandbox, "max_time": max_time}
        return _result(_kcv.verify_json(opts))


def verify_kernelbench(problem: Source, solution: Source, backend: str = "cuda",
                       gates: Optional[Iterable[str]] = None, seed: Optional[int] = None,
                       timeout: Optional[float] = None, python: Optional[str] = None, baseline: bool = False,
                       sandbox: bool = True, max_time: Optional[float] = None, timing: bool = False,
                       timing_reps: Optional[int] = None) -> Result:
    """The gates on a KernelBench pair (docs/kernelbench.md): problem.py's Model is the reference,
    solution's ModelNew the candidate. Both are paths or source text. python: the interpreter with
    torch (default: $KCV_PYTHON, else /usr/bin/python3). baseline: also KernelBench's own check.
    timing: once every selected gate passed, time the candidate against the reference in kcv's
    workers (Result.timing, Result.speedup; docs/timing.md); timing_reps: repetitions (20..1000)."""
    with _Files() as files:
        opts = {"kernelbench_problem": files.path("problem", problem, "problem.py"),
                "kernelbench_solution": files.path("solution", solution, "solution.py"), "backend": backend,
                "gates": _gates(gates), "seed": seed, "timeout": timeout, "python": python,
                "baseline": baseline, "sandbox": sandbox, "max_time": max_time, "timing": bool(timing),
                "timing_reps": timing_reps}
        return _result(_kcv.verify_json(opts))


def rotated_seed(seed: int, k: int) -> int:
    """The seed of rotation k of a Session started with `seed` (k = 0: seed itself): splitmix64 of
    seed + k, so rotations of one session differ and a rerun with the same seed repeats them."""
    if k == 0:
        return seed
    z = (seed + k * 0x9E3779B97F4A7C15) & 0xFFFFFFFFFFFFFFFF
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & 0xFFFFFFFFFFFFFFFF
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & 0xFFFFFFFFFFFFFFFF
    return z ^ (z >> 31)


class Session:
    """One KernelBench problem, many candidates (docs/python-api.md): the reference server starts
    once and its answers are kept by case under one session seed, so the 2nd..Nth candidate costs
    its own build and calls. Candidates still run in kcv's workers, never in this process.

        with kcv.Session(problem_src, backend="cuda") as s:
            results = s.verify_many([sol1, sol2, ...])

    seed: every candidate's run seed (same cases for all; drawn fresh when None). cache_bytes: the
    reference answers kept (0: $KCV_REFERENCE_CACHE_BYTES, default a quarter of physical memory).
    rotate_every: a new seed every N candidates (None: never), so a loop that sees many verdicts
    of one problem does not meet the same cases for ever. A rotation starts a new reference server
    and its cache starts over (the next candidate pays what the first did). The new seed is drawn
    fresh, or, when `seed` was given, derived from it (seed for candidates 1..N, then
    rotated_seed(seed, 1), ...) so a run can be repeated; each Result's seed says which it had.
    """

    def __init__(self, problem: Source, backend: str = "cuda", python: Optional[str] = None,
                 seed: Optional[int] = None, cache_bytes: int = 0, rotate_every: Optional[int] = None):
        if rotate_every is not None and (not isinstance(rotate_every, int) or isinstance(rotate_every, bool)
                                         or rotate_every < 1):
            raise SetupError(f"kcv: rotate_every must be a positive integer or None, not {rotate_every!r}")
        self._files = _Files()
        try:
            self._problem = self._files.path("problem", problem, "problem.py")
            self._args = (backend, python or "", cache_bytes)
            self._s = _kcv.KernelBenchSession(self._problem, backend, python or "", seed, cache_bytes)
        except BaseException:
            self._files.__exit__(None, None, None)
            raise
        self.backend = backend
        self.rotate_every = rotate_every
        self._seed0 = seed
        self._started = 0  # candidates begun, over every rotation
        self._retired_hits = self._retired_misses = 0
        self._seeds = [self._s.seed]
        import threading
        self._lock = threading.Lock()
        self._text = _KeptFiles()  # solutions given as text, one at a time (verify)
        self._text_busy = False

    @property
    def seed(self) -> int:
        """The seed the next candidate gets (the current one's, until a rotation)."""
        return self._s.seed

    @property
    def seeds(self) -> list:
        """Every seed this session has used, in order (one per rotation)."""
        return list(self._seeds)

    @property
    def reference_hits(self) -> int:
        """Reference answers the session's cache served so far (computed ones: reference_misses),
        over every rotation."""
        return self._retired_hits + self._s.reference_hits

    @property
    def reference_misses(self) -> int:
        return self._retired_misses + self._s.reference_misses

    def _next(self):
        """The C++ session for the next candidate, rotated first when rotate_every candidates
        have had the current seed. A verification still running keeps the old one alive."""
        with self._lock:
            if self._s is None:
                raise SetupError("kcv: the session is closed")
            if self.rotate_every and self._started and self._started % self.rotate_every == 0:
                k = len(self._seeds)
                seed = None if self._seed0 is None else rotated_seed(self._seed0, k)
                old = self._s
                self._s = _kcv.KernelBenchSession(self._problem, *self._args[:2], seed, self._args[2])
                self._retired_hits += old.reference_hits
                self._retired_misses += old.reference_misses
                self._seeds.append(self._s.seed)
            self._started += 1
            return self._s

    def verify(self, solution: Source, gates: Optional[Iterable[str]] = None, timeout: Optional[float] = None,
               baseline: bool = False, sandbox: bool = True, max_time: Optional[float] = None,
               timing: bool = False, timing_reps: Optional[int] = None) -> Result:
        """The gates on one solution (and, with timing=True, its timing once they all pass: while
        it is timed no other verification of this session runs)."""
        opts = {"gates": _gates(gates), "timeout": timeout, "baseline": baseline, "sandbox": sandbox,
                "max_time": max_time, "timing": bool(timing), "timing_reps": timing_reps}
        # Source text goes into the session's own directory while no other verification of it
        # uses that: the next candidate's workers, started early (docs/architecture.md "The
        # session-wide pool"), keep the solution's directory reachable and expect that one.
        with self._lock:
            own = not self._text_busy and isinstance(solution, str) and "\n" in solution
            if own:
                self._text_busy = True
        try:
            with (self._text if own else _Files()) as files:
                path = files.path("solution", solution, "solution.py")
                return _result(self._next().verify_json(path, opts))
        finally:
            if own:
                with self._lock:
                    self._text_busy = False

    def verify_many(self, solutions: Iterable[Source], jobs: int = 1, **kwargs) -> list:
        """verify() on each solution, up to `jobs` at once (threads of this process; each
        verification's candidate still runs in kcv's workers), results in the solutions' order. A
        solution with a setup error (it does not build, say) gives its SetupError in the list
        instead of a Result, and the others still run. With timing=True each timing runs alone."""
        solutions = list(solutions)
        if not isinstance(jobs, int) or jobs < 1:
            raise SetupError(f"kcv: jobs must be a positive integer, not {jobs!r}")

        def one(sol):
            try:
                return self.verify(sol, **kwargs)
            except SetupError as e:
                return e
        if jobs == 1 or len(solutions) <= 1:
            return [one(sol) for sol in solutions]
        from concurrent.futures import ThreadPoolExecutor
        with ThreadPoolExecutor(max_workers=min(jobs, len(solutions))) as pool:
            return list(pool.map(one, solutions))

    def close(self):
        if self._s is not None:
            self._s = None  # ends the reference server and the workers started for the next candidate
            self._files.__exit__(None, None, None)
            self._text.remove()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
