"""Interval analysis of integer expressions.

`const_bounds(e, ranges)` gives constant (lo, hi) bounds (inclusive, +-inf when
unknown) from constant ranges of variables. `interval(e, relax)` gives symbolic
(lo, hi) expressions when some variables range over symbolic intervals; bound
inference uses it to find the region a loop nest touches.
"""

from __future__ import annotations

import itertools
import math
import operator

from . import dtype as dt
from . import ir
from .ops import Op
from .visit import walk_expr

INF = math.inf
Ranges = dict  # VAR Expr -> (lo, hi) inclusive ints


def _floordiv(a, c):
    return a if a in (INF, -INF) else a // c


def const_bounds(e: ir.Expr, ranges: Ranges) -> tuple[float, float]:
    """Inclusive constant bounds of integer expression `e` given variable ranges."""
    op = e.op
    if op is Op.CONST:
        v = int(e.arg) if not dt.is_float(e.dtype) else e.arg
        return v, v
    if op is Op.VAR:
        return ranges.get(e, (-INF, INF))
    if op in (Op.ADD, Op.SUB, Op.MUL, Op.MIN, Op.MAX, Op.FLOORDIV, Op.FLOORMOD):
        a, b = const_bounds(e.src[0], ranges), const_bounds(e.src[1], ranges)
        if op is Op.ADD:
            return a[0] + b[0], a[1] + b[1]
        if op is Op.SUB:
            return a[0] - b[1], a[1] - b[0]
        if op is Op.MUL:
            prods = [0 if 0 in (x, y) else x * y for x in a for y in b]
            return min(prods), max(prods)
        if op is Op.MIN:
            return min(a[0], b[0]), min(a[1], b[1])
        if op is Op.MAX:
            return max(a[0], b[0]), max(a[1], b[1])
        if b[0] == b[1] and b[0] > 0:
            c = b[0]
            if op is Op.FLOORDIV:
                return _floordiv(a[0], c), _floordiv(a[1], c)
            if a[0] >= 0 and a[1] < c:
                return a
            return 0, c - 1
        return -INF, INF
    if op is Op.SELECT:
        a, b = const_bounds(e.src[1], ranges), const_bounds(e.src[2], ranges)
        return min(a[0], b[0]), max(a[1], b[1])
    if op is Op.CAST and dt.is_int(e.dtype) and dt.is_int(e.src[0].dtype):
        return const_bounds(e.src[0], ranges)
    if op in (Op.RAMP,):
        base, stride = const_bounds(e.src[0], ranges), const_bounds(e.src[1], ranges)
        last = (e.arg - 1) * stride[0] if stride[0] == stride[1] else None
        if last is None:
            return -INF, INF
        return base[0] + min(0, last), base[1] + max(0, last)
    if op is Op.BROADCAST:
        return const_bounds(e.src[0], ranges)
    return -INF, INF


def loop_range(lo: ir.Expr, extent: ir.Expr, ranges: Ranges) -> tuple[float, float]:
    """Inclusive constant bounds of the variable of a loop over [lo, lo + extent)."""
    return const_bounds(lo, ranges)[0], const_bounds(lo + extent, ranges)[1] - 1


def interval(e: ir.Expr, relax: dict) -> tuple[ir.Expr, ir.Expr] | None:
    """Symbolic inclusive bounds of `e` when each VAR in `relax` ranges over (lo_expr, hi_expr).

    Variables not in `relax` stay as they are. Returns None when some node cannot
    be bounded symbolically (a division by a non-constant, a load of an index
    that depends on a relaxed variable, ...).
    """
    op = e.op
    if op is Op.VAR:
        return relax.get(e, (e, e))
    if op is Op.CONST or not any(_depends(e, relax)):
        return e, e
    if op in (Op.ADD, Op.SUB, Op.MIN, Op.MAX):
        a, b = interval(e.src[0], relax), interval(e.src[1], relax)
        if a is None or b is None:
            return None
        if op is Op.ADD:
            return a[0] + b[0], a[1] + b[1]
        if op is Op.SUB:
            return a[0] - b[1], a[1] - b[0]
        if op is Op.MIN:
            return ir.min_(a[0], b[0]), ir.min_(a[1], b[1])
        return ir.max_(a[0], b[0]), ir.max_(a[1], b[1])
    if op in (Op.MUL, Op.FLOORDIV, Op.FLOORMOD):
        x, c = e.src
        if op is Op.MUL and x.op is Op.CONST:
            x, c = c, x
        if c.op is not Op.CONST:
            return None
        a = interval(x, relax)
        if a is None:
            return None
        k = c.arg
        if op is Op.MUL:
            return (a[0] * k, a[1] * k) if k >= 0 else (a[1] * k, a[0] * k)
        if k <= 0:
            return None
        if op is Op.FLOORDIV:
            return a[0] // k, a[1] // k
        if a[0] == a[1]:
            return a[0] % k, a[0] % k
        return ir.const(0, e.dtype), ir.const(k - 1, e.dtype)
    return None


def _depends(e: ir.Expr, relax: dict):
    return (x in relax for x in walk_expr(e) if x.op is Op.VAR)



_INT_OPS = {Op.ADD: operator.add, Op.SUB: operator.sub, Op.MUL: operator.mul,
            Op.FLOORDIV: operator.floordiv, Op.FLOORMOD: operator.mod, Op.MIN: min, Op.MAX: max}


def _eval_int(e: ir.Expr, env: dict) -> int | None:
    if e.op is Op.CONST:
        return e.arg
    if e.op is Op.VAR:
        return env[e]
    if e.op not in _INT_OPS:
        return None
    a, b = _eval_int(e.src[0], env), _eval_int(e.src[1], env)
    if a is None or b is None or (e.op in (Op.FLOORDIV, Op.FLOORMOD) and b == 0):
        return None
    return _INT_OPS[e.op](a, b)


def max_by_enumeration(e: ir.Expr, ranges: Ranges, limit: int = 4096) -> int | None:
    """The exact maximum of integer expression `e` over all values of its variables in `ranges`,
    when they are at most `limit` combinations and `e` uses only integer arithmetic; else None."""
    names = sorted({x for x in walk_expr(e) if x.op is Op.VAR}, key=lambda v: v.arg)
    spans = [ranges.get(v, (-INF, INF)) for v in names]
    if any(math.isinf(lo) or math.isinf(hi) for lo, hi in spans):
        return None
    if math.prod(int(hi - lo + 1) for lo, hi in spans) > limit:
        return None
    best = None
    for combo in itertools.product(*(range(int(lo), int(hi) + 1) for lo, hi in spans)):
        v = _eval_int(e, dict(zip(names, combo)))
        if v is None:
            return None
        best = v if best is None else max(best, v)
    return best
