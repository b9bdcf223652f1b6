"""Reductions and normalizations: sum / prod / max / min / mean over axes, global average pool,
softmax, layer norm.

Inputs are :class:`~compiler.topi.injective.Lazy` (a fused group's injective
producers are inlined into the reduction's body). Each returns the output
tensor; the helper stages (max, sum, mean, variance) are separate ``te``
stages which the schedules below attach to the output's outer loop.
"""
from __future__ import annotations

import numpy as np

from compiler import te
from compiler.tir import ir

from .injective import Lazy


_TE_REDUCERS = {"sum": te.sum, "prod": te.prod, "max": te.max, "min": te.min}


def reduce(x: Lazy, axes, keepdims=True, combiner="sum", name="reduce"):
    """``combiner`` (sum, prod, max, min) of ``x`` over ``axes`` (distinct, non-negative), in
    ``x``'s dtype; shape as numpy with ``keepdims``."""
    axes = tuple(axes)
    rax = {a: te.reduce_axis(x.shape[a], f"r{a}") for a in axes}
    if keepdims:
        shape = tuple(1 if i in axes else d for i, d in enumerate(x.shape))
    else:
        shape = tuple(d for i, d in enumerate(x.shape) if i not in axes)
    kept = [i for i in range(len(x.shape)) if i not in axes]

    def read(idx):
        return x(*(rax[i] if i in rax else idx[i] if keepdims else idx[kept.index(i)]
                   for i in range(len(x.shape))))
    fn = _TE_REDUCERS[combiner]
    return te.compute(shape, lambda *idx: fn(read(idx), axis=tuple(rax.values())), name=name)


def reduce_mean(x: Lazy, axes, keepdims=True, name="mean"):
    """Mean of ``x`` over ``axes`` (distinct, non-negative); shape as numpy with ``keepdims``."""
    total = reduce(x, axes, keepdims, "sum", name + "_sum")
    inv = ir.const(1.0 / int(np.prod([x.shape[a] for a in axes])), x.dtype)
    return te.compute(total.shape, lambda *idx: total[idx] * inv, name=name)


def global_avg_pool(x: Lazy, name="gap"):
    """Mean over every axis after the first two, kept as size 1."""
    return reduce_mean(x, tuple(range(2, len(x.shape))), True, name)


def softmax(x: Lazy, axis: int, name="softmax"):
    """``exp(x - max) / sum(exp(x - max))`` along ``axis``."""
    shape = x.shape
    red_shape = tuple(1 if i == axis else d for i, d in enumerate(shape))

    def sub(idx, r):
        return tuple(r if i == axis else idx[i] for i in range(len(shape)))
    k1 = te.reduce_axis(shape[axis], "k1")
    mx = te.compute(red_shape, lambda *idx: te.max(x(*sub(idx, k1)), axis=k1), name=name + "_max")
    e = te.compute(shape, lambda *idx: te.exp(x(*idx) - mx[sub(idx, 0)]), name=name + "_exp")
    k2 = te.reduce_axis(shape[axis], "k2")
    sm = te.compute(red_shape, lambda *idx: te.sum(e[sub(idx, k2)], axis=k2), name=name + "_sum")
    return te.compute(shape, lambda *idx: e[idx] / sm[sub(idx, 0)], name=name)


def layer_norm(x: Lazy, scale: Lazy, bias: "Lazy | None", axis: int, epsilon: float, name="ln"):
    """Normalise over axes ``[axis, rank)`` (biased variance), then ``* scale + bias``."""
    from .injective import broadcast_read
    shape = x.shape
    rank = len(shape)
    red_shape = shape[:axis] + (1,) * (rank - axis)
    count = int(np.prod(shape[axis:]))
    inv = ir.const(1.0 / count, x.dtype)
    r1 = [te.reduce_axis(shape[a], f"a{a}") for a in range(axis, rank)]
    mean_s = te.compute(red_shape, lambda *idx: te.sum(x(*idx[:axis], *r1), axis=tuple(r1)),
                        name=name + "_sum")
    r2 = [te.reduce_axis(shape[a], f"b{a}") for a in range(axis, rank)]

    def sq(idx):
        d = x(*idx[:axis], *r2) - mean_s[idx] * inv
        return d * d
    var_s = te.compute(red_shape, lambda *idx: te.sum(sq(idx), axis=tuple(r2)), name=name + "_var")
    eps = ir.const(epsilon, x.dtype)
    zero = (0,) * (rank - axis)

    def out(*idx):
        m = mean_s[idx[:axis] + zero] * inv
        v = var_s[idx[:axis] + zero] * inv
        y = (x(*idx) - m) / te.sqrt(v + eps) * broadcast_read(scale, shape, idx)
        if bias is not None:
            y = y + broadcast_read(bias, shape, idx)
        return y
    return te.compute(shape, out, name=name)


def schedule_reduction(s, out):
    """Every helper stage at the root; the output's outer axes fused and run in parallel when
    large; innermost axis vectorised when it is a multiple of 16 and not reduced."""
    axes = s[out].op.axis
    if len(axes) >= 2:
        outer = s[out].fuse(*axes[:-1]) if len(axes) > 2 else axes[0]
        if int(np.prod(out.shape)) >= 4096:
            s[out].parallel(outer)
    return s
