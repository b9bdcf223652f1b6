"""Integer evaluation of loop-IR index expressions for the VTA code generator.

The VTA backend runs the loops outside instructions at compile time (their
iterations become separate instructions), so every index it needs is a
number; inside an instruction (a DMA copy nest, a uop kernel) it evaluates
indices over the whole iteration grid at once with numpy and checks the
affine form the hardware needs from those numbers.

``evaluate(expr, env)``: ``env`` maps variable names to ints or int64 arrays
(broadcast together). Integer ops follow the IR (floor division/modulo);
comparisons and logic give bool arrays. LOAD, CALL and float dtypes are not
index arithmetic and raise ``CodegenError``.
"""
from __future__ import annotations

import numpy as np

from compiler.tir import ir
from compiler.tir.ops import Op
from vta_hw.errors import VtaError


class CodegenError(VtaError, ValueError):
    """Loop IR that the VTA code generator cannot turn into instructions; the message says why."""


_BIN = {Op.ADD: np.add, Op.SUB: np.subtract, Op.MUL: np.multiply,
        Op.FLOORDIV: np.floor_divide, Op.FLOORMOD: np.mod, Op.MIN: np.minimum,
        Op.MAX: np.maximum, Op.EQ: np.equal, Op.NE: np.not_equal, Op.LT: np.less,
        Op.LE: np.less_equal, Op.GT: np.greater, Op.GE: np.greater_equal,
        Op.AND: np.logical_and, Op.OR: np.logical_or}


def evaluate(e: ir.Expr, env: dict, memo: dict | None = None):
    """The value of index expression ``e`` under ``env`` (int, bool, or numpy array)."""
    memo = {} if memo is None else memo

    def go(x: ir.Expr):
        hit = memo.get(x)
        if hit is not None:
            return hit
        op = x.op
        if op is Op.CONST:
            v = x.arg
        elif op is Op.VAR:
            try:
                v = env[x.arg]
            except KeyError:
                raise CodegenError(f"index variable {x.arg!r} is not bound by an enclosing loop "
                                   "or let; VTA code needs every index computable at compile "
                                   "time") from None
        elif op in _BIN:
            v = _BIN[op](go(x.src[0]), go(x.src[1]))
        elif op is Op.NOT:
            v = np.logical_not(go(x.src[0]))
        elif op is Op.SELECT:
            v = np.where(go(x.src[0]), go(x.src[1]), go(x.src[2]))
        elif op is Op.CAST:
            v = go(x.src[0])
        elif op is Op.LET:
            inner = dict(env)
            inner[x.src[0].arg] = go(x.src[1])
            v = evaluate(x.src[2], inner)
        else:
            raise CodegenError(f"{op.name} in an index expression ({x}); VTA indices must be "
                               "integer arithmetic on loop variables")
        memo[x] = v
        return v

    return go(e)


def flat_offset(buf: ir.Buffer, indices) -> ir.Expr:
    """The flat element offset of ``buf[indices]`` (N-D with strides, or already flat)."""
    if len(indices) == 1:
        return ir.convert(indices[0])
    if len(indices) != len(buf.shape):
        raise CodegenError(f"access to {buf.name!r} with {len(indices)} indices; the buffer "
                           f"has {len(buf.shape)} dimensions")
    out = ir.const(0)
    for i, s in zip(indices, buf.strides):
        out = out + ir.convert(i) * s
    return out


def element_index(buf: ir.Buffer, indices, elem_values: int, env: dict):
    """``buf[indices]`` as an index of whole elements of ``elem_values`` values.

    Raises:
        CodegenError: the offset is not a multiple of ``elem_values``.
    """
    off = np.asarray(evaluate(flat_offset(buf, indices), env), np.int64)
    if np.any(off % elem_values):
        raise CodegenError(f"access to {buf.name!r} at value offset {int(off.flat[0])} is not "
                           f"aligned to its {elem_values}-value elements; instructions move "
                           "whole elements")
    return off // elem_values
