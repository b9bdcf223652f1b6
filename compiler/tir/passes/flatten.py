"""storage_flatten: every N-D load/store index becomes one flat element offset.

The offset of (i0, i1, ...) in a buffer with strides (s0, s1, ...) is sum(i_d * s_d).
Buffers keep their N-D shape and strides as declared; only the indices change.
"""

from __future__ import annotations

from .. import ir
from ..ops import Op
from ..visit import map_stmt, rewrite_expr


def flat_index(buffer: ir.Buffer, indices) -> ir.Expr:
    if len(indices) != len(buffer.shape):
        raise ValueError(f"access to {buffer.name!r} with {len(indices)} indices; it has "
                         f"{len(buffer.shape)} dimensions {buffer.shape}")
    out = None
    for i, s in zip(indices, buffer.strides):
        term = i if s == 1 else i * s
        out = term if out is None else out + term
    return out if out is not None else ir.const(0)


def storage_flatten(func: ir.PrimFunc) -> ir.PrimFunc:
    """Pass: flatten indices (accesses with one index are taken as flat already; a 0-d access reads offset 0)."""
    def load(x: ir.Expr) -> ir.Expr | None:
        if x.op is Op.LOAD and len(x.src) != 1:
            return ir.Expr(Op.LOAD, x.dtype, (flat_index(x.arg, x.src),), x.arg)
        return None

    def expr(e: ir.Expr) -> ir.Expr:
        return rewrite_expr(e, load)

    def stmt(s: ir.Stmt) -> ir.Stmt:
        if isinstance(s, ir.Store) and len(s.indices) != 1:
            return ir.Store(s.buffer, s.value, (flat_index(s.buffer, s.indices),))
        return s

    return ir.PrimFunc(func.name, func.params, map_stmt(func.body, expr, stmt))
