"""Injective operators (elementwise, broadcast, data movement) as index functions, and the
CPU schedule of an injective kernel.

An injective op never needs its own loop nest: output element ``idx`` is an
expression of a few input elements. So they are built on :class:`Lazy`, a
shape + dtype + ``fn(indices) -> Expr``; a fused group composes them and only
the group's result becomes a ``te.compute`` (:meth:`Lazy.materialize`). This
is ``compute_inline`` done while declaring, so a complex op's epilogue reads
its accumulator directly (which ``compute_at`` needs).

Broadcasting follows numpy/ONNX multidirectional rules. Index expressions use
floor division and modulo (``//``, ``%``), which the loop-IR simplifier folds
for split loops.
"""
from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Callable

import numpy as np

from compiler import te
from compiler.tir import ir


@dataclass(frozen=True)
class Lazy:
    """A tensor not yet materialised: ``fn(*indices)`` is its element at ``indices``."""

    shape: tuple
    dtype: str
    fn: Callable

    @staticmethod
    def of(t) -> "Lazy":
        """The Lazy view of a te Tensor."""
        return Lazy(tuple(t.shape), t.dtype, lambda *idx: t[idx])

    def __call__(self, *idx):
        return self.fn(*idx)

    def materialize(self, name: str):
        """A ``te.compute`` holding this tensor."""
        fn = self.fn
        return te.compute(self.shape, lambda *idx: fn(*idx), name=name)


def const(value, dtype: str):
    return ir.const(value, dtype)


def broadcast_read(x: Lazy, out_shape, idx):
    """Element of ``x`` at output position ``idx`` under numpy broadcasting to ``out_shape``."""
    off = len(out_shape) - len(x.shape)
    sub = [ir.const(0, "int32") if d == 1 and out_shape[off + i] != 1 else idx[off + i]
           for i, d in enumerate(x.shape)]
    return x(*sub)


# ---------------------------------------------------------------- elementwise
def unary(x: Lazy, f: Callable, dtype: "str | None" = None) -> Lazy:
    return Lazy(x.shape, dtype or x.dtype, lambda *idx: f(x(*idx)))


def relu(x):
    return unary(x, lambda v: te.maximum(v, const(0, x.dtype)))


def leaky_relu(x, alpha):
    return unary(x, lambda v: ir.select(v >= const(0, x.dtype), v, v * const(alpha, x.dtype)))


def clip(x, lo=None, hi=None):
    def f(v):
        if lo is not None:
            v = te.maximum(v, const(lo, x.dtype))
        if hi is not None:
            v = te.minimum(v, const(hi, x.dtype))
        return v
    return unary(x, f)


def sigmoid(x):
    one = const(1.0, x.dtype)
    return unary(x, lambda v: one / (one + te.exp(const(0.0, x.dtype) - v)))


def tanh(x):
    return unary(x, te.tanh)


def erf(x):
    return unary(x, te.erf)


def sqrt(x):
    return unary(x, te.sqrt)


def exp(x):
    return unary(x, te.exp)


def log(x):
    return unary(x, te.log)


def absolute(x):
    if np.issubdtype(np.dtype(x.dtype), np.floating):
        return unary(x, te.fabs)
    return unary(x, lambda v: ir.select(v < const(0, x.dtype), const(0, x.dtype) - v, v))


def negative(x):
    return unary(x, lambda v: const(0, x.dtype) - v)


def logical_not(x):
    return unary(x, lambda v: ~v)


def gelu(x, approximate="none"):
    d = x.dtype
    half, one = const(0.5, d), const(1.0, d)
    if approximate == "tanh":
        c, k = const(math.sqrt(2 / math.pi), d), const(0.044715, d)
        return unary(x, lambda v: half * v * (one + te.tanh(c * (v + k * v * v * v))))
    inv = const(1 / math.sqrt(2.0), d)
    return unary(x, lambda v: half * v * (one + te.erf(v * inv)))


def hard_swish(x):
    d = x.dtype
    return unary(x, lambda v: v * te.minimum(te.maximum(v / const(6.0, d) + const(0.5, d),
                                                         const(0.0, d)), const(1.0, d)))


def cast(x, dtype):
    return unary(x, lambda v: te.cast(v, dtype), dtype)


_BIN = {"ADD": lambda a, b: a + b, "SUB": lambda a, b: a - b, "MUL": lambda a, b: a * b,
        "DIV": lambda a, b: a / b, "POW": lambda a, b: te.power(a, b),
        "EQUAL": ir.eq, "LESS": lambda a, b: a < b, "GREATER": lambda a, b: a > b}
_COMPARE = ("EQUAL", "LESS", "GREATER")


def _trunc_div(a, b):
    """Integer division rounding toward zero (ONNX Div on integers), from floor division."""
    q, r = a // b, a % b
    fix = ir.logical_and(ir.ne(r, 0), ir.ne(a < 0, b < 0))
    return ir.select(fix, q + 1, q)


def binary(op: str, a: Lazy, b: Lazy, out_shape) -> Lazy:
    """``op`` in ADD, SUB, MUL, DIV, POW, EQUAL, LESS, GREATER with numpy broadcasting to
    ``out_shape`` (integer DIV truncates toward zero, as ONNX; comparisons give bool)."""
    f = _BIN[op]
    if op == "DIV" and not np.issubdtype(np.dtype(a.dtype), np.floating):
        f = _trunc_div
    out_shape = tuple(out_shape)
    if op == "POW" and b.dtype != a.dtype:
        b = cast(b, a.dtype)
    return Lazy(out_shape, "bool" if op in _COMPARE else a.dtype,
                lambda *idx: f(broadcast_read(a, out_shape, idx), broadcast_read(b, out_shape, idx)))


def where(cond: Lazy, a: Lazy, b: Lazy, out_shape) -> Lazy:
    """``a`` where ``cond`` holds, else ``b``; numpy broadcasting of all three to ``out_shape``."""
    out_shape = tuple(out_shape)
    return Lazy(out_shape, a.dtype, lambda *idx: ir.select(broadcast_read(cond, out_shape, idx),
                                                           broadcast_read(a, out_shape, idx),
                                                           broadcast_read(b, out_shape, idx)))


def broadcast_to(x: Lazy, out_shape) -> Lazy:
    """``x`` broadcast (numpy rules) to ``out_shape``."""
    out_shape = tuple(out_shape)
    return Lazy(out_shape, x.dtype, lambda *idx: broadcast_read(x, out_shape, idx))


# ---------------------------------------------------------------- data movement
def _flat(idx, shape):
    out = idx[0]
    for i, d in zip(idx[1:], shape[1:]):
        out = out * d + i
    return out


def _unflat(flat, shape):
    idx = []
    for d in reversed(shape):
        idx.append(flat % d if d != 1 else ir.const(0, "int32"))
        flat = flat // d
    return list(reversed(idx))


def reshape(x: Lazy, newshape) -> Lazy:
    newshape = tuple(newshape)
    if tuple(d for d in newshape if d != 1) == tuple(d for d in x.shape if d != 1):
        # only unit axes move: map the non-unit indices through
        keep = [i for i, d in enumerate(newshape) if d != 1]
        src_keep = [i for i, d in enumerate(x.shape) if d != 1]

        def f(*idx):
            sub = [ir.const(0, "int32")] * len(x.shape)
            for si, oi in zip(src_keep, keep):
                sub[si] = idx[oi]
            return x(*sub)
        return Lazy(newshape, x.dtype, f)
    return Lazy(newshape, x.dtype, lambda *idx: x(*_unflat(_flat(idx, newshape), x.shape)))


def transpose(x: Lazy, perm) -> Lazy:
    shape = tuple(x.shape[p] for p in perm)

    def f(*idx):
        sub = [None] * len(perm)
        for o, p in enumerate(perm):
            sub[p] = idx[o]
        return x(*sub)
    return Lazy(shape, x.dtype, f)


def strided_slice(x: Lazy, begin, step, out_shape) -> Lazy:
    """``x[b0::s0, b1::s1, ...]`` cut to ``out_shape`` (the graph's normalized SLICE)."""
    return Lazy(tuple(out_shape), x.dtype,
                lambda *idx: x(*(b + i * s if s != 1 else b + i for i, b, s in zip(idx, begin, step))))


def concat(xs: "list[Lazy]", axis: int, out_shape) -> Lazy:
    out_shape = tuple(out_shape)

    def f(*idx):
        offsets, o = [], 0
        for x in xs:
            offsets.append(o)
            o += x.shape[axis]
        i = idx[axis]
        expr = None
        for x, off in reversed(list(zip(xs, offsets))):
            sub = list(idx)
            sub[axis] = i - off
            val = x(*sub)
            expr = val if expr is None else te.if_then_else(i < off + x.shape[axis], val, expr)
        return expr
    return Lazy(out_shape, xs[0].dtype, f)


def pad(x: Lazy, pads, mode="constant", value=0.0) -> Lazy:
    rank = len(x.shape)
    begins, ends = pads[:rank], pads[rank:]
    shape = tuple(d + b + e for d, b, e in zip(x.shape, begins, ends))

    def f(*idx):
        sub, conds = [], []
        for i, (d, b, e) in enumerate(zip(x.shape, begins, ends)):
            j = idx[i] - b if b else idx[i]
            if mode == "constant":
                if b:
                    conds.append(j >= 0)
                if e:
                    conds.append(j < d)
            elif mode == "edge":
                j = te.minimum(te.maximum(j, 0), d - 1)
            elif mode == "reflect":
                j = ir.select(j < 0, 0 - j, j)
                j = ir.select(j >= d, 2 * (d - 1) - j, j)
            elif mode == "wrap":
                j = (j + d) % d
            sub.append(j)
        if mode == "constant" and conds:
            return te.if_then_else(ir.logical_and(*conds), x(*sub), const(value, x.dtype))
        return x(*sub)
    return Lazy(shape, x.dtype, f)


def take(data: Lazy, indices: Lazy, axis: int) -> Lazy:
    shape = data.shape[:axis] + indices.shape + data.shape[axis + 1:]
    ni = len(indices.shape)
    dim = data.shape[axis]

    def f(*idx):
        j = te.cast(indices(*idx[axis:axis + ni]), "int32")
        j = ir.select(j < 0, j + dim, j)
        return data(*idx[:axis], j, *idx[axis + ni:])
    return Lazy(shape, data.dtype, f)


_TOKEN = re.compile(r"(\d*)([A-Za-z])")


def layout_transform(x: Lazy, src_layout: str, dst_layout: str, out_shape) -> Lazy:
    """Move between layouts such as NCHW <-> NCHW16c, OIHW <-> OIHW16i16o (TVM notation)."""
    src = [(c, int(n) if n else 0) for n, c in _TOKEN.findall(src_layout)]
    dst = [(c, int(n) if n else 0) for n, c in _TOKEN.findall(dst_layout)]
    out_shape = tuple(out_shape)
    dst_blocks = {c.upper(): n for c, n in dst if n}
    src_blocks = {c.upper(): n for c, n in src if n}

    def f(*idx):
        primal = {}
        for (c, _), i in zip(dst, idx):
            if c.isupper():
                primal[c] = primal.get(c, 0) + i * dst_blocks.get(c, 1)
            else:
                primal[c.upper()] = primal.get(c.upper(), 0) + i
        sub = []
        for c, n in src:
            if c.isupper():
                b = src_blocks.get(c)
                sub.append(primal[c] // b if b else primal[c])
            else:
                sub.append(primal[c.upper()] % n)
        return x(*sub)
    return Lazy(out_shape, x.dtype, f)


# ---------------------------------------------------------------- schedule
def schedule_injective(s, out, vector: int = 16):
    """CPU schedule of an injective kernel: the outer axes fused and run in parallel,
    the last axis split by ``vector`` lanes and vectorised (when it divides)."""
    axes = list(s[out].op.axis)
    total = int(np.prod(out.shape))
    last = out.shape[-1]
    inner = None
    if last % vector == 0 and last >= vector:
        outer_last, inner = s[out].split(axes[-1], factor=vector)
        axes = axes[:-1] + [outer_last]
    elif last in (4, 8):
        inner = axes[-1]
        axes = axes[:-1]
    if inner is not None:
        s[out].vectorize(inner)
    if len(axes) >= 2:
        fused = s[out].fuse(*axes[:-1]) if len(axes) > 2 else axes[0]
        if total >= 4096:
            s[out].parallel(fused)
    elif len(axes) == 1 and total >= 4096 * vector:
        s[out].parallel(axes[0])
    return s


# ---------------------------------------------------------------- quantization
def _per_axis_read(v: Lazy, idx, axis: int):
    if len(v.shape) == 0:
        return v()
    if int(np.prod(v.shape)) == 1:
        return v(*([ir.const(0, "int32")] * len(v.shape)))
    return v(idx[axis])


def quantize(x: Lazy, scale: Lazy, zero_point: Lazy, axis: int, to: str) -> Lazy:
    """ONNX QuantizeLinear: ``saturate(round_half_even(x / scale) + zero_point)`` in ``to``."""
    info = np.iinfo(to)

    def f(*idx):
        q = ir.call("round", "float32", te.cast(x(*idx), "float32")
                    / te.cast(_per_axis_read(scale, idx, axis), "float32"))
        q = q + te.cast(_per_axis_read(zero_point, idx, axis), "float32")
        q = te.minimum(te.maximum(q, const(float(info.min), "float32")), const(float(info.max), "float32"))
        return te.cast(q, to)
    return Lazy(x.shape, to, f)


def dequantize(x: Lazy, scale: Lazy, zero_point: Lazy, axis: int) -> Lazy:
    """ONNX DequantizeLinear: ``(x - zero_point) * scale`` in the scale's dtype."""
    def f(*idx):
        diff = te.cast(x(*idx), "int32") - te.cast(_per_axis_read(zero_point, idx, axis), "int32")
        return te.cast(diff, "float32") * te.cast(_per_axis_read(scale, idx, axis), "float32")
    return Lazy(x.shape, scale.dtype, lambda *idx: te.cast(f(*idx), scale.dtype))


# ---------------------------------------------------------------- resize
def resize_tables(in_shape, attrs) -> list:
    """Per resized axis, compile-time tables for :func:`resize`: ``(axis, i0, i1, w)`` with
    int32 source indices and float32 weights of ``i1`` (nearest: ``i1 = i0``, ``w = 0``).
    Coordinates follow ``compiler.graph.opdefs.resize`` exactly (float64)."""
    from compiler.graph.opdefs.resize import _nearest, source_coords
    tables = []
    for ax, (n_in, n_out, scale) in enumerate(zip(in_shape, attrs["sizes"], attrs["scales"])):
        if n_in == n_out and scale == 1.0:
            continue
        c = source_coords(n_out, n_in, scale, attrs["coordinate_transformation_mode"])
        if attrs["mode"] == "nearest":
            i0 = np.clip(_nearest(c, attrs["nearest_mode"]), 0, n_in - 1).astype(np.int32)
            tables.append((ax, i0, None, None))
            continue
        c = np.clip(c, 0, n_in - 1)
        i0 = np.floor(c).astype(np.int64)
        i1 = np.minimum(i0 + 1, n_in - 1)
        tables.append((ax, i0.astype(np.int32), i1.astype(np.int32), (c - i0).astype(np.float32)))
    return tables


def resize(x: Lazy, out_shape, tables) -> Lazy:
    """Separable nearest / linear resize; ``tables`` as from :func:`resize_tables` with the
    arrays replaced by Lazy readers (constant kernel inputs)."""
    y = x
    for ax, i0, i1, w in tables:
        shape = list(y.shape)
        shape[ax] = i0.shape[0]

        def step(*idx, y=y, ax=ax, i0=i0, i1=i1, w=w):
            j = idx[ax]
            lo = list(idx)
            lo[ax] = i0(j)
            if i1 is None:
                return y(*lo)
            hi = list(idx)
            hi[ax] = i1(j)
            wv = w(j)
            return y(*lo) * (const(1.0, "float32") - wv) + y(*hi) * wv
        y = Lazy(tuple(shape), x.dtype, step)
    return y
