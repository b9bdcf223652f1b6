"""Activations and broadcasting arithmetic: relu ... gelu, hardswish, clamp, add/sub/mul/div/pow,
casts and the identities that inference leaves (clone, alias, dropout)."""

from __future__ import annotations

import numpy as np

from ...graph.ir import Node
from ...graph.ops import Op


def _unary(op, **fixed):
    return lambda ctx, n: ctx.make(n, op, ctx.args(n)["self"], **fixed)


def _binary(op):
    """self (op) other; either may be a Python number (a constant of the other's dtype)."""
    def convert(ctx, n):
        a = ctx.args(n)
        x, y = a["self"], a["other"]
        like = x if isinstance(x, Node) else y
        if a.get("alpha", 1) != 1:
            y = (ctx.make(n, Op.MUL, y, ctx.tensor(n, a["alpha"], y, "alpha"))
                 if isinstance(y, Node) else y * a["alpha"])
        return ctx.make(n, op, ctx.tensor(n, x, like, "self"), ctx.tensor(n, y, like, "other"))
    return convert


def div(ctx, n):
    a = ctx.args(n)
    if a.get("rounding_mode") is not None:
        raise ctx.fail(n, f"rounding_mode={a['rounding_mode']!r} is not supported; only true "
                          "division (rounding_mode=None)")
    return _binary(Op.DIV)(ctx, n)


def gelu(ctx, n):
    a = ctx.args(n)
    return ctx.make(n, Op.GELU, a["self"], approximate=a.get("approximate", "none"))


def clamp(ctx, n):
    a = ctx.args(n)
    lo, hi = a.get("min"), a.get("max")
    return ctx.make(n, Op.CLIP, a["self"], min=None if lo is None else float(lo),
                    max=None if hi is None else float(hi))


def hardtanh(ctx, n):
    a = ctx.args(n)
    return ctx.make(n, Op.CLIP, a["self"], min=float(a["min_val"]), max=float(a["max_val"]))


def leaky_relu(ctx, n):
    a = ctx.args(n)
    return ctx.make(n, Op.LEAKY_RELU, a["self"], alpha=float(a["negative_slope"]))


def rsqrt(ctx, n):
    x = ctx.args(n)["self"]
    return ctx.make(n, Op.DIV, ctx.tensor(n, 1.0, x, "one"), ctx.make(n, Op.SQRT, x))


def reciprocal(ctx, n):
    x = ctx.args(n)["self"]
    return ctx.make(n, Op.DIV, ctx.tensor(n, 1.0, x, "one"), x)


def neg(ctx, n):
    x = ctx.args(n)["self"]
    return ctx.make(n, Op.MUL, x, ctx.tensor(n, -1.0, x, "minus_one"))


def pow_(ctx, n):
    a = ctx.args(n)
    x = a["self"]
    return ctx.make(n, Op.POW, x, ctx.tensor(n, a["exponent"], x, "exponent"))


def to_copy(ctx, n):
    """_to_copy: a dtype cast (or nothing); device and layout changes are no-ops here."""
    import torch
    a = ctx.args(n)
    x, dtype = a["self"], a.get("dtype")
    if dtype is None:
        return x
    to = str(np.dtype(torch.empty((), dtype=dtype).numpy().dtype))
    return x if to == x.dtype else ctx.make(n, Op.CAST, x, to=to)


def identity(ctx, n):
    return ctx.values[n.args[0].name]


CONVERTERS = {
    "aten.relu.default": _unary(Op.RELU), "aten.sigmoid.default": _unary(Op.SIGMOID),
    "aten.tanh.default": _unary(Op.TANH), "aten.erf.default": _unary(Op.ERF),
    "aten.sqrt.default": _unary(Op.SQRT), "aten.hardswish.default": _unary(Op.HARD_SWISH),
    "aten.gelu.default": gelu, "aten.clamp.default": clamp, "aten.hardtanh.default": hardtanh,
    "aten.leaky_relu.default": leaky_relu, "aten.rsqrt.default": rsqrt,
    "aten.reciprocal.default": reciprocal, "aten.neg.default": neg,
    "aten.add.Tensor": _binary(Op.ADD), "aten.add.Scalar": _binary(Op.ADD),
    "aten.sub.Tensor": _binary(Op.SUB), "aten.sub.Scalar": _binary(Op.SUB),
    "aten.mul.Tensor": _binary(Op.MUL), "aten.mul.Scalar": _binary(Op.MUL),
    "aten.div.Tensor": div, "aten.div.Scalar": div, "aten.div.Tensor_mode": div,
    "aten.pow.Tensor_Scalar": pow_,
    "aten.pow.Tensor_Tensor": pow_,
    "aten._to_copy.default": to_copy, "aten.clone.default": identity,
    "aten.alias.default": identity, "aten.detach.default": identity,
    "aten.lift_fresh_copy.default": identity, "aten.dropout.default": identity,
}
