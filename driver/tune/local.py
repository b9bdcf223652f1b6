"""The local runner: candidates built in parallel, then measured one at a time.

Each batch goes through two phases, each in worker processes
(``process.WorkerProcess``: fresh interpreters, so a kernel that crashes or
corrupts memory cannot take the tuner down, and a hang is killed at the
timeout):

1. build: ``build_jobs`` workers compile the batch's candidates to module files
   at once (``build.BUILDS``: lowering and LLVM, the slow part of a trial);
2. run: one more worker loads and times them one after another
   (``build.RUNS``), with the build workers idle, so nothing competes with a
   timing (a second job on a 2-core machine distorts timings badly).

A candidate whose build fails, crashes or outlasts ``timeout`` is recorded as
that error and not run; one whose run does is recorded likewise. Kinds without
a build step (``build.BUILDS``) are built and measured in the run worker in one
step (``measure.MEASURES``). With ``build_jobs=0`` every kind takes that path
(no C compiler is needed then: the candidate is JIT-compiled in the worker).
"""
from __future__ import annotations

import itertools
import os
import shutil
import tempfile
from concurrent.futures import ThreadPoolExecutor
from queue import SimpleQueue

from compiler.autotune.tuner import MeasureResult
from vta_hw.errors import ArgumentError

from .build import BUILDS
from .process import WorkerProcess


def default_build_jobs() -> int:
    """``min(cores, 4)`` where a C compiler links the module files (``$CC`` or ``cc``), else 0."""
    if shutil.which(os.environ.get("CC", "cc")) is None:
        return 0
    return min(len(os.sched_getaffinity(0)), 4)


def _result(status, value) -> MeasureResult:
    return MeasureResult(costs=value) if status == "ok" else MeasureResult(error=value)


class LocalRunner:
    """Build and measure on this machine (module docstring).

    Args:
        timeout: seconds a candidate's build, and then its run, may take before it is
            killed and recorded as an error.
        threads: ``OMP_NUM_THREADS`` of the run worker (None: inherited).
        build_jobs: build workers (None: :func:`default_build_jobs`; 0: build in the
            run worker, candidate by candidate).
        options: measurement options (``measure.py``: warmup, repeats, number,
            min_repeat_ms, check, flush_cache).

    Raises:
        ArgumentError: (a ValueError) ``timeout`` not above 0, ``build_jobs`` below 0,
            or build jobs without a C compiler to link module files.
    """

    def __init__(self, timeout: float = 60.0, threads: "int | None" = None,
                 build_jobs: "int | None" = None, **options):
        if not timeout > 0:
            raise ArgumentError(f"timeout must be > 0 seconds, not {timeout!r}")
        if build_jobs is None:
            build_jobs = default_build_jobs()
        if build_jobs < 0:
            raise ArgumentError(f"build_jobs must be >= 0, not {build_jobs!r}")
        cc = os.environ.get("CC", "cc")
        if build_jobs and shutil.which(cc) is None:
            raise ArgumentError(f"build_jobs={build_jobs} links candidates into shared libraries "
                                f"with a C compiler, and {cc!r} is not on PATH: install gcc, "
                                "set CC, or build in the run worker with build_jobs=0")
        self.timeout, self.options, self.build_jobs = timeout, options, build_jobs
        self.worker = WorkerProcess(threads, start_s=max(timeout, 60.0))
        self._builders: SimpleQueue = SimpleQueue()
        self._all_builders: list = []
        for _ in range(build_jobs):
            w = WorkerProcess(1, start_s=max(timeout, 60.0))
            self._builders.put(w)
            self._all_builders.append(w)
        self._pool = ThreadPoolExecutor(build_jobs) if build_jobs else None
        self._dir = tempfile.mkdtemp(prefix="vta_tune_build_") if build_jobs else None
        self._count = itertools.count()

    def close(self) -> None:
        """Stop the workers and delete the module files."""
        if self._pool is not None:
            self._pool.shutdown()
        for w in [self.worker, *self._all_builders]:
            w.close()
        if self._dir is not None:
            shutil.rmtree(self._dir, ignore_errors=True)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def _build(self, kind, payload, config) -> tuple:
        w = self._builders.get()
        try:
            path = os.path.join(self._dir, f"cand{next(self._count)}.so")
            return w.call("build", (kind, payload, config, self.options, path), self.timeout,
                          "build")
        finally:
            self._builders.put(w)

    def measure_one(self, kind: str, payload: dict, config) -> MeasureResult:
        """One candidate built and measured in the run worker; never raises for a failing one."""
        return _result(*self.worker.call("measure", (kind, payload, config, self.options),
                                         self.timeout, "build and run"))

    def measure(self, task, configs) -> list[MeasureResult]:
        """``compiler.autotune`` runner protocol: one result per config, in order."""
        if not self.build_jobs or task.kind not in BUILDS:
            return [self.measure_one(task.kind, task.payload, c) for c in configs]
        built = list(self._pool.map(lambda c: self._build(task.kind, task.payload, c), configs))
        out = []
        for status, value in built:
            if status != "ok":
                out.append(MeasureResult(error=value))
                continue
            out.append(_result(*self.worker.call("run", (task.kind, task.payload, value,
                                                         self.options), self.timeout, "run")))
            os.unlink(value.path)
        return out
