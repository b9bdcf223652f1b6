"""Convolutions (incl. depthwise and transposed), addmm/mm/bmm, batch and layer norm, pooling
(incl. adaptive average), softmax, nearest/bilinear upsampling, scaled dot-product attention."""

from __future__ import annotations

import math

import numpy as np

from ...graph.ops import Op


def _pair(v, n=2):
    v = list(v) if isinstance(v, (list, tuple)) else [v]
    return tuple(int(x) for x in (v * n if len(v) == 1 else v))


def _need_2d(ctx, n, x, what="input"):
    if len(x.shape) != 4:
        raise ctx.fail(n, f"only 2-D (NCHW) {what}s are supported, got shape {list(x.shape)}; "
                          "use Conv2d/MaxPool2d/... on 4-D tensors")


def _bias(ctx, n, y, b):
    if b is None:
        return y
    return ctx.make(n, Op.ADD, y, ctx.make(n, Op.RESHAPE, b, newshape=(b.shape[0], 1, 1)))


def convolution(ctx, n):
    """aten.convolution: weight [Cout, Cin/g, kh, kw] (transposed: [Cin, Cout/g, kh, kw])."""
    a = ctx.args(n)
    x, w = a["input"], a["weight"]
    _need_2d(ctx, n, x)
    ph, pw = _pair(a["padding"])
    attrs = dict(strides=_pair(a["stride"]), pads=(ph, pw, ph, pw), dilations=_pair(a["dilation"]),
                 groups=int(a["groups"]))
    if a["transposed"]:
        y = ctx.make(n, Op.CONV2D_TRANSPOSE, x, w, output_padding=_pair(a["output_padding"]), **attrs)
    else:
        y = ctx.make(n, Op.CONV2D, x, w, **attrs)
    return _bias(ctx, n, y, a["bias"])


def _weight_t(ctx, n, w):
    """DENSE's weight [N, K] from a constant [K, N] matrix (the transpose folds)."""
    return ctx.make(n, Op.TRANSPOSE, w, perm=(1, 0))


def addmm(ctx, n):
    """beta * self + alpha * (mat1 @ mat2) -> DENSE(mat1, mat2^T) + self."""
    a = ctx.args(n)
    y = ctx.make(n, Op.DENSE, a["mat1"], _weight_t(ctx, n, a["mat2"]))
    if a["alpha"] != 1:
        y = ctx.make(n, Op.MUL, y, ctx.tensor(n, float(a["alpha"]), y, "alpha"))
    c = a["self"]
    if a["beta"] == 0:
        return y
    if a["beta"] != 1:
        c = ctx.make(n, Op.MUL, c, ctx.tensor(n, float(a["beta"]), c, "beta"))
    return ctx.make(n, Op.ADD, y, c)


def mm(ctx, n):
    """mat1 @ mat2: DENSE when mat2 is a constant matrix (a linear layer), else MATMUL."""
    a = ctx.args(n)
    x, w = a["self"], a["mat2"]
    if w.op is Op.PARAM:
        return ctx.make(n, Op.DENSE, x, _weight_t(ctx, n, w))
    return ctx.make(n, Op.MATMUL, x, w)


def bmm(ctx, n):
    a = ctx.args(n)
    return ctx.make(n, Op.MATMUL, a["self"], a["mat2"])


def _ones(ctx, n, like, c, value):
    return ctx.param(np.full((c,), value, np.dtype(like.dtype)), f"{n.name}_{'ones' if value else 'zeros'}")


def batch_norm(ctx, n):
    """_native_batch_norm_legit_no_training -> (BATCH_NORM, None, None); export in eval mode."""
    a = ctx.args(n)
    x = a["input"]
    c = x.shape[1]
    gamma = a["weight"] if a["weight"] is not None else _ones(ctx, n, x, c, 1.0)
    beta = a["bias"] if a["bias"] is not None else _ones(ctx, n, x, c, 0.0)
    y = ctx.make(n, Op.BATCH_NORM, x, gamma, beta, a["running_mean"], a["running_var"],
                 epsilon=float(a["eps"]))
    return y, None, None


def layer_norm(ctx, n):
    """native_layer_norm -> (LAYER_NORM over the last len(normalized_shape) axes, None, None)."""
    a = ctx.args(n)
    x = a["input"]
    shape = tuple(a["normalized_shape"])
    axis = len(x.shape) - len(shape)
    scale = a["weight"] if a["weight"] is not None else ctx.param(np.ones(shape, x.dtype), f"{n.name}_ones")
    src = [x, scale] + ([a["bias"]] if a["bias"] is not None else [])
    return ctx.make(n, Op.LAYER_NORM, *src, axis=axis, epsilon=float(a["eps"])), None, None


def _pool_pads(padding):
    ph, pw = _pair(padding)
    return (ph, pw, ph, pw)


def max_pool(ctx, n):
    a = ctx.args(n)
    x = a["self"]
    _need_2d(ctx, n, x)
    k = _pair(a["kernel_size"])
    y = ctx.make(n, Op.MAX_POOL, x, kernel=k, strides=_pair(a["stride"]) if a["stride"] else k,
                 pads=_pool_pads(a["padding"]), dilations=_pair(a["dilation"]),
                 ceil_mode=int(a["ceil_mode"]))
    return y, None


def avg_pool(ctx, n):
    a = ctx.args(n)
    x = a["self"]
    _need_2d(ctx, n, x)
    if a.get("divisor_override") is not None:
        raise ctx.fail(n, f"divisor_override={a['divisor_override']} is not supported")
    k = _pair(a["kernel_size"])
    return ctx.make(n, Op.AVG_POOL, x, kernel=k, strides=_pair(a["stride"]) if a["stride"] else k,
                    pads=_pool_pads(a["padding"]), dilations=(1, 1), ceil_mode=int(a["ceil_mode"]),
                    count_include_pad=int(a["count_include_pad"]))


def adaptive_avg_pool(ctx, n):
    """Output 1x1: GLOBAL_AVG_POOL; an output size that divides the input: AVG_POOL."""
    a = ctx.args(n)
    x = a["self"]
    _need_2d(ctx, n, x)
    out = _pair(a["output_size"])
    if out == (1, 1):
        return ctx.make(n, Op.GLOBAL_AVG_POOL, x)
    h, w = x.shape[2:]
    if h % out[0] or w % out[1]:
        raise ctx.fail(n, f"output size {list(out)} does not divide the input's {h}x{w}; give an "
                          "input size that is a multiple of the output size")
    k = (h // out[0], w // out[1])
    return ctx.make(n, Op.AVG_POOL, x, kernel=k, strides=k, pads=(0, 0, 0, 0), dilations=(1, 1),
                    ceil_mode=0, count_include_pad=0)


def softmax(ctx, n):
    a = ctx.args(n)
    x = a["self"]
    return ctx.make(n, Op.SOFTMAX, x, axis=int(a["dim"]) % len(x.shape))


def _upsample(ctx, n, a, mode, ctm, nearest_mode):
    x = a["input"]
    _need_2d(ctx, n, x)
    h, w = x.shape[2:]
    if a.get("output_size"):
        oh, ow = _pair(a["output_size"])
        scales = (oh / h, ow / w)
    else:
        scales = tuple(float(s) for s in _pair_f(a["scale_factors"]))
        oh, ow = int(math.floor(h * scales[0])), int(math.floor(w * scales[1]))
    return ctx.make(n, Op.RESIZE, x, mode=mode, coordinate_transformation_mode=ctm,
                    nearest_mode=nearest_mode, scales=(1.0, 1.0) + scales,
                    sizes=tuple(x.shape[:2]) + (oh, ow))


def _pair_f(v):
    v = list(v)
    return v * 2 if len(v) == 1 else v


def upsample_nearest(ctx, n):
    """torch's nearest: source index floor(dst / scale) (ONNX asymmetric + floor)."""
    return _upsample(ctx, n, ctx.args(n), "nearest", "asymmetric", "floor")


def upsample_bilinear(ctx, n):
    a = ctx.args(n)
    return _upsample(ctx, n, a, "linear", "align_corners" if a["align_corners"] else "pytorch_half_pixel",
                     "round_prefer_floor")


def sdpa(ctx, n):
    """softmax(q @ k^T * scale + mask) @ v; a causal or given mask is added (bool: -inf where
    False). q, k, v: [..., L, E]."""
    a = ctx.args(n)
    q, k, v = a["query"], a["key"], a["value"]
    if a.get("dropout_p", 0.0):
        raise ctx.fail(n, f"dropout_p={a['dropout_p']} is not supported; export in eval mode")
    if a.get("enable_gqa"):
        raise ctx.fail(n, "enable_gqa=True is not supported; repeat the key/value heads first")
    rank = len(k.shape)
    perm = tuple(range(rank - 2)) + (rank - 1, rank - 2)
    scores = ctx.make(n, Op.MATMUL, q, ctx.make(n, Op.TRANSPOSE, k, perm=perm))
    scale = a.get("scale") or 1.0 / math.sqrt(q.shape[-1])
    scores = ctx.make(n, Op.MUL, scores, ctx.tensor(n, float(scale), scores, "scale"))
    lq, lk = q.shape[-2], k.shape[-2]
    mask = a.get("attn_mask")
    if a.get("is_causal"):
        mask = ctx.param(np.where(np.tril(np.ones((lq, lk), bool)), 0, -np.inf).astype(q.dtype),
                         f"{n.name}_causal")
    elif mask is not None and mask.dtype == "bool":
        mask = ctx.param(np.where(ctx.const(n, mask, "a boolean attn_mask"), 0, -np.inf)
                         .astype(q.dtype), f"{n.name}_mask")
    if mask is not None:
        scores = ctx.make(n, Op.ADD, scores, mask)
    probs = ctx.make(n, Op.SOFTMAX, scores, axis=rank - 1)
    return ctx.make(n, Op.MATMUL, probs, v)


CONVERTERS = {
    "aten.convolution.default": convolution, "aten.addmm.default": addmm, "aten.mm.default": mm,
    "aten.bmm.default": bmm,
    "aten._native_batch_norm_legit_no_training.default": batch_norm,
    "aten.native_layer_norm.default": layer_norm,
    "aten.max_pool2d_with_indices.default": max_pool, "aten.avg_pool2d.default": avg_pool,
    "aten._adaptive_avg_pool2d.default": adaptive_avg_pool,
    "aten.adaptive_avg_pool2d.default": adaptive_avg_pool,
    "aten._softmax.default": softmax, "aten.softmax.int": softmax,
    "aten.upsample_nearest2d.vec": upsample_nearest,
    "aten.upsample_bilinear2d.vec": upsample_bilinear,
    "aten.scaled_dot_product_attention.default": sdpa,
}
