"""Elementwise GPU kernels over flat arrays, built as tir PrimFuncs.

One thread handles `lanes` consecutive elements (float4 loads and stores for
float32 when n is a multiple of 4); blocks of `threads` threads cover the array,
the last block guarded by `if (i < n)`. float16 inputs are computed in float32
and stored back as float16 (fp16 storage, fp32 arithmetic).
"""

from __future__ import annotations

from typing import Callable, Sequence

from ...tir import dtype as dt
from ...tir import ir
from ...tir.simplify import simplify
from ...tir.ops import ForKind


def _const(value: float, like: ir.Expr) -> ir.Expr:
    """A float constant with the lanes of `like` (a BROADCAST for vectors)."""
    c = ir.const(float(value), dt.element(like.dtype))
    n = dt.lanes(like.dtype)
    return ir.broadcast(c, n) if n > 1 else c


def elementwise(name: str, n: int, fn: Callable[..., ir.Expr], in_dtypes: Sequence[str],
                out_dtype: str | None = None, threads: int = 256, vector: int = 4) -> ir.PrimFunc:
    """out[i] = fn(in_0[i], in_1[i], ...) for i < n; params (in_0, ..., out).

    `fn` receives float32 expressions (float32x`vector` when vectorized) and
    returns one of the same dtype; `_const(v, like)` in this module makes
    matching constants. Raises ValueError on an unknown dtype or n < 1.
    """
    if n < 1:
        raise ValueError(f"n must be at least 1, not {n}")
    for d in in_dtypes:
        if d not in ("float32", "float16"):
            raise ValueError(f"input dtypes must be 'float32' or 'float16', not {d!r}")
    out_dtype = out_dtype or in_dtypes[0]
    lanes = vector if all(d == "float32" for d in (*in_dtypes, out_dtype)) and n % vector == 0 else 1
    ins = [ir.Buffer(f"in{k}", d, (n,)) for k, d in enumerate(in_dtypes)]
    out = ir.Buffer("out", out_dtype, (n,))
    bx, tx = ir.var("bx"), ir.var("tx")
    per_block = threads * lanes
    blocks = -(-n // per_block)
    base = (bx * threads + tx) * lanes
    if lanes > 1:
        idx = ir.ramp(base, 1, lanes)
        vals = [ir.load(b, [idx], lanes) for b in ins]
        body = ir.Store(out, fn(*vals), (idx,))
    else:
        vals = [ir.cast(ir.load(b, [base]), "float32") for b in ins]
        body = ir.Store(out, ir.cast(fn(*vals), out_dtype), (base,))
    if blocks * per_block != n:
        body = ir.IfThenElse(base < n, body)
    body = ir.For(tx, ir.const(0), ir.const(threads), ForKind.SERIAL, body, "threadIdx.x")
    body = ir.For(bx, ir.const(0), ir.const(blocks), ForKind.SERIAL, body, "blockIdx.x")
    return simplify(ir.PrimFunc(name, (*ins, out), body))


def add_relu(n: int, dtype: str = "float32", threads: int = 256) -> ir.PrimFunc:
    """out = max(a + b, 0) over n elements of `dtype`; params (a, b, out) named in0, in1, out."""
    return elementwise(f"add_relu_{dtype}_{n}", n, lambda a, b: ir.max_(a + b, _const(0.0, a)),
                       (dtype, dtype), dtype, threads)


def sigmoid_mul(n: int, dtype: str = "float32", threads: int = 256) -> ir.PrimFunc:
    """out = a * sigmoid(b) (a SiLU-style gate), scalar per thread; params (in0, in1, out)."""
    return elementwise(f"sigmoid_mul_{dtype}_{n}", n,
                       lambda a, b: a * ir.call("sigmoid", "float32", b),
                       (dtype, dtype), dtype, threads, vector=1)
