"""unroll: copy out the body of every UNROLLED loop once per iteration."""

from __future__ import annotations

from .. import ir
from ..ops import ForKind, Op
from ..visit import map_stmt, substitute_stmt


def unroll(func: ir.PrimFunc) -> ir.PrimFunc:
    """Pass. Raises ValueError for an unrolled loop whose bounds are not constant."""
    def stmt(s: ir.Stmt) -> ir.Stmt:
        if not (isinstance(s, ir.For) and s.kind is ForKind.UNROLLED):
            return s
        if s.min.op is not Op.CONST or s.extent.op is not Op.CONST:
            raise ValueError(f"unroll: loop {s.var.name!r} has bounds ({s.min}, {s.extent}); "
                             "unrolling needs constant bounds")
        return ir.seq(*(substitute_stmt(s.body, {s.var: ir.const(s.min.arg + k, s.var.dtype)})
                        for k in range(s.extent.arg)))

    return ir.PrimFunc(func.name, func.params, map_stmt(func.body, lambda e: e, stmt))
