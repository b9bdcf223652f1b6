"""The local runner: candidates measured one at a time in a separate worker process.

The worker (``python -m driver.tune.worker``, a fresh interpreter, so no OpenMP
or LLVM state is inherited and the caller's ``__main__`` is not re-run) connects
back over a local socket and answers each ``(kind, payload, config, options)``
with ``measure.measure``'s result. The runner waits at most ``timeout`` seconds
per candidate; a hang is killed, a crash (the worker died, e.g. a segfault in
a kernel) is noticed, and both become the trial's error while a fresh worker
takes the next candidate. Build and measurement happen in the worker, so a
kernel that corrupts memory cannot take the tuner down with it.
"""
from __future__ import annotations

import os
import secrets
import socket
import subprocess
import sys
from multiprocessing.connection import Connection
from pathlib import Path

from compiler.autotune.tuner import MeasureResult
from vta_hw.errors import ArgumentError

_ROOT = str(Path(__file__).resolve().parents[2])     # the repository (for the worker's imports)


class LocalRunner:
    """Measure on this machine (module docstring).

    Args:
        timeout: seconds a candidate may take (build and measurement) before it is
            killed and recorded as an error.
        threads: ``OMP_NUM_THREADS`` of the worker (None: inherited).
        options: measurement options (``measure.py``: warmup, repeats, number,
            min_repeat_ms, check, flush_cache).

    Raises:
        ValueError: ``timeout`` not above 0.
    """

    START_S = 60.0     # seconds the worker may take to start (imports)

    def __init__(self, timeout: float = 60.0, threads: "int | None" = None, **options):
        if not timeout > 0:
            raise ArgumentError(f"timeout must be > 0 seconds, not {timeout!r}")
        self.timeout = timeout
        self.threads = threads
        self.options = options
        self._proc = None
        self._conn = None

    def _start(self) -> None:
        token = secrets.token_hex(16)
        env = dict(os.environ, VTA_TUNE_KEY=token,
                   PYTHONPATH=os.pathsep.join(filter(None, [_ROOT, os.environ.get("PYTHONPATH")])))
        if self.threads is not None:
            env["OMP_NUM_THREADS"] = str(self.threads)
        limit = max(self.timeout, self.START_S)
        with socket.create_server(("127.0.0.1", 0)) as server:
            server.settimeout(limit)
            host, port = server.getsockname()
            self._proc = subprocess.Popen([sys.executable, "-m", "driver.tune.worker", host,
                                           str(port)], env=env, cwd=_ROOT)
            try:
                sock, _ = server.accept()
                sock.settimeout(None)
                self._conn = Connection(sock.detach())
                if not (self._conn.poll(limit) and secrets.compare_digest(self._conn.recv(), token)):
                    raise OSError("a stranger connected")
            except (OSError, EOFError) as e:
                self._stop()
                raise RuntimeError(f"the tuning worker did not start within {limit:g} s "
                                   f"(python -m driver.tune.worker in {_ROOT}: {e})") from None

    def _stop(self) -> None:
        if self._proc is not None:
            self._proc.kill()
            self._proc.wait(5)
        if self._conn is not None:
            self._conn.close()
        self._proc = self._conn = None

    def close(self) -> None:
        """Stop the worker."""
        if self._conn is not None and self._proc.poll() is None:
            try:
                self._conn.send(None)
                self._proc.wait(5)
            except (OSError, subprocess.TimeoutExpired):
                pass
        self._stop()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def measure_one(self, kind: str, payload: dict, config) -> MeasureResult:
        """One candidate; never raises for a failing one."""
        if self._proc is None or self._proc.poll() is not None:
            self._stop()
            self._start()
        try:
            self._conn.send((kind, payload, config, self.options))
            if not self._conn.poll(self.timeout):
                self._stop()
                return MeasureResult(error=f"timed out after {self.timeout:g} s (build and run)")
            status, value = self._conn.recv()
        except (EOFError, OSError):
            code = self._proc.wait(5) if self._proc is not None else None
            self._stop()
            return MeasureResult(error=f"worker process crashed (exit code {code})")
        return MeasureResult(costs=value) if status == "ok" else MeasureResult(error=value)

    def measure(self, task, configs) -> list[MeasureResult]:
        """``compiler.autotune`` runner protocol: one result per config, in order."""
        return [self.measure_one(task.kind, task.payload, c) for c in configs]
