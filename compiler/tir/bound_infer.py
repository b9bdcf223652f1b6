"""Bound inference: the box of a tensor that a loop nest reads, for compute_at and tensorize."""

from __future__ import annotations

from . import ir
from .bounds import Ranges, const_bounds, interval, max_by_enumeration
from .ops import Op
from .simplify import simplify_expr


def box_cover(reads: list, relax: dict, ranges: Ranges, shape) -> list | int:
    """The box [(start Expr, constant extent)] covering the index tuples `reads` of a tensor of
    `shape` while the variables in `relax` range over their (lo, hi) expressions.

    The start is symbolic in the other variables; the extent is the constant the
    simplifier proves, or else its maximum over `ranges` (by enumeration when the
    variables take few values, else from interval bounds); a box starting at 0 is
    clipped to the shape. Returns the dimension (an int) whose
    indices cannot be bounded.
    """
    region = []
    for d, size in enumerate(shape):
        parts = [interval(idx[d], relax) for idx in reads]
        if any(p is None for p in parts):
            return d
        lo, hi = parts[0]
        for plo, phi in parts[1:]:
            lo, hi = ir.min_(lo, plo), ir.max_(hi, phi)
        lo = simplify_expr(lo, ranges)
        ext = simplify_expr(hi - lo + 1, ranges)
        if ext.op is Op.CONST:
            n = ext.arg
        else:
            exact = max_by_enumeration(ext, ranges)
            n = exact if exact is not None else int(const_bounds(ext, ranges)[1])
        region.append((lo, min(n, size) if ir.is_const(lo, 0) else n))
    return region
