"""Conv, ConvTranspose, Gemm, MatMul, pools, BatchNormalization, LayerNormalization,
InstanceNormalization, LRN, Softmax.

InstanceNormalization is a LAYER_NORM over the spatial axes with a per-channel
scale and bias; LRN is an average pool of the squares over a window of channels.
"""

from __future__ import annotations

import math

import numpy as np

from ...graph.ops import Op


def resolve_pads(ctx, node, a, spatial, kernel, strides, dilations) -> tuple[int, ...]:
    """Explicit (top, left, bottom, right) pads from `pads` or `auto_pad` (ONNX rules)."""
    auto = a.get("auto_pad", "NOTSET")
    if auto in ("NOTSET", ""):
        pads = tuple(a.get("pads", (0,) * 2 * len(spatial)))
        if len(pads) != 2 * len(spatial):
            raise ctx.fail(node, f"pads must have {2 * len(spatial)} entries, not {list(pads)}")
        return pads
    if auto == "VALID":
        return (0,) * 2 * len(spatial)
    if auto not in ("SAME_UPPER", "SAME_LOWER"):
        raise ctx.fail(node, f"auto_pad must be NOTSET, VALID, SAME_UPPER or SAME_LOWER, not {auto!r}")
    begins, ends = [], []
    for n, k, s, d in zip(spatial, kernel, strides, dilations):
        total = max(0, (math.ceil(n / s) - 1) * s + (k - 1) * d + 1 - n)
        small, big = total // 2, total - total // 2
        begins.append(small if auto == "SAME_UPPER" else big)
        ends.append(big if auto == "SAME_UPPER" else small)
    return tuple(begins + ends)


def _need_2d(ctx, node, x):
    if len(x.shape) != 4:
        raise ctx.fail(node, f"only 2-D (NCHW) inputs are supported, got shape {list(x.shape)}")


def _window_attrs(ctx, node, a, x, kernel):
    strides = tuple(a.get("strides", (1, 1)))
    dilations = tuple(a.get("dilations", (1, 1)))
    pads = resolve_pads(ctx, node, a, x.shape[2:], kernel, strides, dilations)
    return dict(strides=strides, pads=pads, dilations=dilations)


def _bias(ctx, node, y, i):
    b = ctx.input(node, i)
    if b is None:
        return y
    return ctx.make(node, Op.ADD, y, ctx.make(node, Op.RESHAPE, b, newshape=(b.shape[0], 1, 1)))


def conv(ctx, node, a):
    x, w = ctx.required(node, 0), ctx.required(node, 1)
    _need_2d(ctx, node, x)
    kernel = tuple(a.get("kernel_shape", w.shape[2:]))
    y = ctx.make(node, Op.CONV2D, x, w, groups=int(a.get("group", 1)), **_window_attrs(ctx, node, a, x, kernel))
    return _bias(ctx, node, y, 2)


def conv_transpose(ctx, node, a):
    x, w = ctx.required(node, 0), ctx.required(node, 1)
    _need_2d(ctx, node, x)
    g = int(a.get("group", 1))
    strides = tuple(a.get("strides", (1, 1)))
    dil = tuple(a.get("dilations", (1, 1)))
    out_pad = tuple(a.get("output_padding", (0, 0)))
    kernel = tuple(a.get("kernel_shape", w.shape[2:]))
    auto = a.get("auto_pad", "NOTSET")
    if "output_shape" in a or auto in ("SAME_UPPER", "SAME_LOWER"):
        target = list(a["output_shape"])[-2:] if "output_shape" in a else [x.shape[2 + i] * strides[i] for i in range(2)]
        begins, ends = [], []
        for i in range(2):
            total = strides[i] * (x.shape[2 + i] - 1) + out_pad[i] + (kernel[i] - 1) * dil[i] + 1 - target[i]
            if total < 0:
                raise ctx.fail(node, f"output_shape {target} is larger than the full transposed output; "
                                     "use output_padding instead")
            lower_big = auto != "SAME_UPPER"
            begins.append(total - total // 2 if lower_big else total // 2)
            ends.append(total // 2 if lower_big else total - total // 2)
        pads = tuple(begins + ends)
    elif auto == "VALID":
        pads = (0, 0, 0, 0)
    else:
        pads = tuple(a.get("pads", (0, 0, 0, 0)))
    y = ctx.make(node, Op.CONV2D_TRANSPOSE, x, w, strides=strides, pads=pads, dilations=dil,
                 groups=g, output_padding=out_pad)
    return _bias(ctx, node, y, 2)


def gemm(ctx, node, a):
    """Gemm -> DENSE(A', W[N,K]) [* alpha] [+ beta * C]; weights transposed/folded when constant."""
    x, b = ctx.required(node, 0), ctx.required(node, 1)
    if a.get("transA", 0):
        x = ctx.make(node, Op.TRANSPOSE, x, perm=(1, 0))
    w = b if a.get("transB", 0) else ctx.make(node, Op.TRANSPOSE, b, perm=(1, 0))
    y = ctx.make(node, Op.DENSE, x, w)
    alpha, beta = float(a.get("alpha", 1.0)), float(a.get("beta", 1.0))
    if alpha != 1.0:
        y = ctx.make(node, Op.MUL, y, ctx.param(np.asarray(alpha, y.dtype), f"{node.name}_alpha"))
    c = ctx.input(node, 2)
    if c is not None and beta != 0.0:
        if beta != 1.0:
            c = ctx.make(node, Op.MUL, c, ctx.param(np.asarray(beta, c.dtype), f"{node.name}_beta"))
        y = ctx.make(node, Op.ADD, y, c)
    return y


def matmul(ctx, node, a):
    """MatMul -> DENSE when the right operand is a constant 2-D matrix, else MATMUL."""
    x, w = ctx.required(node, 0), ctx.required(node, 1)
    if w.op is Op.PARAM and len(w.shape) == 2 and len(x.shape) >= 2:
        return ctx.make(node, Op.DENSE, x, ctx.make(node, Op.TRANSPOSE, w, perm=(1, 0)))
    return ctx.make(node, Op.MATMUL, x, w)


def _pool(op):
    def convert(ctx, node, a):
        x = ctx.required(node, 0)
        _need_2d(ctx, node, x)
        if len(node.output) > 1 and node.output[1]:
            raise ctx.fail(node, "the Indices output of MaxPool is not supported")
        kernel = tuple(a["kernel_shape"])
        extra = {"count_include_pad": int(a.get("count_include_pad", 0))} if op is Op.AVG_POOL else {}
        return ctx.make(node, op, x, kernel=kernel, ceil_mode=int(a.get("ceil_mode", 0)),
                        **_window_attrs(ctx, node, a, x, kernel), **extra)
    return convert


def global_avg_pool(ctx, node, a):
    return ctx.make(node, Op.GLOBAL_AVG_POOL, ctx.required(node, 0))


def batch_norm(ctx, node, a):
    if a.get("training_mode", 0):
        raise ctx.fail(node, "training_mode=1 is not supported; export the model in inference mode")
    if len(node.output) > 1 and any(node.output[1:]):
        raise ctx.fail(node, "only the first output (Y) is supported (inference mode)")
    src = [ctx.required(node, i) for i in range(5)]
    return ctx.make(node, Op.BATCH_NORM, *src, epsilon=float(a.get("epsilon", 1e-5)))


def layer_norm(ctx, node, a):
    if len(node.output) > 1 and any(node.output[1:]):
        raise ctx.fail(node, "only the first output (Y) is supported, not Mean/InvStdDev")
    x = ctx.required(node, 0)
    axis = int(a.get("axis", -1)) % len(x.shape)
    src = [x, ctx.required(node, 1)] + ([ctx.input(node, 2)] if ctx.input(node, 2) is not None else [])
    return ctx.make(node, Op.LAYER_NORM, *src, axis=axis, epsilon=float(a.get("epsilon", 1e-5)))


def instance_norm(ctx, node, a):
    """(x - mean) / sqrt(var + eps) * scale[c] + bias[c], statistics over the spatial axes."""
    x, scale, bias = ctx.required(node, 0), ctx.required(node, 1), ctx.required(node, 2)
    if len(x.shape) < 3:
        raise ctx.fail(node, f"needs an N,C,spatial... input, not {list(x.shape)}")
    per_channel = (x.shape[1],) + (1,) * (len(x.shape) - 2)
    scale, bias = (ctx.make(node, Op.RESHAPE, t, newshape=per_channel) for t in (scale, bias))
    return ctx.make(node, Op.LAYER_NORM, x, scale, bias, axis=2, epsilon=float(a.get("epsilon", 1e-5)))


def lrn(ctx, node, a):
    """x / (bias + alpha / size * sum of x^2 over `size` channels around c) ** beta (ONNX LRN):
    the sum is an AVG_POOL (count_include_pad) over channels of x^2 seen as [N, 1, C, H*W]."""
    x = ctx.required(node, 0)
    if len(x.shape) != 4:
        raise ctx.fail(node, f"only 4-D (NCHW) inputs are supported, got shape {list(x.shape)}")
    size = int(a["size"])
    alpha, beta, bias = float(a.get("alpha", 1e-4)), float(a.get("beta", 0.75)), float(a.get("bias", 1.0))
    n, c, h, w = x.shape
    sq = ctx.make(node, Op.RESHAPE, ctx.make(node, Op.MUL, x, x), newshape=(n, 1, c, h * w))
    lo, hi = (size - 1) // 2, size - 1 - (size - 1) // 2
    mean = ctx.make(node, Op.AVG_POOL, sq, kernel=(size, 1), strides=(1, 1), pads=(lo, 0, hi, 0),
                    dilations=(1, 1), ceil_mode=0, count_include_pad=1)
    mean = ctx.make(node, Op.RESHAPE, mean, newshape=x.shape)

    def k(v, what):
        return ctx.param(np.asarray(v, x.dtype), f"{node.name or 'lrn'}_{what}")
    scaled = ctx.make(node, Op.ADD, k(bias, "bias"), ctx.make(node, Op.MUL, mean, k(alpha, "alpha")))
    denom = ctx.make(node, Op.POW, scaled, k(beta, "beta"))
    return ctx.make(node, Op.DIV, x, denom)


def softmax(ctx, node, a):
    """Softmax; before opset 13 it flattens to 2-D at `axis` (default 1) and normalizes the rows."""
    x = ctx.required(node, 0)
    rank = len(x.shape)
    if ctx.opset >= 13:
        return ctx.make(node, Op.SOFTMAX, x, axis=int(a.get("axis", -1)) % rank)
    axis = int(a.get("axis", 1)) % rank
    if axis == rank - 1:
        return ctx.make(node, Op.SOFTMAX, x, axis=axis)
    flat = ctx.make(node, Op.RESHAPE, x, newshape=(int(np.prod(x.shape[:axis])), int(np.prod(x.shape[axis:]))))
    return ctx.make(node, Op.RESHAPE, ctx.make(node, Op.SOFTMAX, flat, axis=1), newshape=x.shape)


CONVERTERS = {
    "Conv": conv, "ConvTranspose": conv_transpose, "Gemm": gemm, "MatMul": matmul,
    "MaxPool": _pool(Op.MAX_POOL), "AveragePool": _pool(Op.AVG_POOL), "GlobalAveragePool": global_avg_pool,
    "BatchNormalization": batch_norm, "LayerNormalization": layer_norm, "Softmax": softmax,
    "InstanceNormalization": instance_norm, "LRN": lrn,
}
