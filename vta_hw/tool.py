"""``run_tool``: run an external program (cc, nvcc, ptxas, yosys, nextpnr, Verilator, ...)
under a wall-time limit that names the tool when it expires.

It lives in ``vta_hw`` because that is the one package the compiler, the FPGA flow,
the driver and the bench scripts may all import (DESIGN.md's layering).

The tool runs in its own process group (``start_new_session``); when the limit
expires the whole group is killed (SIGKILL), so nothing it started (``cc`` starts
``ld``; ``make`` starts compilers) keeps running or keeps the pipes open.

``$VTA_TOOL_TIMEOUT_S`` (seconds, a positive number), when set, replaces every
limit: a slow machine raises it once instead of at each call site.
"""
from __future__ import annotations

import os
import signal
import subprocess

from vta_hw.errors import VtaError

#: Environment variable that, when set, replaces every tool's limit (seconds).
TIMEOUT_ENV = "VTA_TOOL_TIMEOUT_S"


class ToolError(VtaError, RuntimeError):
    """An external tool could not be run (not found, not executable) or ran too long.

    Attributes:
        stdout, stderr: what the tool wrote before it was stopped (str, or bytes when
            the caller did not ask for text; empty when not captured or never started).
    """
    stdout = stderr = ""


class ToolTimeout(ToolError):
    """An external tool ran past its wall-time limit and was killed.

    Attributes:
        what: the tool's name as the message gives it (``"cc (link)"``, ``"nvcc"``).
        limit_s: the limit that expired, seconds.
    """

    def __init__(self, what: str, limit_s: float, stdout="", stderr=""):
        super().__init__(f"{what} did not finish within its limit of {limit_s:g} s and was "
                         f"killed; if it is only slow, raise the limit (set {TIMEOUT_ENV} to "
                         f"more seconds)")
        self.what, self.limit_s, self.stdout, self.stderr = what, limit_s, stdout, stderr


def limit_s(default_s: float) -> float:
    """The limit to use: ``$VTA_TOOL_TIMEOUT_S`` when set, else ``default_s`` (seconds).

    Raises:
        ToolError: ``$VTA_TOOL_TIMEOUT_S`` is not a positive number.
    """
    raw = os.environ.get(TIMEOUT_ENV)
    if raw is None:
        return default_s
    try:
        value = float(raw)
    except ValueError:
        value = -1.0
    if not value > 0:
        raise ToolError(f"{TIMEOUT_ENV} must be a positive number of seconds, not {raw!r}; "
                        f"unset it to use each tool's default limit")
    return value


def run_tool(argv, *, timeout_s: float, what: str | None = None, input=None,
             capture_output: bool = False, text: bool = False, **popen_kw) -> subprocess.CompletedProcess:
    """Run ``argv`` to completion within ``timeout_s`` seconds (``subprocess.run``'s result).

    Args:
        argv: the command, program first (str or path items).
        timeout_s: wall-time limit, seconds (``$VTA_TOOL_TIMEOUT_S`` replaces it when set).
        what: the tool's name in messages; default ``argv[0]``'s file name.
        input, capture_output, text: as ``subprocess.run``.
        **popen_kw: passed to ``subprocess.Popen`` (``cwd``, ``env``, ``stdout``, ...).

    Returns:
        ``subprocess.CompletedProcess``; a non-zero exit status is the caller's to report.

    Raises:
        ToolTimeout: the limit expired; the tool and everything it started were killed.
        ToolError: the program could not be started (not found, not executable), or
            ``$VTA_TOOL_TIMEOUT_S`` is malformed.
    """
    argv = [str(a) for a in argv]
    what = what or os.path.basename(argv[0])
    limit = limit_s(timeout_s)
    if capture_output:
        popen_kw["stdout"] = popen_kw["stderr"] = subprocess.PIPE
    if input is not None:
        popen_kw["stdin"] = subprocess.PIPE
    try:
        proc = subprocess.Popen(argv, text=text, start_new_session=True, **popen_kw)
    except OSError as e:
        raise ToolError(f"could not start {what} ({argv[0]}): {e.strerror or e}; check that it "
                        f"is installed and on PATH") from None
    with proc:
        try:
            out, err = proc.communicate(input, timeout=limit)
        except subprocess.TimeoutExpired:
            _kill_group(proc)
            out, err = proc.communicate()
            raise ToolTimeout(what, limit, out or "", err or "") from None
        except BaseException:          # KeyboardInterrupt: leave no tool running
            _kill_group(proc)
            raise
    return subprocess.CompletedProcess(argv, proc.returncode, out, err)


def _kill_group(proc: subprocess.Popen) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except ProcessLookupError:         # already gone
        pass
    proc.wait()
