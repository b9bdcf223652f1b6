"""Small helpers shared by the operator computes: spatial padding and window sizes.

``pad_spatial(data, (top, left, bottom, right), h_axis, value)`` declares a
zero- (or ``value``-) padded copy of ``data`` whose axes ``h_axis`` and
``h_axis + 1`` are the image rows and columns (NCHW: 2; NCHW{b}c: 2 as well).
"""
from __future__ import annotations

from compiler import te
from compiler.tir import ir


def window_out(size: int, k: int, s: int, pb: int, pe: int, d: int) -> int:
    """Output length of a sliding window (no ceil mode): ``(size+pb+pe-((k-1)*d+1))//s + 1``."""
    return (size + pb + pe - ((k - 1) * d + 1)) // s + 1


def pad_spatial(data, pads, h_axis: int = 2, value: float = 0.0, extra=(0, 0), name: str = "pad"):
    """``data`` with rows padded by ``pads[0]`` / ``pads[2]`` (+ ``extra[0]`` at the end) and
    columns by ``pads[1]`` / ``pads[3]`` (+ ``extra[1]``), filled with ``value``.

    Returns ``data`` itself when nothing is padded.
    """
    top, left, bottom, right = pads
    bottom, right = bottom + extra[0], right + extra[1]
    if not any((top, left, bottom, right)):
        return data
    shape = list(data.shape)
    H, W = shape[h_axis], shape[h_axis + 1]
    shape[h_axis] = H + top + bottom
    shape[h_axis + 1] = W + left + right
    fill = ir.const(value, data.dtype)

    def f(*idx):
        h, w = idx[h_axis] - top, idx[h_axis + 1] - left
        conds = []
        if top:
            conds.append(h >= 0)
        if bottom:
            conds.append(h < H)
        if left:
            conds.append(w >= 0)
        if right:
            conds.append(w < W)
        src = list(idx)
        src[h_axis], src[h_axis + 1] = h, w
        return te.if_then_else(ir.logical_and(*conds), data[tuple(src)], fill)
    return te.compute(tuple(shape), f, name=name)
