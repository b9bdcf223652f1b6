"""Which index expressions are exactly affine in a set of loop variables.

A DMA copy's two innermost loops (``dma.py``) become one 2-D LOAD/STORE when both
sides' element indices are affine in them. Where an index is built from the loop
variables only by ``+``, ``-`` and ``*`` with a factor free of them (anything else,
such as ``//``, ``%``, ``min`` or ``select``, reads none of them), it *is* affine for
every value of the other variables, so three evaluations at scalar points give its
base and its two steps exactly, and the code generator skips evaluating it over
the copy's whole iteration grid.
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
def affine_guards(e: ir.Expr, names: frozenset) -> tuple | None:
    """Whether integer expression ``e`` is affine in the variables ``names`` (module
    docstring): for fixed values of its other variables, ``e(v + d) == e(v) + sum of
    step_k * d_k``. None: not shown affine (a sufficient test, not a complete one).
    Else the *guards*: ``(numerator, divisor)`` of each ``//`` or ``%`` by a positive
    constant whose numerator reads ``names`` (innermost first); ``e`` is affine over a
    box of values of ``names`` where each guard's quotient is one value over the box
    (``% c`` is then ``numerator - c * quotient``). ``()``: affine everywhere."""
    guards: list = []

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
        if not _reads(x, names):
            return True
        if (x.op in (Op.FLOORDIV, Op.FLOORMOD) and x.src[1].op is Op.CONST
                and type(x.src[1].arg) is int and x.src[1].arg > 0 and go(x.src[0])):
            guards.append((x.src[0], x.src[1].arg))
            return True
        return False
    return tuple(guards) if go(e) else None


def is_affine(e: ir.Expr, names: frozenset) -> bool:
    """Whether ``e`` is affine in ``names`` everywhere (``affine_guards`` without guards)."""
    return affine_guards(e, names) == ()


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
