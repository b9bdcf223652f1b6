"""Activations and broadcasting arithmetic: Relu ... Gelu, Clip, Add/Sub/Mul/Div/Pow, Cast, Identity."""

from __future__ import annotations

from onnx import helper

from ...graph.ops import Op


def _unary(op, **fixed):
    return lambda ctx, node, a: ctx.make(node, op, ctx.required(node, 0), **fixed)


def _binary(op):
    return lambda ctx, node, a: ctx.make(node, op, ctx.required(node, 0), ctx.required(node, 1))


def leaky_relu(ctx, node, a):
    return ctx.make(node, Op.LEAKY_RELU, ctx.required(node, 0), alpha=float(a.get("alpha", 0.01)))


def gelu(ctx, node, a):
    approx = a.get("approximate", "none")
    if approx not in ("none", "tanh"):
        raise ctx.fail(node, f"approximate must be 'none' or 'tanh', not {approx!r}")
    return ctx.make(node, Op.GELU, ctx.required(node, 0), approximate=approx)


def clip(ctx, node, a):
    """Clip: min/max as attributes (opset < 11) or optional constant inputs (opset >= 11)."""
    lo, hi = a.get("min"), a.get("max")
    vlo, vhi = ctx.const(node, 1, "min"), ctx.const(node, 2, "max")
    lo = float(vlo) if vlo is not None else lo
    hi = float(vhi) if vhi is not None else hi
    return ctx.make(node, Op.CLIP, ctx.required(node, 0), min=lo, max=hi)


def hard_swish(ctx, node, a):
    return ctx.make(node, Op.HARD_SWISH, ctx.required(node, 0))


def cast(ctx, node, a):
    return ctx.make(node, Op.CAST, ctx.required(node, 0), to=str(helper.tensor_dtype_to_np_dtype(a["to"])))


def identity(ctx, node, a):
    if len(node.output) > 1 and any(node.output[1:]):
        raise ctx.fail(node, "only the first output is supported (inference mode: no dropout mask)")
    return ctx.required(node, 0)


CONVERTERS = {
    "Relu": _unary(Op.RELU), "Sigmoid": _unary(Op.SIGMOID), "Tanh": _unary(Op.TANH),
    "Erf": _unary(Op.ERF), "Sqrt": _unary(Op.SQRT), "LeakyRelu": leaky_relu, "Gelu": gelu,
    "Clip": clip, "HardSwish": hard_swish, "Cast": cast, "Identity": identity, "Dropout": identity,
    "Add": _binary(Op.ADD), "Sub": _binary(Op.SUB), "Mul": _binary(Op.MUL), "Div": _binary(Op.DIV),
    "Pow": _binary(Op.POW),
}
