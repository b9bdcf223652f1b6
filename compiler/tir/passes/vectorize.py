"""vectorize: turn VECTORIZED loops into vector code, or into serial loops when they do not fit.

A loop `for v in [m, m+n)` becomes one vector statement of n lanes when its
body is stores (a Store or a sequence of them, run after storage_flatten) whose
indices are affine in v with a constant stride: v becomes ramp(m, 1, n), affine
indices become RAMPs, values that do not depend on v become BROADCASTs, and
other operations work lane by lane. The loop stays (as SERIAL) when the body has
branches, inner loops or lets, an index that is not affine in v, or lanes that
depend on each other (a buffer loaded at a different index than it is stored,
as in a reduction over v).
"""

from __future__ import annotations

from .. import dtype as dt
from .. import ir
from ..ops import ForKind, Op
from ..simplify import simplify_expr
from ..visit import map_stmt, substitute, uses_var, walk_expr


class _Serial(Exception):
    """The loop cannot be vectorized; keep it serial."""


def _bcast(e: ir.Expr, n: int) -> ir.Expr:
    return e if dt.lanes(e.dtype) == n else ir.broadcast(e, n)


def _vec(e: ir.Expr, v: ir.Expr, n: int) -> ir.Expr:
    """`e` with v = ramp(v, 1, n): a scalar when e does not use v, else an n-lane vector."""
    if not uses_var(e, v):
        return e
    op = e.op
    if op is Op.VAR:
        return ir.ramp(e, 1, n)
    if op in (Op.LET, Op.REDUCE, Op.TENSOR_READ, Op.RAMP, Op.BROADCAST):
        raise _Serial(op)
    if op is Op.LOAD:
        idx = _vec(e.src[0], v, n)
        if idx.op is not Op.RAMP or idx.src[1].op is not Op.CONST:
            raise _Serial("index not affine")
        return ir.Expr(Op.LOAD, dt.with_lanes(e.dtype, n), (idx,), e.arg)
    src = [_vec(s, v, n) for s in e.src]
    if (op in (Op.ADD, Op.SUB) and any(s.op is Op.RAMP for s in src)
            and all(s.op is Op.RAMP or dt.lanes(s.dtype) == 1 for s in src)):
        (b0, s0), (b1, s1) = [(s.src[0], s.src[1]) if s.op is Op.RAMP else (s, ir.const(0, s.dtype))
                              for s in src]
        base, stride = (b0 + b1, s0 + s1) if op is Op.ADD else (b0 - b1, s0 - s1)
        return ir.ramp(simplify_expr(base), simplify_expr(stride), n)
    if op is Op.MUL and any(s.op is Op.RAMP for s in src) and any(dt.lanes(s.dtype) == 1 for s in src):
        r, c = (src[0], src[1]) if src[0].op is Op.RAMP else (src[1], src[0])
        return ir.ramp(simplify_expr(r.src[0] * c), simplify_expr(r.src[1] * c), n)
    if op is Op.CAST:
        return ir.Expr(Op.CAST, dt.with_lanes(e.dtype, n), (_bcast(src[0], n),))
    if op is Op.SELECT:
        return ir.Expr(Op.SELECT, dt.with_lanes(e.dtype, n), tuple(_bcast(s, n) for s in src))
    return ir.Expr(op, dt.with_lanes(e.dtype, n), tuple(_bcast(s, n) for s in src), e.arg)


def _vectorize_body(body: ir.Stmt, v: ir.Expr, n: int) -> ir.Stmt:
    stmts = body.stmts if isinstance(body, ir.SeqStmt) else (body,)
    if not all(isinstance(s, ir.Store) for s in stmts):
        raise _Serial("body is not stores")
    out = []
    for s in stmts:
        idx = _vec(s.indices[0], v, n)
        if idx.op is not Op.RAMP or idx.src[1].op is not Op.CONST:
            raise _Serial("store index not affine")
        out.append(ir.Store(s.buffer, _bcast(_vec(s.value, v, n), n), (idx,)))
    stored = {}
    for s in out:
        if stored.setdefault(s.buffer, s.indices[0]) != s.indices[0]:
            raise _Serial("stores to one buffer at different indices")
    for s in out:
        for x in walk_expr(s.value):
            if x.op is Op.LOAD and x.arg in stored and x.src[0] != stored[x.arg]:
                raise _Serial("lanes depend on each other")
    return ir.seq(*out)


def vectorize(func: ir.PrimFunc) -> ir.PrimFunc:
    """Pass (see module docstring); expects flat indices (after storage_flatten)."""
    def stmt(s: ir.Stmt) -> ir.Stmt:
        if not (isinstance(s, ir.For) and s.kind is ForKind.VECTORIZED):
            return s
        serial = ir.For(s.var, s.min, s.extent, ForKind.SERIAL, s.body, s.thread)
        if s.extent.op is not Op.CONST or s.min.op is not Op.CONST or s.extent.arg < 2:
            return serial
        try:
            vec = _vectorize_body(s.body, s.var, s.extent.arg)
        except _Serial:
            return serial
        return map_stmt(vec, lambda e: simplify_expr(substitute(e, {s.var: s.min})))

    return ir.PrimFunc(func.name, func.params, map_stmt(func.body, lambda e: e, stmt))
