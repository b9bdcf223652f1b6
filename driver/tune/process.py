"""One tuning worker process and the calls it answers, each with a timeout.

A :class:`WorkerProcess` starts ``python -m driver.tune.worker`` (a fresh
interpreter, so no OpenMP or LLVM state is inherited and the caller's
``__main__`` is not re-run), which connects back over a local socket, proves
it is this runner's worker with a token, and answers each ``(op, args)`` with
``("ok", value)`` or ``("error", one line)`` (``worker.OPS``). :meth:`call`
waits at most ``timeout`` seconds: a hang is killed, a crash (the process
died, e.g. a segfault in a kernel) is noticed, and both come back as an
error; the next call starts a fresh process.
"""
from __future__ import annotations

import os
import secrets
import socket
import subprocess
import sys
from multiprocessing.connection import Connection
from pathlib import Path

_ROOT = str(Path(__file__).resolve().parents[2])     # the repository (for the worker's imports)


class WorkerStartError(RuntimeError):
    """The worker process did not connect back in time (the message says why)."""


class WorkerProcess:
    """A restartable worker (module docstring).

    Args:
        threads: ``OMP_NUM_THREADS`` of the process (None: inherited).
        start_s: seconds the process may take to start (imports) and connect back.
    """

    def __init__(self, threads: "int | None" = None, start_s: float = 60.0):
        self.threads, self.start_s = threads, start_s
        self.proc = None
        self._conn = None

    def start(self) -> None:
        """Start the process (a running one is kept).

        Raises:
            WorkerStartError: it did not connect back within ``start_s`` seconds.
        """
        if self.proc is not None and self.proc.poll() is None:
            return
        self.stop()
        token = secrets.token_hex(16)
        env = dict(os.environ, VTA_TUNE_KEY=token,
                   PYTHONPATH=os.pathsep.join(filter(None, [_ROOT, os.environ.get("PYTHONPATH")])))
        if self.threads is not None:
            env["OMP_NUM_THREADS"] = str(self.threads)
        with socket.create_server(("127.0.0.1", 0)) as server:
            server.settimeout(self.start_s)
            host, port = server.getsockname()
            self.proc = subprocess.Popen([sys.executable, "-m", "driver.tune.worker", host,
                                          str(port)], env=env, cwd=_ROOT)
            try:
                sock, _ = server.accept()
                sock.settimeout(None)
                self._conn = Connection(sock.detach())
                if not (self._conn.poll(self.start_s)
                        and secrets.compare_digest(self._conn.recv(), token)):
                    raise OSError("a stranger connected")
            except (OSError, EOFError) as e:
                self.stop()
                raise WorkerStartError(f"the tuning worker did not start within {self.start_s:g} s "
                                       f"(python -m driver.tune.worker in {_ROOT}: {e})") from None

    def call(self, op: str, args: tuple, timeout: float, what: str = "") -> tuple:
        """``("ok", value)`` or ``("error", one line)`` of ``worker.OPS[op](*args)``; a hang
        past ``timeout`` seconds or a crash is an error (``what`` names the step in it)."""
        self.start()
        try:
            self._conn.send((op, args))
            if not self._conn.poll(timeout):
                self.stop()
                return "error", f"timed out after {timeout:g} s ({what or op})"
            return self._conn.recv()
        except (EOFError, OSError):
            code = self.proc.wait(5) if self.proc is not None else None
            self.stop()
            return "error", f"worker process crashed (exit code {code}; {what or op})"

    def stop(self) -> None:
        """Kill the process (if any)."""
        if self.proc is not None:
            self.proc.kill()
            self.proc.wait(5)
        if self._conn is not None:
            self._conn.close()
        self.proc = self._conn = None

    def close(self) -> None:
        """Ask the process to exit, then make sure it has."""
        if self._conn is not None and self.proc.poll() is None:
            try:
                self._conn.send(None)
                self.proc.wait(5)
            except (OSError, subprocess.TimeoutExpired):
                pass
        self.stop()
