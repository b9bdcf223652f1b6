"""inject_virtual_thread: replace each loop bound to "vthread" by interleaved copies.

Virtual threads are independent by contract, so the copies may be reordered:
the pass sinks the virtual-thread loop into the loops inside it (whose bounds do
not depend on it) and emits, at each statement that does work, one copy per
thread in order, each wrapped in AttrStmt("virtual_thread", k). Buffers
allocated inside get one private copy per thread (name suffix ".vt<k>"). The
accelerator backend turns the copies into token-synchronized instruction streams.
"""

from __future__ import annotations

from .. import ir
from ..ops import Op
from ..visit import map_stmt, rewrite_expr, substitute_stmt, uses_var


def _rename_buffers(s: ir.Stmt, bufs: dict) -> ir.Stmt:
    if not bufs:
        return s

    def load(x):
        return ir.Expr(Op.LOAD, x.dtype, x.src, bufs[x.arg]) if x.op is Op.LOAD and x.arg in bufs else None

    def stmt(y):
        if isinstance(y, ir.Store) and y.buffer in bufs:
            return ir.Store(bufs[y.buffer], y.value, y.indices)
        return y

    return map_stmt(s, lambda e: rewrite_expr(e, load), stmt)


def _copy(s: ir.Stmt, v: ir.Expr, k: int, bufs: dict) -> ir.Stmt:
    return _rename_buffers(substitute_stmt(s, {v: ir.const(k, v.dtype)}), {b: c[k] for b, c in bufs.items()})


def _sink(s: ir.Stmt, v: ir.Expr, n: int, bufs: dict) -> ir.Stmt:
    if isinstance(s, ir.SeqStmt):
        return ir.seq(*(_sink(c, v, n, bufs) for c in s.stmts))
    if isinstance(s, ir.For) and not uses_var(s.min, v) and not uses_var(s.extent, v):
        return ir.For(s.var, s.min, s.extent, s.kind, _sink(s.body, v, n, bufs), s.thread)
    if isinstance(s, ir.AttrStmt):
        return ir.AttrStmt(s.key, s.value, _sink(s.body, v, n, bufs))
    if isinstance(s, ir.Allocate):
        b = s.buffer
        copies = [ir.Buffer(f"{b.name}.vt{k}", b.dtype, b.shape, b.strides, b.scope) for k in range(n)]
        body = _sink(s.body, v, n, {**bufs, b: copies})
        for c in reversed(copies):
            body = ir.Allocate(c, body)
        return body
    return ir.seq(*(ir.AttrStmt("virtual_thread", k, _copy(s, v, k, bufs)) for k in range(n)))


def inject_virtual_thread(func: ir.PrimFunc) -> ir.PrimFunc:
    """Pass. Raises ValueError for a virtual-thread loop whose bounds are not constant."""
    def stmt(s: ir.Stmt) -> ir.Stmt:
        if not (isinstance(s, ir.For) and s.thread == "vthread"):
            return s
        if s.min.op is not Op.CONST or s.extent.op is not Op.CONST:
            raise ValueError(f"virtual thread loop {s.var.name!r} needs constant bounds, not "
                             f"({s.min}, {s.extent})")
        body = substitute_stmt(s.body, {s.var: s.var + s.min.arg}) if s.min.arg else s.body
        return _sink(body, s.var, s.extent.arg, {})

    return ir.PrimFunc(func.name, func.params, map_stmt(func.body, lambda e: e, stmt))
