"""What the bench scripts share: timing a call (``python bench/X.py`` puts this folder first
on ``sys.path``, so the scripts import it as ``timing``)."""
from __future__ import annotations

import time


def timed(fn, repeat: int) -> list:
    """Seconds of each of ``repeat`` calls of ``fn``, after two warm-up calls."""
    fn()
    fn()
    out = []
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        out.append(time.perf_counter() - t)
    return out


#: wall-time limit of one child measurement process, seconds
CHILD_LIMIT_S = 3600.0


def child_figures(argv, threads: int, *, cwd=None, env_extra=None) -> dict:
    """Run one bench child (``argv``, a Python command) with ``OMP_NUM_THREADS=threads``
    under ``vta_hw.tool.run_tool``'s time limit; echo its lines but the last, and return
    the last, a JSON object of its figures.

    Raises:
        SystemExit: the child failed (its exit status) or ran past ``CHILD_LIMIT_S``.
    """
    import json
    import os

    from vta_hw.tool import ToolError, run_tool
    env = dict(os.environ, OMP_NUM_THREADS=str(threads), **(env_extra or {}))
    try:
        proc = run_tool(argv, timeout_s=CHILD_LIMIT_S, what=f"the {threads}-thread run",
                        stdout=-1, text=True, env=env, cwd=cwd)
    except ToolError as e:
        raise SystemExit(str(e)) from None
    if proc.returncode != 0:
        raise SystemExit(f"the {threads}-thread run failed (exit {proc.returncode})")
    lines = proc.stdout.strip().splitlines()
    print("\n".join(lines[:-1]), flush=True)
    return json.loads(lines[-1])


def timed_thread_cpu(fn, repeat: int) -> list:
    """CPU seconds of the calling thread for each of ``repeat`` calls of ``fn`` (after two
    warm-up calls): a single-threaded call's cost without the time other processes held
    the core (``time.thread_time``), the figure that stays put on a loaded machine."""
    fn()
    fn()
    out = []
    for _ in range(repeat):
        t = time.thread_time()
        fn()
        out.append(time.thread_time() - t)
    return out
