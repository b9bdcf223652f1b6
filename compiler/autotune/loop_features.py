"""Fixed-length statistics of a loop nest (``compiler.tir`` ``PrimFunc``), the part of a
candidate's features every task kind shares (``features.py`` for the CPU and accelerator
kinds, ``gpu_task.py`` for GPU groups; the statistics are listed in ``features.py``).
"""
from __future__ import annotations

import math

from compiler.tir.ops import ForKind


def _log2(x) -> float:
    return math.log2(x) if x > 0 else -1.0


def loop_features(func) -> list[float]:
    """Fixed-length statistics of a ``PrimFunc``'s loop nest (see the module docstring).

    Reads a nest before the loop passes (``schedule_to_func``: unrolled and vectorized
    loops still loops) and after them (``lower``: copies and vector types) alike: a
    statement counts once per copy its enclosing unrolled loops make, and its vector
    width is the wider of its dtype's lanes and its enclosing vectorized loop's extent.
    """
    from compiler.tir import dtype as dt
    from compiler.tir import ir
    from compiler.tir.ops import Op
    from compiler.tir.visit import walk_expr
    kinds = list(ForKind)
    count = [0.0] * len(kinds)
    logext = [0.0] * len(kinds)
    acc = {"par": 1.0, "depth": 0, "stmts": 0.0, "stores": 0.0, "vec": 0.0, "lanes": 1}

    def go(s, d: int, copies: float, vlanes: int) -> None:
        acc["stmts"] += copies
        acc["depth"] = max(acc["depth"], d)
        if isinstance(s, ir.For):
            ext = s.extent.arg if ir.is_const(s.extent) else 16
            k = kinds.index(s.kind)
            count[k] += 1
            logext[k] += _log2(ext)
            if s.kind is ForKind.PARALLEL:
                acc["par"] *= ext
            go(s.body, d + 1, copies * ext if s.kind is ForKind.UNROLLED else copies,
               ext if s.kind is ForKind.VECTORIZED else vlanes)
        elif isinstance(s, ir.SeqStmt):
            for c in s.stmts:
                go(c, d, copies, vlanes)
        elif isinstance(s, (ir.Allocate, ir.LetStmt, ir.AttrStmt)):
            go(s.body, d, copies, vlanes)
        elif isinstance(s, ir.IfThenElse):
            go(s.then_case, d, copies, vlanes)
            if s.else_case is not None:
                go(s.else_case, d, copies, vlanes)
        elif isinstance(s, ir.Store):
            n = max(dt.lanes(s.value.dtype), vlanes)
            acc["stores"] += copies
            acc["lanes"] = max(acc["lanes"], n)
            loads = sum(1 for e in walk_expr(s.value) if e.op is Op.LOAD)
            acc["vec"] += copies * (1 + loads) if n > 1 else 0
    go(func.body, 0, 1.0, 1)
    return count + logext + [_log2(acc["par"]), float(acc["depth"]), _log2(acc["stmts"]),
                             _log2(acc["stores"]), _log2(acc["lanes"]), _log2(acc["vec"] + 1)]
