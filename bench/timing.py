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
