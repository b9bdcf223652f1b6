"""Pooling: max / average pooling over windows (NCHW) and its CPU schedule.

``pool2d(x, kind, kernel, strides, pads, dilations, ceil_mode, count_include_pad,
out_hw)`` follows ONNX MaxPool / AveragePool: padded cells are ``-inf`` for max
and excluded from (or, with ``count_include_pad``, counted in) the average.
With ``ceil_mode`` the graph's output size (``out_hw``) may need extra cells
past the end padding; they are padding too.
"""
from __future__ import annotations

import numpy as np

from compiler import te
from compiler.tir import ir

from .nn_util import pad_spatial


def pool2d(x, kind, kernel, strides=(1, 1), pads=(0, 0, 0, 0), dilations=(1, 1),
           count_include_pad=0, out_hw=None, name="pool"):
    """``x[N, C, H, W]`` -> ``[N, C, OH, OW]``; ``kind`` is ``"max"`` or ``"avg"``."""
    N, C, H, W = x.shape
    (KH, KW), (sh, sw), (dh, dw) = kernel, strides, dilations
    OH, OW = out_hw
    extra = [max(0, (o - 1) * s + (k - 1) * d + 1 - (n + pads[i] + pads[i + 2]))
             for i, (o, s, k, d, n) in enumerate(((OH, sh, KH, dh, H), (OW, sw, KW, dw, W)))]
    if np.issubdtype(np.dtype(x.dtype), np.floating):
        lowest = float("-inf")
    else:
        lowest = int(np.iinfo(x.dtype).min)
    fill = lowest if kind == "max" else 0.0
    padded = pad_spatial(x, pads, 2, value=fill, extra=extra, name=name + "_pad")
    kh = te.reduce_axis(KH, "kh")
    kw = te.reduce_axis(KW, "kw")
    if kind == "max":
        return te.compute((N, C, OH, OW), lambda n, c, oh, ow: te.max(
            padded[n, c, oh * sh + kh * dh, ow * sw + kw * dw], axis=(kh, kw)), name=name)
    total = te.compute((N, C, OH, OW), lambda n, c, oh, ow: te.sum(
        padded[n, c, oh * sh + kh * dh, ow * sw + kw * dw], axis=(kh, kw)), name=name + "_sum")
    # the divisor of each window, a compile-time constant per output position
    cnt = np.zeros((OH, OW), np.float64)
    Hc = H + (pads[0] + pads[2] if count_include_pad else 0)
    Wc = W + (pads[1] + pads[3] if count_include_pad else 0)
    h0 = 0 if count_include_pad else pads[0]
    w0 = 0 if count_include_pad else pads[1]
    for i in range(OH):
        rows = sum(1 for a in range(KH) if h0 <= i * sh + a * dh < h0 + Hc)
        for j in range(OW):
            cols = sum(1 for b in range(KW) if w0 <= j * sw + b * dw < w0 + Wc)
            cnt[i, j] = rows * cols
    if np.all(cnt == cnt[0, 0]):
        inv = ir.const(1.0 / cnt[0, 0], x.dtype)
        return te.compute((N, C, OH, OW), lambda n, c, oh, ow: total[n, c, oh, ow] * inv, name=name)

    def body(n, c, oh, ow):
        # border windows: count = product of the valid extents, computed from indices
        def extent(o, s, k, d, lo, size):
            count = ir.const(0.0, x.dtype)
            for a in range(k):
                pos = o * s + a * d
                count = count + te.if_then_else(ir.logical_and(pos >= lo, pos < lo + size),
                                                ir.const(1.0, x.dtype), ir.const(0.0, x.dtype))
            return count
        return total[n, c, oh, ow] / (extent(oh, sh, KH, dh, h0, Hc) * extent(ow, sw, KW, dw, w0, Wc))
    return te.compute((N, C, OH, OW), body, name=name)


def schedule_pool2d(s, pool, out, par_depth: int = 3):
    """Parallel over (n, c, row) (``par_depth`` 3; 2: over (n, c), rows serial inside); the
    window reduction innermost per output cell; the padded input (if any) materialised
    first, in parallel over (n, c)."""
    if par_depth not in (2, 3):
        raise ValueError(f"par_depth must be 2 or 3, not {par_depth!r}")
    n, c, oh, ow = s[out].op.axis
    s[out].parallel(s[out].fuse(*(n, c, oh)[:par_depth]))
    if pool is not out:
        s[pool].compute_at(s[out], ow)
    for t in pool.op.reads():
        if t.op.name.endswith("_sum"):
            s[t].compute_at(s[pool], s[pool].op.axis[3])
            t = t.op.reads()[0]
        if t.op.name.endswith("_pad") and hasattr(t.op, "axis"):
            ax = t.op.axis
            s[t].parallel(s[t].fuse(ax[0], ax[1]))
    return s
