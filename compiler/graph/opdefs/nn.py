"""Complex ops (conv, dense, matmul, pools) and reductions.

Conventions (2-D, NCHW; the frontend turns ONNX auto_pad into explicit pads):
- CONV2D src (x[N,C,H,W], w[O,C/groups,KH,KW]); strides (sh,sw), pads
  (top,left,bottom,right) as ONNX, dilations (dh,dw), groups. Blocked form
  after `alter_layout`: data_layout "NCHW{b}c", kernel_layout "OIHW{bi}i{bo}o",
  output "NCHW{bo}c"; NCHW data with kernel_layout "OIHW{bo}o" also writes "NCHW{bo}c". Output H = (H + top + bottom - ((KH-1)*dh+1)) // sh + 1.
- CONV2D_TRANSPOSE src (x[N,C,H,W], w[C,O/groups,KH,KW]); output H =
  sh*(H-1) + output_padding + (KH-1)*dh + 1 - top - bottom (ONNX ConvTranspose).
- DENSE src (x[...,K], w[N,K]) -> [...,N] (x @ w.T).  MATMUL: numpy.matmul.
- MAX_POOL / AVG_POOL kernel, strides, pads, dilations, ceil_mode
  (AVG_POOL: count_include_pad). GLOBAL_AVG_POOL: mean over H, W, keeping them as 1.
- REDUCE_SUM / REDUCE_MEAN / REDUCE_MAX / REDUCE_MIN / REDUCE_PROD axes
  (non-negative, distinct), keepdims; the input's dtype (MEAN: float only).
"""

from __future__ import annotations

import re

import numpy as np
from numpy.lib.stride_tricks import sliding_window_view

from ..errors import GraphError
from ..ops import Kind, Op
from ..registry import register
from .elementwise import broadcast_shape
from .transform import _layout_shapes, layout_transform


def window_out(size: int, k: int, s: int, pb: int, pe: int, d: int, ceil: bool = False) -> int:
    """Output length of a sliding window (conv/pool), ONNX rules including ceil_mode."""
    ek = (k - 1) * d + 1
    num = size + pb + pe - ek
    if num < 0:
        raise GraphError(f"window of {ek} (kernel {k}, dilation {d}) exceeds the padded input {size + pb + pe}")
    if not ceil:
        return num // s + 1
    out = -(-num // s) + 1
    if (out - 1) * s >= size + pb:  # last window must start inside the input or its left padding
        out -= 1
    return out


def _windows(xp, k, s, d, out):
    ek = ((k[0] - 1) * d[0] + 1, (k[1] - 1) * d[1] + 1)
    v = sliding_window_view(xp, ek, axis=(2, 3))
    return v[:, :, :out[0] * s[0]:s[0], :out[1] * s[1]:s[1], ::d[0], ::d[1]]


def _spatial(x_shape, k, a, ceil=False):
    s, p, d = a.get("strides", (1, 1)), a.get("pads", (0, 0, 0, 0)), a.get("dilations", (1, 1))
    return tuple(window_out(x_shape[2 + i], k[i], s[i], p[i], p[i + 2], d[i], ceil) for i in range(2))


def _conv_primal_shapes(src, a):
    x, w = src[0].shape, src[1].shape
    dl, kl = a.get("data_layout", "NCHW"), a.get("kernel_layout", "OIHW")
    if dl != "NCHW":
        x = _layout_shapes(x, dl, "NCHW")[3]
    if kl != "OIHW":
        w = _layout_shapes(w, kl, "OIHW")[3]
    return x, w


def _out_layout(a):
    kl = a.get("kernel_layout", "OIHW")
    blocks = {c: n for n, c in re.findall(r"(\d+)([a-z])", kl)}
    return f"NCHW{blocks['o']}c" if "o" in blocks else "NCHW"


@register(Op.CONV2D, Kind.OUT_EWISE_FUSABLE, 2)
def _conv2d():
    def infer(src, a):
        x, w = _conv_primal_shapes(src, a)
        if len(x) != 4 or len(w) != 4:
            raise GraphError(f"needs 4-D data and weight (NCHW, OIHW), got {list(x)} and {list(w)}")
        g = a.get("groups", 1)
        if x[1] != w[1] * g or w[0] % g:
            raise GraphError(f"data channels {x[1]} != weight in-channels {w[1]} x groups {g} "
                             f"(or out-channels {w[0]} not divisible by groups)")
        oh, ow = _spatial(x, w[2:], a)
        out = (x[0], w[0], oh, ow)
        if _out_layout(a) != "NCHW":
            out = _layout_shapes(out, "NCHW", _out_layout(a))[3]
        return out, src[0].dtype

    def compute(args, a):
        x, w = args
        if (a.get("data_layout", "NCHW"), a.get("kernel_layout", "OIHW")) != ("NCHW", "OIHW"):
            x = layout_transform(x, a.get("data_layout", "NCHW"), "NCHW")
            w = layout_transform(w, a["kernel_layout"], "OIHW")
            plain = dict(a, data_layout="NCHW", kernel_layout="OIHW")
            return layout_transform(conv2d(x, w, plain), "NCHW", _out_layout(a))
        return conv2d(x, w, a)
    return infer, compute


def conv2d(x: np.ndarray, w: np.ndarray, a: dict) -> np.ndarray:
    """NCHW/OIHW grouped, dilated, strided 2-D convolution (numpy reference, float32 BLAS)."""
    s, p, d, g = a.get("strides", (1, 1)), a.get("pads", (0, 0, 0, 0)), a.get("dilations", (1, 1)), a.get("groups", 1)
    out = _spatial(x.shape, w.shape[2:], a)
    xp = np.pad(x, ((0, 0), (0, 0), (p[0], p[2]), (p[1], p[3])))
    win = _windows(xp, w.shape[2:], s, d, out)  # N,C,OH,OW,KH,KW
    n, c = x.shape[:2]
    o = w.shape[0]
    if g == 1:
        return np.ascontiguousarray(np.tensordot(win, w, axes=([1, 4, 5], [1, 2, 3])).transpose(0, 3, 1, 2))
    if g == c and w.shape[1] == 1:
        wv = w.reshape(c, o // c, *w.shape[2:])
        return np.einsum("nchwij,cmij->ncmhw", win, wv).reshape(n, o, *out)
    cg, og = c // g, o // g
    parts = [np.tensordot(win[:, i * cg:(i + 1) * cg], w[i * og:(i + 1) * og], axes=([1, 4, 5], [1, 2, 3]))
             for i in range(g)]
    return np.ascontiguousarray(np.concatenate(parts, axis=3).transpose(0, 3, 1, 2))


@register(Op.CONV2D_TRANSPOSE, Kind.OUT_EWISE_FUSABLE, 2)
def _conv2d_transpose():
    def infer(src, a):
        x, w = src[0].shape, src[1].shape
        g = a.get("groups", 1)
        if len(x) != 4 or len(w) != 4 or x[1] != w[0] or x[1] % g:
            raise GraphError(f"needs x[N,C,H,W] and w[C,O/groups,KH,KW] with matching C, got {list(x)} and {list(w)}")
        s, p, d = a.get("strides", (1, 1)), a.get("pads", (0, 0, 0, 0)), a.get("dilations", (1, 1))
        op = a.get("output_padding", (0, 0))
        hw = tuple(s[i] * (x[2 + i] - 1) + op[i] + (w[2 + i] - 1) * d[i] + 1 - p[i] - p[i + 2] for i in range(2))
        if min(hw) <= 0:
            raise GraphError(f"output spatial size {list(hw)} is not positive; reduce pads {list(p)}")
        return (x[0], w[1] * g) + hw, src[0].dtype

    def compute(args, a):
        x, w = args
        s, p, d = a.get("strides", (1, 1)), a.get("pads", (0, 0, 0, 0)), a.get("dilations", (1, 1))
        op, g = a.get("output_padding", (0, 0)), a.get("groups", 1)
        n, c, h, wd = x.shape
        cg, og, kh, kw = c // g, w.shape[1], w.shape[2], w.shape[3]
        full = [s[i] * (x.shape[2 + i] - 1) + op[i] + (w.shape[2 + i] - 1) * d[i] + 1 for i in range(2)]
        out = np.zeros((n, og * g, *full), x.dtype)
        for gi in range(g):
            xg = x[:, gi * cg:(gi + 1) * cg]
            for i in range(kh):
                for j in range(kw):
                    contrib = np.tensordot(xg, w[gi * cg:(gi + 1) * cg, :, i, j], axes=([1], [0]))
                    out[:, gi * og:(gi + 1) * og, i * d[0]:i * d[0] + (h - 1) * s[0] + 1:s[0],
                        j * d[1]:j * d[1] + (wd - 1) * s[1] + 1:s[1]] += contrib.transpose(0, 3, 1, 2)
        return np.ascontiguousarray(out[:, :, p[0]:full[0] - p[2], p[1]:full[1] - p[3]])
    return infer, compute


@register(Op.DENSE, Kind.OUT_EWISE_FUSABLE, 2)
def _dense():
    def infer(src, a):
        x, w = src[0].shape, src[1].shape
        got = f"got {src[0].dtype}{list(x)} and {src[1].dtype}{list(w)}"
        if len(w) != 2 or not x:
            raise GraphError(f"needs x[...,K] and a 2-D weight w[N,K], {got}")
        if x[-1] != w[1]:
            raise GraphError(f"x has K={x[-1]} features, the weight w[N,K] takes K={w[1]} ({got}); "
                             "the input reaching this layer has another size than the model "
                             "was made for (check the input shape)")
        if src[0].dtype != src[1].dtype:
            raise GraphError(f"needs x and w of one dtype, {got}")
        return x[:-1] + (w[0],), src[0].dtype
    return infer, lambda args, a: args[0] @ args[1].T


def matmul_shape(a: tuple[int, ...], b: tuple[int, ...]) -> tuple[int, ...]:
    """numpy.matmul result shape; GraphError on mismatch."""
    if not a or not b:
        raise GraphError("matmul operands must have rank >= 1")
    a2 = (1,) + a if len(a) == 1 else a
    b2 = b + (1,) if len(b) == 1 else b
    if a2[-1] != b2[-2]:
        raise GraphError(f"inner dims differ: {list(a)} @ {list(b)}")
    out = broadcast_shape(a2[:-2], b2[:-2]) + (a2[-2], b2[-1])
    if len(b) == 1:
        out = out[:-1]
    if len(a) == 1:
        out = out[:-2] + out[-1:] if len(b) > 1 else out[:-1]
    return out


@register(Op.MATMUL, Kind.OUT_EWISE_FUSABLE, 2)
def _matmul():
    def infer(src, a):
        if src[0].dtype != src[1].dtype:
            raise GraphError(f"operands must share a dtype, not {src[0].dtype} and {src[1].dtype}")
        return matmul_shape(src[0].shape, src[1].shape), src[0].dtype
    return infer, lambda args, a: np.matmul(args[0], args[1])


def _pool_infer(src, a):
    x = src[0].shape
    if len(x) != 4:
        raise GraphError(f"needs 4-D NCHW input, got {list(x)}")
    return x[:2] + _spatial(x, a["kernel"], a, a.get("ceil_mode", 0)), src[0].dtype


def _pool_pad(x, a, fill):
    k, s, p, d = a["kernel"], a.get("strides", (1, 1)), a.get("pads", (0, 0, 0, 0)), a.get("dilations", (1, 1))
    out = _spatial(x.shape, k, a, a.get("ceil_mode", 0))
    extra = [max(0, (out[i] - 1) * s[i] + (k[i] - 1) * d[i] + 1 - (x.shape[2 + i] + p[i] + p[i + 2])) for i in range(2)]
    width = ((0, 0), (0, 0), (p[0], p[2] + extra[0]), (p[1], p[3] + extra[1]))
    return np.pad(x, width, constant_values=fill), out, width


@register(Op.MAX_POOL, Kind.OUT_EWISE_FUSABLE, 1)
def _max_pool():
    def compute(args, a):
        x = args[0]
        fill = -np.inf if np.issubdtype(x.dtype, np.floating) else np.iinfo(x.dtype).min
        xp, out, _ = _pool_pad(x, a, fill)
        win = _windows(xp, a["kernel"], a.get("strides", (1, 1)), a.get("dilations", (1, 1)), out)
        return np.ascontiguousarray(win.max(axis=(4, 5)))
    return _pool_infer, compute


@register(Op.AVG_POOL, Kind.OUT_EWISE_FUSABLE, 1)
def _avg_pool():
    def compute(args, a):
        x = args[0]
        k, s, d, p = a["kernel"], a.get("strides", (1, 1)), a.get("dilations", (1, 1)), a.get("pads", (0, 0, 0, 0))
        xp, out, width = _pool_pad(x, a, 0)
        total = _windows(xp, k, s, d, out).sum(axis=(4, 5), dtype=np.float64)
        mask = np.ones((1, 1) + x.shape[2:])
        if a.get("count_include_pad", 0):
            mask = np.pad(mask, ((0, 0), (0, 0), (p[0], p[2]), (p[1], p[3])), constant_values=1)
            mask = np.pad(mask, ((0, 0), (0, 0), (0, width[2][1] - p[2]), (0, width[3][1] - p[3])))
        else:
            mask = np.pad(mask, width)
        count = _windows(mask, k, s, d, out).sum(axis=(4, 5))
        return (total / count).astype(x.dtype)
    return _pool_infer, compute


@register(Op.GLOBAL_AVG_POOL, Kind.REDUCTION, 1)
def _global_avg_pool():
    def infer(src, a):
        x = src[0].shape
        if len(x) < 3:
            raise GraphError(f"needs an N,C,spatial... input, got {list(x)}")
        return x[:2] + (1,) * (len(x) - 2), src[0].dtype
    return infer, lambda args, a: args[0].mean(axis=tuple(range(2, args[0].ndim)), keepdims=True)


_REDUCERS = {Op.REDUCE_SUM: np.sum, Op.REDUCE_MEAN: np.mean, Op.REDUCE_MAX: np.max,
             Op.REDUCE_MIN: np.min, Op.REDUCE_PROD: np.prod}


def _reduce(op, fn):
    def infer(src, a):
        x, axes = src[0].shape, a["axes"]
        if any(not 0 <= ax < len(x) for ax in axes) or len(set(axes)) != len(axes):
            raise GraphError(f"axes {list(axes)} must be distinct and in range for rank {len(x)}")
        if op is Op.REDUCE_MEAN and not np.issubdtype(np.dtype(src[0].dtype), np.floating):
            raise GraphError(f"input must be a float tensor, not {src[0].dtype}; insert a CAST")
        if a.get("keepdims", 1):
            return tuple(1 if i in axes else d for i, d in enumerate(x)), src[0].dtype
        return tuple(d for i, d in enumerate(x) if i not in axes), src[0].dtype

    def compute(args, a):
        return np.asarray(fn(args[0], axis=tuple(a["axes"]), keepdims=bool(a.get("keepdims", 1)))).astype(args[0].dtype)
    register(op, Kind.REDUCTION, 1)(lambda: (infer, compute))


for _op, _fn in _REDUCERS.items():
    _reduce(_op, _fn)
