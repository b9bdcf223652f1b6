"""Row softmax on GPUs: Y[r, :] = exp(X[r, :] - max) / sum(exp(X[r, :] - max)), one block per row.

Built as a tir PrimFunc. Each of `threads` threads strides over the row keeping
a running max (then sum) in a register; the per-thread partials meet in a
shared array reduced as a tree (log2(threads) steps, each halving the active
threads). Barriers come from `codegen.gpu_barriers`: one between tree steps,
around the read of the result, and before the array is reused for the sum.
float16 X/Y are read and written as float16, all arithmetic is float32.
"""

from __future__ import annotations

import math

from ...tir import ir
from ...tir.simplify import simplify
from ...tir.ops import ForKind

_S = ForKind.SERIAL


def softmax_rows(rows: int, cols: int, dtype: str = "float32", threads: int = 128,
                 name: str | None = None) -> ir.PrimFunc:
    """Softmax over the last axis of X [rows, cols]; params (X, Y), both `dtype`.

    Raises ValueError unless `threads` is a power of two and dtype is float32/float16.
    """
    if threads < 2 or threads & (threads - 1):
        raise ValueError(f"threads must be a power of two >= 2, not {threads}")
    if dtype not in ("float32", "float16"):
        raise ValueError(f"dtype must be 'float32' or 'float16', not {dtype!r}")
    X = ir.Buffer("X", dtype, (rows, cols))
    Y = ir.Buffer("Y", dtype, (rows, cols))
    red = ir.Buffer("red", "float32", (threads,), scope="shared")
    acc = ir.Buffer("acc", "float32", (1,), scope="local")
    stat = ir.Buffer("stat", "float32", (2,), scope="local")   # [max, sum]
    r, tx = ir.var("r"), ir.var("tx")
    steps = -(-cols // threads)
    names = iter(range(1000))

    def over_row(make):   # for c in steps: if (col < cols) make(col)
        c = ir.var(f"c{next(names)}")
        col = c * threads + tx
        body = make(col)
        if steps * threads != cols:
            body = ir.IfThenElse(col < cols, body)
        return ir.For(c, ir.const(0), ir.const(steps), _S, body)

    def x(col):
        return ir.cast(ir.load(X, [r * cols + col]), "float32")

    def tree(combine):
        out = [ir.Store(red, ir.load(acc, [0]), (tx,))]
        s = threads // 2
        while s >= 1:
            out.append(ir.IfThenElse(tx < s, ir.Store(
                red, combine(ir.load(red, [tx]), ir.load(red, [tx + s])), (tx,))))
            s //= 2
        return out

    a0 = ir.load(acc, [0])
    mx = ir.load(stat, [0])
    body = ir.seq(
        ir.Store(acc, ir.const(-math.inf), (ir.const(0),)),
        over_row(lambda col: ir.Store(acc, ir.max_(a0, x(col)), (ir.const(0),))),
        *tree(ir.max_),
        ir.Store(stat, ir.load(red, [0]), (ir.const(0),)),
        ir.Store(acc, ir.const(0.0), (ir.const(0),)),
        over_row(lambda col: ir.Store(acc, a0 + ir.call("exp", "float32", x(col) - mx), (ir.const(0),))),
        *tree(lambda a, b: a + b),
        ir.Store(stat, ir.const(1.0) / ir.load(red, [0]), (ir.const(1),)),
        over_row(lambda col: ir.Store(
            Y, ir.cast(ir.call("exp", "float32", x(col) - mx) * ir.load(stat, [1]), dtype),
            (r * cols + col,))),
    )
    body = ir.Allocate(red, ir.Allocate(acc, ir.Allocate(stat, body)))
    body = ir.For(tx, ir.const(0), ir.const(threads), _S, body, "threadIdx.x")
    body = ir.For(r, ir.const(0), ir.const(rows), _S, body, "blockIdx.x")
    return simplify(ir.PrimFunc(name or f"softmax_{dtype}_{rows}x{cols}", (X, Y), body))
