"""loop_partition: split a loop where a guard inside it is always true on one side.

For a guard conjunct that is affine in the loop variable (e.g. the tail check
`io*4 + ii < 10` of a split that does not divide), the loop is cut into a part
where the conjunct holds for every iteration of the loops inside, with the
conjunct replaced by `true`, and the rest, which keeps the check. `simplify`
then drops the decided checks.

A guard with an else branch is cut the same way when both branches are single stores
(a padded copy: the input inside the border, the fill value outside): the interior
becomes a plain copy that LLVM vectorises, instead of a compare and branch per element
(MobileNetV2's depthwise layers spent most of their time there).
"""

from __future__ import annotations

import math

from .. import dtype as dt
from .. import ir
from ..bounds import const_bounds, loop_range
from ..ops import Op
from ..simplify import build, linear
from ..visit import substitute_stmt

_TO_NONNEG = {Op.LT: lambda a, b: b - a - 1, Op.LE: lambda a, b: b - a,
              Op.GT: lambda a, b: a - b - 1, Op.GE: lambda a, b: a - b}


def _conjuncts(c: ir.Expr):
    if c.op is Op.AND:
        yield from _conjuncts(c.src[0])
        yield from _conjuncts(c.src[1])
    else:
        yield c


def _guards(s: ir.Stmt, ranges: dict, in_pragma: bool = False):
    """(conjunct, ranges of the loops around it) for each guard in `s`. Inside a pragma
    (e.g. the accelerator's ``dma_copy``, whose lowering wants one guarded Store under its
    loops) an if/else is left whole."""
    if isinstance(s, ir.SeqStmt):
        for c in s.stmts:
            yield from _guards(c, ranges, in_pragma)
    elif isinstance(s, ir.For):
        yield from _guards(s.body, {**ranges, s.var: loop_range(s.min, s.extent, ranges)},
                           in_pragma)
    elif isinstance(s, ir.AttrStmt):
        yield from _guards(s.body, ranges, in_pragma or str(s.key).startswith("pragma_"))
    elif isinstance(s, ir.Allocate):
        yield from _guards(s.body, ranges, in_pragma)
    elif isinstance(s, ir.IfThenElse):
        if s.else_case is None or (not in_pragma and isinstance(s.then_case, ir.Store)
                                   and isinstance(s.else_case, ir.Store)):
            for c in _conjuncts(s.cond):
                yield c, ranges
        yield from _guards(s.then_case, ranges, in_pragma)
        if s.else_case is not None:
            yield from _guards(s.else_case, ranges, in_pragma)


def _cut(loop: ir.For, ranges: dict, in_pragma: bool = False):
    """(cut point, conjunct, side where it holds: "prefix"/"suffix") or None."""
    lo, end = loop.min.arg, loop.min.arg + loop.extent.arg
    for c, inner in _guards(loop.body, ranges, in_pragma):
        if c.op not in _TO_NONNEG or not (dt.is_int(c.src[0].dtype)):
            continue
        terms, const = linear(_TO_NONNEG[c.op](*c.src))
        coef = terms.pop(loop.var, 0)
        if coef == 0:
            continue
        rest_lo = const_bounds(build(terms, const, loop.var.dtype), inner)[0]
        if rest_lo == -math.inf:
            continue
        if coef > 0:
            cut, side = -((rest_lo) // coef), "suffix"      # ceil(-rest_lo / coef)
        else:
            cut, side = rest_lo // (-coef) + 1, "prefix"
        if lo < cut < end:
            return cut, c, side
    return None


def _partition(s: ir.Stmt, ranges: dict, in_pragma: bool = False) -> ir.Stmt:
    if isinstance(s, ir.SeqStmt):
        return ir.seq(*(_partition(c, ranges, in_pragma) for c in s.stmts))
    if isinstance(s, ir.For):
        if s.min.op is Op.CONST and s.extent.op is Op.CONST and s.thread is None:
            found = _cut(s, ranges, in_pragma)
            if found is not None:
                cut, cond, side = found
                lo, end = s.min.arg, s.min.arg + s.extent.arg
                decided = substitute_stmt(s.body, {cond: ir.const(True)})
                first, second = (decided, s.body) if side == "prefix" else (s.body, decided)
                return ir.seq(_partition(ir.For(s.var, s.min, ir.const(cut - lo), s.kind, first),
                                         ranges, in_pragma),
                              _partition(ir.For(s.var, ir.const(cut), ir.const(end - cut), s.kind, second),
                                         ranges, in_pragma))
        inner = {**ranges, s.var: loop_range(s.min, s.extent, ranges)}
        return ir.For(s.var, s.min, s.extent, s.kind, _partition(s.body, inner, in_pragma), s.thread)
    if isinstance(s, ir.Allocate):
        return ir.Allocate(s.buffer, _partition(s.body, ranges, in_pragma))
    if isinstance(s, ir.AttrStmt):
        return ir.AttrStmt(s.key, s.value, _partition(
            s.body, ranges, in_pragma or str(s.key).startswith("pragma_")))
    if isinstance(s, ir.LetStmt):
        return ir.LetStmt(s.var, s.value, _partition(s.body, ranges, in_pragma))
    if isinstance(s, ir.IfThenElse):
        return ir.IfThenElse(s.cond, _partition(s.then_case, ranges, in_pragma),
                             None if s.else_case is None
                             else _partition(s.else_case, ranges, in_pragma))
    return s


def loop_partition(func: ir.PrimFunc) -> ir.PrimFunc:
    """Pass (see module docstring)."""
    return ir.PrimFunc(func.name, func.params, _partition(func.body, {}))
