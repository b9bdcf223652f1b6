"""unroll: copy out the body of every UNROLLED loop once per iteration, and of every loop
with the ``specialize`` pragma once per iteration as a case of that loop."""

from __future__ import annotations

from .. import ir
from ..ops import ForKind, Op
from ..visit import map_stmt, substitute_stmt

#: AttrStmt key of ``Stage.pragma(iv, "specialize")``: the loop keeps its kind (parallel,
#: say) and its body becomes ``if var == c: body[var := c]`` for every c of the range, so
#: that what depends on ``var`` folds per case, as in an unrolled copy
SPECIALIZE = "pragma_specialize"


def _constant_bounds(s: ir.For, what: str) -> range:
    if s.min.op is not Op.CONST or s.extent.op is not Op.CONST:
        raise ValueError(f"unroll: loop {s.var.name!r} has bounds ({s.min}, {s.extent}); "
                         f"{what} needs constant bounds")
    return range(s.min.arg, s.min.arg + s.extent.arg)


def _copy(s: ir.For, k: int) -> ir.Stmt:
    return substitute_stmt(s.body, {s.var: ir.const(k, s.var.dtype)})


def unroll(func: ir.PrimFunc) -> ir.PrimFunc:
    """Pass. Raises ValueError for an unrolled or specialized loop whose bounds are not
    constant, or a ``specialize`` pragma that is not on a loop."""
    def stmt(s: ir.Stmt) -> ir.Stmt:
        if isinstance(s, ir.AttrStmt) and s.key == SPECIALIZE:
            loop = s.body
            if not isinstance(loop, ir.For):
                raise ValueError(f"unroll: the specialize pragma must be on a loop, not on "
                                 f"{type(loop).__name__}")
            cases = ir.seq(*(ir.IfThenElse(ir.eq(loop.var, k), _copy(loop, k))
                             for k in _constant_bounds(loop, "specializing")))
            return ir.For(loop.var, loop.min, loop.extent, loop.kind, cases, loop.thread)
        if not (isinstance(s, ir.For) and s.kind is ForKind.UNROLLED):
            return s
        return ir.seq(*(_copy(s, k) for k in _constant_bounds(s, "unrolling")))

    return ir.PrimFunc(func.name, func.params, map_stmt(func.body, lambda e: e, stmt))
