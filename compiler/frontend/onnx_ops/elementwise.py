"""Activations, math and broadcasting arithmetic: Relu ... Gelu, Clip, Exp/Log/Abs/Neg, Add/Sub/Mul/Div/Pow,
n-ary Sum, comparisons, Not, Where, Cast, Identity, Dropout (inference: identity, mask all true).

Elu, Selu, PRelu, Softplus and Mish are compositions of graph ops (WHERE, LESS, EXP, LOG,
ABS, ...), which the fusion pass puts back into one kernel.
"""

from __future__ import annotations

import numpy as np
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
    return ctx.required(node, 0)


def dropout(ctx, node, a):
    """Inference: the output is the input and the mask (if asked for) is all true."""
    x = ctx.required(node, 0)
    training = ctx.const(node, 2, "training_mode")
    if training is not None and bool(np.asarray(training).reshape(-1)[0]):
        raise ctx.fail(node, "training_mode=1 is not supported; export the model in inference mode")
    if len(node.output) < 2 or not node.output[1]:
        return x
    return x, ctx.param(np.ones(x.shape, np.bool_), f"{node.name or 'dropout'}_mask")


def _scalar(ctx, node, value, x, what):
    return ctx.param(np.asarray(value, x.dtype), f"{node.name or node.op_type.lower()}_{what}")


def sum_(ctx, node, a):
    """n-ary Sum: a chain of broadcasting ADDs."""
    src = [ctx.required(node, i) for i in range(len(node.input))]
    out = src[0]
    for s in src[1:]:
        out = ctx.make(node, Op.ADD, out, s)
    return out


def softplus_of(ctx, node, x):
    """log(1 + exp(x)) as relu(x) + log(1 + exp(-|x|)) (no overflow for large |x|)."""
    one = _scalar(ctx, node, 1.0, x, "one")
    tail = ctx.make(node, Op.LOG, ctx.make(node, Op.ADD, one, ctx.make(
        node, Op.EXP, ctx.make(node, Op.NEG, ctx.make(node, Op.ABS, x)))))
    return ctx.make(node, Op.ADD, ctx.make(node, Op.RELU, x), tail)


def softplus(ctx, node, a):
    return softplus_of(ctx, node, ctx.required(node, 0))


def mish(ctx, node, a):
    x = ctx.required(node, 0)
    return ctx.make(node, Op.MUL, x, ctx.make(node, Op.TANH, softplus_of(ctx, node, x)))


def _negative_part(ctx, node, x, alpha):
    """alpha * (exp(min(x, 0)) - 1): Elu's branch for x < 0, finite for every x."""
    zero = _scalar(ctx, node, 0.0, x, "zero")
    e = ctx.make(node, Op.EXP, ctx.make(node, Op.WHERE, ctx.make(node, Op.LESS, x, zero), x, zero))
    return ctx.make(node, Op.MUL, _scalar(ctx, node, alpha, x, "alpha"),
                    ctx.make(node, Op.SUB, e, _scalar(ctx, node, 1.0, x, "one")))


def elu(ctx, node, a):
    x = ctx.required(node, 0)
    neg = _negative_part(ctx, node, x, float(a.get("alpha", 1.0)))
    return ctx.make(node, Op.WHERE, ctx.make(node, Op.LESS, x, _scalar(ctx, node, 0.0, x, "zero")), neg, x)


def selu(ctx, node, a):
    x = ctx.required(node, 0)
    alpha, gamma = float(a.get("alpha", 1.67326319217681884765625)), float(a.get("gamma", 1.05070102214813232421875))
    neg = _negative_part(ctx, node, x, alpha)
    y = ctx.make(node, Op.WHERE, ctx.make(node, Op.GREATER, x, _scalar(ctx, node, 0.0, x, "zero")), x, neg)
    return ctx.make(node, Op.MUL, _scalar(ctx, node, gamma, x, "gamma"), y)


def prelu(ctx, node, a):
    """x where x >= 0, else slope * x (slope broadcasts to x, ONNX's unidirectional broadcasting)."""
    x, slope = ctx.required(node, 0), ctx.required(node, 1)
    neg = ctx.make(node, Op.MUL, x, slope)
    return ctx.make(node, Op.WHERE, ctx.make(node, Op.LESS, x, _scalar(ctx, node, 0, x, "zero")), neg, x)


def where(ctx, node, a):
    return ctx.make(node, Op.WHERE, ctx.required(node, 0), ctx.required(node, 1), ctx.required(node, 2))


CONVERTERS = {
    "Relu": _unary(Op.RELU), "Sigmoid": _unary(Op.SIGMOID), "Tanh": _unary(Op.TANH),
    "Erf": _unary(Op.ERF), "Sqrt": _unary(Op.SQRT), "LeakyRelu": leaky_relu, "Gelu": gelu,
    "Clip": clip, "HardSwish": hard_swish, "Cast": cast, "Identity": identity, "Dropout": dropout,
    "Exp": _unary(Op.EXP), "Log": _unary(Op.LOG), "Abs": _unary(Op.ABS), "Neg": _unary(Op.NEG),
    "Not": _unary(Op.NOT), "Softplus": softplus, "Mish": mish, "Elu": elu, "Selu": selu, "PRelu": prelu,
    "Add": _binary(Op.ADD), "Sub": _binary(Op.SUB), "Mul": _binary(Op.MUL), "Div": _binary(Op.DIV),
    "Pow": _binary(Op.POW), "Sum": sum_, "Equal": _binary(Op.EQUAL), "Less": _binary(Op.LESS),
    "Greater": _binary(Op.GREATER), "Where": where,
}
