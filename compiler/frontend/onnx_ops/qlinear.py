"""QLinearConv / QLinearMatMul (ONNX's QOperator format) as the QDQ ops they stand for:
DequantizeLinear of the inputs, the float Conv / MatMul (bias: int32 at ``x_scale * w_scale``),
QuantizeLinear of the result. ``compiler.quant.qdq`` then imports the model as a QDQ one."""

from __future__ import annotations

import numpy as np

from ...graph.ops import Op
from .nn import _need_2d, _window_attrs


def _dq(ctx, node, first, axis):
    """DequantizeLinear of inputs ``first`` (value), ``first + 1`` (scale), ``first + 2`` (zero point)."""
    x, scale, zp = (ctx.required(node, first + i) for i in range(3))
    return ctx.make(node, Op.DEQUANTIZE, x, scale, zp, axis=axis if int(np.prod(scale.shape)) > 1 else 0)


def _q(ctx, node, y, first):
    """QuantizeLinear of float ``y`` to the scale / zero point at inputs ``first``, ``first + 1``."""
    scale, zp = ctx.required(node, first), ctx.required(node, first + 1)
    return ctx.make(node, Op.QUANTIZE, y, scale, zp, axis=1 if len(y.shape) > 1 else 0, to=zp.dtype)


def qlinear_conv(ctx, node, a):
    x, w = _dq(ctx, node, 0, 1), _dq(ctx, node, 3, 0)
    _need_2d(ctx, node, x)
    kernel = tuple(a.get("kernel_shape", w.shape[2:]))
    y = ctx.make(node, Op.CONV2D, x, w, groups=int(a.get("group", 1)), **_window_attrs(ctx, node, a, x, kernel))
    b = ctx.const(node, 8, "bias")
    if b is not None:
        xs = ctx.const(node, 1, "x_scale").astype(np.float32)
        ws = ctx.const(node, 4, "w_scale").astype(np.float32).reshape(-1)
        bias = (b.astype(np.float32) * (xs * ws)).astype(np.float32).reshape(-1, 1, 1)
        y = ctx.make(node, Op.ADD, y, ctx.param(bias, f"{node.name}_bias"))
    return _q(ctx, node, y, 6)


def qlinear_matmul(ctx, node, a):
    x, w = _dq(ctx, node, 0, 1), _dq(ctx, node, 3, 1)
    if w.op is Op.PARAM and len(w.shape) == 2 and len(x.shape) >= 2:
        y = ctx.make(node, Op.DENSE, x, ctx.make(node, Op.TRANSPOSE, w, perm=(1, 0)))
    else:
        y = ctx.make(node, Op.MATMUL, x, w)
    return _q(ctx, node, y, 6)


CONVERTERS = {"QLinearConv": qlinear_conv, "QLinearMatMul": qlinear_matmul}
