"""Which index expressions are exactly affine in a set of loop variables.

A DMA copy's two innermost loops (``dma.py``) become one 2-D LOAD/STORE when both
sides' element indices are affine in them. Where an index is built from the loop
variables only by ``+``, ``-`` and ``*`` with a factor free of them (anything else,
such as ``//``, ``%``, ``min`` or ``select``, reads none of them, or its quotients
cancel as a fused axis's do), it *is* affine for every value of the other
variables, so three evaluations at scalar points give its base and its two steps
exactly, and the code generator skips evaluating it over the copy's whole
iteration grid.
"""
from __future__ import annotations

import functools

from compiler.tir import ir
from compiler.tir.ops import Op

_LINEAR = frozenset({Op.ADD, Op.SUB})


def _reads(e: ir.Expr, names: frozenset) -> bool:
    """Whether ``e`` reads a variable of ``names``."""
    if e.op is Op.VAR:
        return e.arg in names
    return any(_reads(c, names) for c in e.src if isinstance(c, ir.Expr))


@functools.lru_cache(maxsize=1 << 12)
def is_affine(e: ir.Expr, names: frozenset) -> bool:
    """Whether integer expression ``e`` is affine in the variables ``names`` (module
    docstring): for fixed values of its other variables, ``e(v + d) == e(v) + sum of
    step_k * d_k`` for all integer ``v`` and ``d``. A sufficient test, not a complete
    one: ``names`` reached only through ``+``, ``-`` and ``*`` by factors free of them,
    or through quotients and remainders that cancel (``_quotients_cancel``)."""
    def go(x: ir.Expr) -> bool:
        if not x.dtype.startswith(("int", "uint")):
            return not _reads(x, names)
        if x.op in (Op.CONST, Op.VAR):
            return True
        if x.op in _LINEAR:
            return go(x.src[0]) and go(x.src[1])
        if x.op is Op.MUL:
            a, b = x.src
            return (go(a) and not _reads(b, names)) or (go(b) and not _reads(a, names))
        if x.op is Op.CAST:             # evaluate ignores casts
            return go(x.src[0])
        return not _reads(x, names)
    return go(e) or _quotients_cancel(e, names)


def _quotients_cancel(e: ir.Expr, names: frozenset) -> bool:
    """Whether ``e`` is an integer combination of ``names``, of quotients ``n // c`` and of
    remainders ``n % c`` (``c`` a positive constant) in which, with ``n % c`` written
    ``n - c * (n // c)``, every quotient reading ``names`` has coefficient 0: ``e`` is
    then affine in ``names`` everywhere (a fused axis: ``(x // 3) * 48 + (x % 3) * 16``
    is ``x * 16``)."""
    def lin(x: ir.Expr) -> dict | None:
        if not _reads(x, names):
            return {}
        if x.op is Op.VAR:
            return {x.arg: 1}
        if x.op is Op.CAST:
            return lin(x.src[0])
        if x.op in _LINEAR or x.op is Op.MUL:
            a, b = x.src
            if x.op is Op.MUL:
                if b.op is Op.CONST and type(b.arg) is int:
                    a, b = b, a
                la = lin(b)
                if not (a.op is Op.CONST and type(a.arg) is int) or la is None:
                    return None
                return {k: v * a.arg for k, v in la.items()}
            la, lb = lin(a), lin(b)
            if la is None or lb is None:
                return None
            sign = 1 if x.op is Op.ADD else -1
            out = dict(la)
            for k, v in lb.items():
                out[k] = out.get(k, 0) + sign * v
            return out
        if (x.op in (Op.FLOORDIV, Op.FLOORMOD) and x.src[1].op is Op.CONST
                and type(x.src[1].arg) is int and x.src[1].arg > 0):
            q = (x.src[0], x.src[1].arg)
            if x.op is Op.FLOORDIV:
                return {q: 1}
            out = lin(x.src[0])
            if out is None:
                return None
            out = dict(out)
            out[q] = out.get(q, 0) - x.src[1].arg
            return out
        return None
    form = lin(e)
    return form is not None and all(v == 0 for k, v in form.items() if isinstance(k, tuple))


#: comparison -> (sign, shift): ``a OP b`` holds iff ``sign * (a - b) + shift < 0`` (ints)
_CMP = {Op.LT: (1, 0), Op.LE: (1, -1), Op.GT: (-1, 0), Op.GE: (-1, -1)}


@functools.lru_cache(maxsize=1 << 12)
def comparisons(cond: ir.Expr, names: frozenset) -> tuple | None:
    """``cond`` as a conjunction of ``(sign, shift, a, b)`` (``a OP b`` holds iff
    ``sign * (a - b) + shift < 0``, ``a`` and ``b`` affine in ``names``), or None when it
    is not one (then it is evaluated over the grid)."""
    if cond.op is Op.AND:
        left, right = comparisons(cond.src[0], names), comparisons(cond.src[1], names)
        return None if left is None or right is None else left + right
    if cond.op in _CMP and all(is_affine(x, names) for x in cond.src):
        return (_CMP[cond.op] + tuple(cond.src),)
    return None


def interval(step: int, value: int, n: int) -> tuple[int, int]:
    """``[lo, hi)``: the ``t`` in ``[0, n)`` where ``step * t + value < 0`` (ints); empty
    intervals have ``lo >= hi``."""
    if step == 0:
        return (0, n) if value < 0 else (0, 0)
    if step > 0:                         # t < -value / step
        return 0, min(n, -(value // step))
    return max(0, value // -step + 1), n  # t > value / -step
