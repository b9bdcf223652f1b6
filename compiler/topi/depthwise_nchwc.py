"""Depthwise convolution in the blocked NCHW{b}c layout, and its CPU schedule.

Data ``[N, C/b, H, W, b]``, kernel ``[C/b, 1, KH, KW, b]`` (graph layout ``OIHW{b}o``:
the ONNX ``[C, 1, KH, KW]`` weight with its channels blocked innermost), output
``[N, C/b, OH, OW, b]``; channel multiplier 1 (groups == channels). Each output vector
(``b`` channels of one pixel) is the sum over the window of an input vector times a
weight vector: one FMA per tap with no broadcast or transpose, at any stride, so the
layer keeps the layout of the blocked 1x1 convs around it (``conv2d_nchwc``) and the
graph needs no NCHW <-> NCHW{b}c transforms around it (onnxruntime's NCHWc depthwise
kernel works the same way).

``pads`` are (top, left, bottom, right) as ONNX.
"""
from __future__ import annotations

from compiler import te

from .conv2d import _pad_per_task, _parallel_outer, _schedule_pad, _tile_width
from .nn_util import pad_spatial, window_out


def depthwise_conv2d_nchwc(data, kernel, strides=(1, 1), pads=(0, 0, 0, 0), dilations=(1, 1),
                           name="conv"):
    """Blocked depthwise convolution; shapes as in the module docstring.

    Raises:
        ValueError: the kernel's channel blocks, block or in-channels do not match the data's.
    """
    N, Cc, H, W, cb = data.shape
    Kc, one, KH, KW, kb = kernel.shape
    if (Kc, kb, one) != (Cc, cb, 1):
        raise ValueError(f"depthwise_conv2d_nchwc: kernel {list(kernel.shape)} must be "
                         f"[{Cc}, 1, KH, KW, {cb}] for data {list(data.shape)} (layout OIHW{cb}o)")
    sh, sw = strides
    dh, dw = dilations
    OH = window_out(H, KH, sh, pads[0], pads[2], dh)
    OW = window_out(W, KW, sw, pads[1], pads[3], dw)
    padded = pad_spatial(data, pads, 2, name=name + "_pad")
    kh = te.reduce_axis(KH, "kh")
    kw = te.reduce_axis(KW, "kw")
    return te.compute(
        (N, Cc, OH, OW, cb),
        lambda n, c, oh, ow, ci: te.sum(
            padded[n, c, oh * sh + kh * dh, ow * sw + kw * dw, ci] * kernel[c, 0, kh, kw, ci],
            axis=(kh, kw)),
        name=name)


def schedule_depthwise_nchwc(s, conv, out, ow_tile: int = 7, par_depth: int = 2):
    """Schedule :func:`depthwise_conv2d_nchwc`: ``conv`` its accumulation, ``out`` the stage
    storing it (elementwise consumers inlined; ``out`` may be ``conv``).

    Parallel over (n, channel block) (``par_depth`` 2, the padded copy made per task, the
    rows that task reads: one fork-join per layer) or (n, channel block, row) (3, the
    padded copy at the root in its own parallel loop); per tile of ``ow_tile`` output
    columns (a divisor of OW near it) an ``ow_tile x b`` accumulator (unrolled over
    columns, vectorised over the channel block) runs over the window (kh, kw): per tap one
    weight vector and one input vector per column.
    """
    N, Cc, OH, OW, cb = conv.shape
    reg = _tile_width(OW, ow_tile)
    acc, out_t = (s.cache_write(conv, "local"), conv) if out is conv else (conv, out)
    n, c, oh, ow, ci = s[out_t].op.axis
    owo, owi = s[out_t].split(ow, factor=reg)
    s[out_t].reorder(n, c, oh, owo, owi, ci)
    s[out_t].unroll(owi)
    s[out_t].vectorize(ci)
    fused = _parallel_outer(s, out_t, (n, c, oh), par_depth)
    s[acc].compute_at(s[out_t], owo)
    an, ac, aoh, aow, aci = s[acc].op.axis
    s[acc].reorder(*s[acc].op.reduce_axis, aow, aci)
    s[acc].unroll(aow)
    s[acc].vectorize(aci)
    if par_depth == 3:
        _schedule_pad(s, conv)
        return s
    _pad_per_task(s, conv, out_t, fused)
    return s
