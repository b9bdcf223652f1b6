"""The IR verifier: checks that a PrimFunc is well formed; tests run it after every pass.

Checks: every variable is bound (param, enclosing loop or let) and no loop or let
rebinds a variable in scope; every buffer accessed is a param or allocated around
the access; index counts (one flat index when `flat`); dtypes agree (operands of
arithmetic and comparisons, bool conditions, load/store element types and lanes,
integer loop bounds); no te-only nodes (TENSOR_READ, REDUCE); calls name known
intrinsics. Raises IRError naming the node.
"""

from __future__ import annotations

from . import dtype as dt
from . import ir
from .ops import BINARY_ARITH, COMPARE, Op


class IRError(ValueError):
    """A malformed loop-IR function."""


def _check_expr(e: ir.Expr, scope: set, buffers: set, flat: bool, where: str) -> None:
    op = e.op

    def fail(msg):
        raise IRError(f"{where}: {msg} in {e}")

    for s in e.src:
        if op is Op.LET and s is e.src[0]:
            continue
        _check_expr(s, scope | ({e.src[0]} if op is Op.LET else set()), buffers, flat, where)
    if op is Op.VAR and e not in scope:
        fail(f"variable {e.name!r} is not bound here")
    if op in (Op.TENSOR_READ, Op.REDUCE):
        fail(f"{op.name} is a tensor-expression node; lower the schedule first")
    if op in BINARY_ARITH or op in COMPARE or op in (Op.AND, Op.OR):
        a, b = e.src
        if a.dtype != b.dtype:
            fail(f"{op.name} operands have dtypes {a.dtype} and {b.dtype}")
        want = dt.with_lanes("bool", dt.lanes(a.dtype)) if op in COMPARE else a.dtype
        if e.dtype != want:
            fail(f"{op.name} result dtype {e.dtype}, expected {want}")
        if op in (Op.AND, Op.OR) and not dt.is_bool(a.dtype):
            fail(f"{op.name} needs bool operands")
        if op in (Op.FLOORDIV, Op.FLOORMOD) and not dt.is_int(a.dtype):
            fail(f"{op.name} needs integer operands")
    elif op is Op.NOT and not dt.is_bool(e.src[0].dtype):
        fail("NOT needs a bool operand")
    elif op is Op.SELECT:
        c, a, b = e.src
        if not dt.is_bool(c.dtype) or a.dtype != b.dtype or a.dtype != e.dtype:
            fail("SELECT needs a bool condition and branches of the result dtype")
    elif op is Op.CALL:
        if e.arg not in ir.INTRINSICS and e.arg not in ir.TARGET_INTRINSICS:
            fail(f"unknown intrinsic {e.arg!r}")
        if flat and e.arg == "if_then_else":
            fail("if_then_else must be lowered to IfThenElse")
    elif op is Op.LOAD:
        _check_access(e.arg, e.src, e.dtype, buffers, flat, fail)
    elif op in (Op.RAMP, Op.BROADCAST):
        if any(dt.lanes(s.dtype) != 1 for s in e.src) or dt.lanes(e.dtype) != e.arg:
            fail(f"{op.name} needs scalar operands and {e.arg} lanes")


def _check_access(buf: ir.Buffer, indices, value_dtype: str, buffers: set, flat: bool, fail) -> None:
    if buf not in buffers:
        fail(f"buffer {buf.name!r} is neither a param nor allocated here")
    if flat and len(indices) != 1:
        fail(f"access to {buf.name!r} has {len(indices)} indices after flattening")
    if len(indices) not in (1, len(buf.shape)):
        fail(f"access to {buf.name!r} has {len(indices)} indices for shape {buf.shape}")
    n = dt.lanes(indices[0].dtype)
    if any(not dt.is_int(i.dtype) for i in indices):
        fail(f"indices of {buf.name!r} must be integers")
    if value_dtype != dt.with_lanes(buf.dtype, n):
        fail(f"access to {buf.dtype} buffer {buf.name!r} with {n} lanes has dtype {value_dtype}")


def _check_stmt(s: ir.Stmt, scope: set, buffers: set, flat: bool) -> None:
    where = type(s).__name__

    def ex(e):
        _check_expr(e, scope, buffers, flat, where)

    def fail(msg):
        raise IRError(f"{where}: {msg}")

    if isinstance(s, ir.SeqStmt):
        for c in s.stmts:
            _check_stmt(c, scope, buffers, flat)
    elif isinstance(s, ir.For):
        if s.var in scope:
            fail(f"loop variable {s.var.name!r} is already bound")
        for e in (s.min, s.extent):
            ex(e)
            if e.dtype != s.var.dtype:
                fail(f"loop {s.var.name!r} bound {e} has dtype {e.dtype}, not {s.var.dtype}")
        _check_stmt(s.body, scope | {s.var}, buffers, flat)
    elif isinstance(s, ir.Store):
        for e in (s.value, *s.indices):
            ex(e)
        _check_access(s.buffer, s.indices, s.value.dtype, buffers, flat, fail)
    elif isinstance(s, ir.Allocate):
        _check_stmt(s.body, scope, buffers | {s.buffer}, flat)
    elif isinstance(s, ir.IfThenElse):
        ex(s.cond)
        if s.cond.dtype != "bool":
            fail(f"condition {s.cond} has dtype {s.cond.dtype}, not bool")
        _check_stmt(s.then_case, scope, buffers, flat)
        if s.else_case is not None:
            _check_stmt(s.else_case, scope, buffers, flat)
    elif isinstance(s, ir.LetStmt):
        if s.var in scope:
            fail(f"let variable {s.var.name!r} is already bound")
        ex(s.value)
        _check_stmt(s.body, scope | {s.var}, buffers, flat)
    elif isinstance(s, ir.Evaluate):
        ex(s.value)
    elif isinstance(s, ir.AttrStmt):
        _check_stmt(s.body, scope, buffers, flat)
    else:
        raise IRError(f"not a statement: {s!r}")


def verify(func: ir.PrimFunc, flat: bool = False) -> None:
    """Raise IRError when `func` is malformed (see module docstring); `flat`: after flattening."""
    scope = {p for p in func.params if isinstance(p, ir.Expr)}
    buffers = {p for p in func.params if isinstance(p, ir.Buffer)}
    _check_stmt(func.body, scope, buffers, flat)
